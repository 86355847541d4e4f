"""Following a fleet's matches to their hosts: when a bot's server dies or hands a match to another instance.

Instances that share a database host each match on one of them. A bot's server answers a request for a
match hosted elsewhere with ``hosted_elsewhere`` and the host's URL, and the bot hands the match to a
:class:`MatchFinder` (:attr:`bots.client.BotPlayer.elsewhere`), which gives it to a bot of the same player
(the same token) at that URL. When a bot's server is out of reach for ``patience_s`` (killed, or cut off;
another instance takes its matches over once its lease lapses), the finder takes every match that bot was
playing and asks the other instances it knows of, one after another every ``every_s``, until one hosts it
(it answers with the match's state) or names a host within reach. Only the wire protocol is used: the
instances a fleet knows of are those its lobby feeds name (on the broker, each instance's status carries
its URL), and asking is a ``match.watch`` by the bot that is to play the match there.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Protocol

from bots.client import BotPlayer, BotSpec
from bots.session import MatchSession

log = logging.getLogger(__name__)

OUT_OF_REACH_S = 3.0
"""How long a URL at which a bot's server was out of reach is not asked again, unless a bot is welcomed
there meanwhile (a link to it that kept failing is closed once it has nothing to play): then it is asked
again, in turn, in case it came back."""


class Seats(Protocol):
    """What the finder asks of its fleet."""

    def bots(self) -> list[BotPlayer]:
        """Every bot connection of the fleet."""

    def bot_at(self, url: str, spec: BotSpec, token: str | None) -> BotPlayer:
        """A connection of the bot ``spec`` as the player of ``token`` at ``url``, with room for a game."""

    def instance_urls(self) -> set[str]:
        """The WebSocket URLs of the instances the fleet knows of and believes online."""

    async def drop_if_idle(self, player: BotPlayer) -> None:
        """Close ``player`` if it plays nothing."""


@dataclass(slots=True)
class Adrift:
    """A match whose host the finder looks for, and when to ask next."""

    session: MatchSession
    next_at: float


@dataclass(slots=True)
class Search:
    """Who plays a match the finder looked for, and how many instances it asked."""

    spec: BotSpec
    token: str | None
    """The player who sits in it, whose bot plays it on wherever it is hosted (the bot that asked a
    server of another database became a new player there, so its token is not taken)."""
    asked: int = 0


class MatchFinder:
    """See the module docstring: :meth:`elsewhere` is each bot's callback, :meth:`run` the fleet's task."""

    def __init__(self, seats: Seats, *, patience_s: float, every_s: float) -> None:
        self.seats = seats
        self.patience_s = patience_s
        self.every_s = every_s
        self.adrift: dict[str, Adrift] = {}
        """Matches whose host is looked for, by id."""
        self._searches: dict[str, Search] = {}
        """Each match looked for since its bot began playing it."""
        self._out_of_reach: dict[str, float] = {}
        """URLs at which a bot's server was out of reach, and when that was found."""
        self._foreign: set[str] = set()
        """URLs of servers that did not know a match the fleet plays: another arena on the same broker."""
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Every ``every_s``: take the matches of bots whose server is out of reach, and ask for hosts."""
        while True:
            try:
                await self.look()
            except Exception:  # (a bug here must not stop the fleet's games: the next round tries again)
                log.exception("looking for the hosts of matches failed")
            await asyncio.sleep(self.every_s)

    async def look(self) -> None:
        """One round of :meth:`run`."""
        now = time.monotonic()
        for player in self.seats.bots():
            down_since = player.link.down_since
            if player.link.connected.is_set():
                self._out_of_reach.pop(player.url, None)
            elif down_since is not None and now - down_since >= self.patience_s:
                self._out_of_reach[player.url] = now
                for match_id, session in list(player.sessions.items()):
                    if (session.log is not None or session.taken_over) and not session.over:
                        player.hand_over(match_id)
                        log.info("%s: %s is out of reach; looking for the host of %s elsewhere",
                                 player.spec.name, player.url, match_id)  # fmt: skip
                        self._drift(session, player, at=now)
                await self.seats.drop_if_idle(player)
        followed = set(self.adrift).union(*(player.sessions for player in self.seats.bots()))
        for match_id in [match_id for match_id in self._searches if match_id not in followed]:
            del self._searches[match_id]
        for adrift in [adrift for adrift in self.adrift.values() if adrift.next_at <= now]:
            self._ask(adrift, now)

    def elsewhere(self, player: BotPlayer, session: MatchSession, url: str | None, found: bool) -> None:
        """``player``'s server says another instance hosts ``session``'s match, at ``url`` if it knows:
        play it on there, or look for its host if that is out of reach. Not ``found``: that server shares
        no database with the match, and is not asked again."""
        now = time.monotonic()
        self.adrift.pop(session.match_id, None)
        if not found:
            self._foreign.add(player.url)
            self._spawn_drop(player)
        if url is not None and url != player.url and not self._unreachable(url, now):
            search = self._searches.get(session.match_id)
            token = player.link.token if search is None else search.token
            self.seats.bot_at(url, player.spec, token).take_over(session)
        else:
            self._drift(session, player, at=now + self.every_s)

    def give(self, player: BotPlayer, match_id: str) -> bool:
        """Hand ``match_id`` to ``player`` if it is adrift (``player``'s server says it hosts it, in a
        welcome); whether it was."""
        adrift = self.adrift.pop(match_id, None)
        if adrift is None:
            return False
        player.take_over(adrift.session)
        return True

    def close(self) -> None:
        """Give back the places of the matches still adrift (the fleet stops)."""
        for task in self._tasks:
            task.cancel()
        for adrift in self.adrift.values():
            for ticket in (adrift.session.ticket, adrift.session.rematch_ticket):
                if ticket is not None:
                    ticket.release()
        self.adrift.clear()

    def _drift(self, session: MatchSession, player: BotPlayer, *, at: float) -> None:
        self._searches.setdefault(session.match_id, Search(player.spec, player.link.token))
        self.adrift[session.match_id] = Adrift(session, at)

    def _ask(self, adrift: Adrift, now: float) -> None:
        """Give the match to a bot at the next instance within reach, which asks it for the match (and
        plays it if it is hosted there; if not, :meth:`elsewhere` hears where it is)."""
        candidates = sorted(
            url
            for url in self.seats.instance_urls()
            if url not in self._foreign and not self._unreachable(url, now)
        )
        if not candidates:
            adrift.next_at = now + self.every_s
            return
        match_id = adrift.session.match_id
        search = self._searches[match_id]
        url = candidates[search.asked % len(candidates)]
        search.asked += 1
        del self.adrift[match_id]
        # (should that instance be out of reach too, its bot's matches come back here after the patience)
        self.seats.bot_at(url, search.spec, search.token).take_over(adrift.session)

    def _spawn_drop(self, player: BotPlayer) -> None:
        task = asyncio.get_running_loop().create_task(self.seats.drop_if_idle(player))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _unreachable(self, url: str, now: float) -> bool:
        found = self._out_of_reach.get(url)
        return found is not None and now - found < OUT_OF_REACH_S
