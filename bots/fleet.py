"""The fleet: watches lobbies and seats bots, sharing one search pool, up to a number of games.

A fleet follows one or more lobby feeds (:mod:`bots.lobby_feeds`) and seats a
bot (a :class:`bots.client.BotPlayer`, one per server, game and level, each
playing as many matches as it is given):

- **at once** in an open match whose lobby entry asks for a bot of a level (and
  optionally a style) the fleet offers;
- **after** ``idle_wait_s`` in a public match where a person has waited that
  long with nobody joining, at the fleet's ``public_level`` (or the offered
  level nearest to it);
- never in more than ``max_games`` matches at once. When full, the fleet does
  not drop a request: it logs it, marks its published offer ``full``, notes
  ``queued`` on the request's lobby entry (a ``bot.status`` note, so the player
  who asked sees why nobody comes, and their place in line), and seats the
  waiting requests as games end: round-robin across the players who asked, each
  one's oldest first (:mod:`bots.queue`), so no one's flood delays the rest.

Its offer (:mod:`bots.offer`) is published retained on the broker and/or
through an ``announce`` callback, so servers can list the bots at ``/api/bots``.

With a state file (:mod:`bots.fleet_state`) the fleet keeps each bot's token,
and on start brings every bot identity it keeps back as the same player: the
server's ``welcome`` lists the matches that bot still plays, and it plays on
(see :meth:`Fleet._bring_back`), over as many connections as those games need
(:meth:`Fleet._resumes`). Resumed games count against ``max_games``.

Where instances share a database, each match is hosted by one of them: the fleet
plays a match on at whichever instance hosts it now, as the same player, when a
server answers ``hosted_elsewhere`` or a bot's server is out of reach for
``host_patience_s`` (see :mod:`bots.hosts`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from bots import wire
from bots.capacity import Capacity, Ticket
from bots.client import HOSTED_ELSEWHERE, BotPlayer, BotSpec, Thinker
from bots.fleet_config import FleetConfig, new_fleet_id
from bots.fleet_state import FleetState, FleetStateError
from bots.hosts import MatchFinder
from bots.levels import level as level_row
from bots.link import Link, RequestFailed
from bots.lobby_feeds import MqttLobby, ServerLobby
from bots.offer import build_offer, encode_offer, offer_topic, parse_levels
from bots.pool import SearchPool
from bots.queue import WaitingLine

__all__ = ["GAMES_PER_CONNECTION", "Fleet", "FleetConfig", "new_fleet_id", "parse_levels"]

log = logging.getLogger(__name__)

GAMES_PER_CONNECTION = 4
"""Games one bot connection plays at once; servers limit requests per connection (20/s by default)."""

Announce = Callable[[str, bytes], Awaitable[None]]
"""Publish ``payload`` retained on ``topic`` (a bus the servers read)."""


@dataclass(slots=True)
class _Known:
    """A lobby entry the fleet has seen, and where to reach its match."""

    entry: wire.LobbyEntry
    url: str
    source: str
    idle_timer: asyncio.TimerHandle | None = None


class Fleet:
    """See the module docstring. ``await fleet.run()`` until cancelled, then ``await fleet.close()``.

    ``state``, if given, keeps each bot's token, and its bots are brought back when the fleet runs.
    ``engines`` are the outside engines it runs (:mod:`bots.engine`), by the name the level table gives
    them: they think for the levels they play, the pool for the rest.
    """

    def __init__(
        self,
        pool: SearchPool,
        config: FleetConfig,
        *,
        announce: Announce | None = None,
        state: FleetState | None = None,
        engines: Mapping[str, Thinker] | None = None,
    ) -> None:
        self.engines = dict(engines or {})
        for game, levels in config.levels.items():
            if not levels:
                raise ValueError(f"fleet offers no level of {game!r}")
            for number in levels:
                engine = level_row(game, number).engine
                if engine is not None and engine.name not in self.engines:
                    raise ValueError(f"level {number} of {game} needs the outside engine {engine.name!r}")
        if config.max_games < 1:
            raise ValueError(f"max_games must be >= 1, got {config.max_games}")
        self.pool = pool
        self.config = config
        self.state = state
        self.capacity = Capacity(config.max_games, on_release=self._released, on_claim=self._claimed)
        self.players: dict[tuple[str, BotSpec], list[BotPlayer]] = {}
        """The bots by server URL and spec: one connection per :data:`GAMES_PER_CONNECTION` games."""
        self.seated_at: dict[str, float] = {}
        """Seconds from first seeing each match that asks for a bot to being seated in it, for the record."""
        self._feeds: list[ServerLobby | MqttLobby] = []
        self._announcers: list[Announce] = [announce] if announce is not None else []
        self._known: dict[str, _Known] = {}
        self._first_seen: dict[str, float] = {}
        self._joining: set[str] = set()
        self._seated: set[str] = set()
        self._waiting: WaitingLine[BotSpec] = WaitingLine()
        """Requests that came while full, by the player who asked: seated as games end."""
        self._was_full = False
        self._tasks: set[asyncio.Task[object]] = set()
        self._feed_tasks: list[asyncio.Task[None]] = []
        self._run_task: asyncio.Task[None] | None = None
        self._restoring: dict[BotPlayer, asyncio.Event] = {}
        """Bots brought back from the state file, set once their first welcome is handled."""
        self.finder = MatchFinder(self, patience_s=config.host_patience_s, every_s=config.follow_every_s)
        """Follows matches to their hosts (:mod:`bots.hosts`)."""

    # ------------------------------------------------------------------ wiring

    def follow_server(self, url: str) -> None:
        """Follow the live lobby feed of the server at ``url`` (``ws://host:port/ws``)."""
        feed = ServerLobby(
            url, self, name=self.config.fleet_id, fleet_key=self.config.fleet_key, backoff=self.config.backoff
        )
        self._feeds.append(feed)

    def follow_mqtt(self, mqtt_url: str) -> None:
        """Follow the lobby topics of every server sharing the broker at ``mqtt_url``; offer bots there."""
        feed = MqttLobby(
            mqtt_url, self, identifier=self.config.fleet_id, offer_topic=offer_topic(self.config.fleet_id),
            backoff=self.config.backoff,
        )  # fmt: skip
        self._feeds.append(feed)
        self._announcers.append(lambda _topic, payload: feed.announce(payload))

    async def run(self) -> None:
        """Follow every feed until :meth:`close` (or until cancelled)."""
        if not self._feeds:
            raise ValueError("a fleet needs a server or an MQTT broker to follow")
        self._restore()
        self._feed_tasks = [
            asyncio.create_task(feed.run(), name=f"lobby feed {feed.url}") for feed in self._feeds
        ]
        self._feed_tasks.append(asyncio.create_task(self.finder.run(), name="following matches to hosts"))
        await self._announce()
        try:
            await asyncio.gather(*self._feed_tasks)
        finally:
            for task in self._feed_tasks:
                task.cancel()

    def start(self) -> None:
        """Run in the background; :meth:`close` stops it."""
        if self._run_task is None:
            self._run_task = asyncio.create_task(self.run(), name=f"fleet {self.config.fleet_id}")

    async def run_until(self, stop: asyncio.Event) -> None:
        """Wait until ``stop`` is set; raise at once if the fleet fails instead (a bad URL, say)."""
        self.start()
        assert self._run_task is not None
        stopping = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait([stopping, self._run_task], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if self._run_task.done() and not self._run_task.cancelled():
            self._run_task.result()

    async def close(self) -> None:
        """Withdraw the offer, stop every feed and bot (games in progress are left to their grace period)."""
        for announce in self._announcers:
            try:
                await announce(offer_topic(self.config.fleet_id), b"")
            except Exception as error:
                log.info("could not withdraw the offer: %s", error)
        for known in self._known.values():
            if known.idle_timer is not None:
                known.idle_timer.cancel()
        tasks = [*self._tasks, *self._feed_tasks, *([self._run_task] if self._run_task else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(player.close() for player in self.bots()), return_exceptions=True)
        self.finder.close()
        await asyncio.gather(*(feed.close() for feed in self._feeds if isinstance(feed, ServerLobby)))

    async def __aenter__(self) -> Fleet:
        self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def playing(self) -> int:
        return self.capacity.in_use

    # ------------------------------------------------------------------ lobby sink

    def lobby_snapshot(self, source: str, entries: list[tuple[wire.LobbyEntry, str]]) -> None:
        current = {entry.match_id for entry, _ in entries}
        gone = [match_id for match_id, known in self._known.items() if known.source == source]
        for match_id in gone:
            if match_id not in current:
                self.lobby_gone(source, match_id)
        for entry, url in entries:
            self.lobby_entry(source, entry, url)

    def lobby_entry(self, source: str, entry: wire.LobbyEntry, url: str) -> None:
        known = self._known.get(entry.match_id)
        if known is None:
            known = self._known[entry.match_id] = _Known(entry, url, source)
            self._first_seen[entry.match_id] = time.monotonic()
        else:
            if known.entry.bot_status is not None and entry.bot_status is None:
                self._waiting.forget_note(entry.match_id)  # the server forgot it (it restarted): note again
            known.entry, known.url, known.source = entry, url, source
        self._consider(known)
        self._note_places()

    def lobby_gone(self, source: str, match_id: str) -> None:
        known = self._known.pop(match_id, None)
        if known is not None and known.idle_timer is not None:
            known.idle_timer.cancel()
        self._first_seen.pop(match_id, None)
        if self._waiting.remove(match_id) is not None:
            self._note_places()  # the ones behind it move up

    # ------------------------------------------------------------------ deciding

    def _consider(self, known: _Known) -> None:
        entry = known.entry
        match_id = entry.match_id
        if match_id in self._joining or match_id in self._seated:
            return
        if entry.status != "open" or not entry.open_seats or entry.game not in self.config.levels:
            self._stop_waiting(known)
            return
        if entry.bot is not None:
            spec = self._requested(entry.game, entry.bot)
            if spec is None:
                style = f" ({entry.bot.style})" if entry.bot.style else ""
                log.info("match %s asks for a %s bot of level %d%s, which this fleet does not offer",
                         match_id, entry.game, entry.bot.level, style)  # fmt: skip
                return
            self._seat(known, spec)
        elif self.config.idle_wait_s is not None and _a_person_waits(entry) and known.idle_timer is None:
            known.idle_timer = asyncio.get_running_loop().call_later(
                self.config.idle_wait_s, self._idle_too_long, match_id
            )

    def _stop_waiting(self, known: _Known) -> None:
        if known.idle_timer is not None:
            known.idle_timer.cancel()
            known.idle_timer = None
        self._waiting.remove(known.entry.match_id)

    def _idle_too_long(self, match_id: str) -> None:
        known = self._known.get(match_id)
        if known is None:
            return
        known.idle_timer = None
        entry = known.entry
        if entry.status == "open" and entry.open_seats and _a_person_waits(entry) and entry.bot is None:
            self._seat(known, self._public_bot(entry.game))

    def _requested(self, game: str, request: wire.BotRequest) -> BotSpec | None:
        if request.level not in self.config.levels[game]:
            return None
        spec = BotSpec.of(game, request.level)
        return spec if request.style in (None, spec.style) else None

    def _public_bot(self, game: str) -> BotSpec:
        offered = self.config.levels[game]
        nearest = min(offered, key=lambda number: (abs(number - self.config.public_level), number))
        return BotSpec.of(game, nearest)

    # ------------------------------------------------------------------ seating

    def _seat(self, known: _Known, spec: BotSpec) -> None:
        match_id = known.entry.match_id
        ticket = self.capacity.claim(match_id)
        if ticket is None:
            if self._waiting.add(match_id, _requester(known.entry), spec):
                log.warning("fleet full (%d of %d games): match %s waits for a %s", self.capacity.in_use,
                            self.config.max_games, match_id, spec.name)  # fmt: skip
                self._note_places()
            return
        self._waiting.remove(match_id)
        self._joining.add(match_id)
        self._spawn(self._join(known, spec, ticket))

    async def _join(self, known: _Known, spec: BotSpec, ticket: Ticket) -> None:
        match_id = known.entry.match_id
        player = self.bot_at(known.url, spec)
        moved_to: str | None = None
        try:
            await player.join(match_id, ticket=ticket)
        except (RequestFailed, ConnectionError, TimeoutError) as error:
            log.info("could not seat %s in %s: %s", spec.name, match_id, error)
            ticket.release()
            if isinstance(error, RequestFailed) and error.error.code == HOSTED_ELSEWHERE:
                moved_to = error.error.url  # the lobby entry was stale: another instance took the match over
            elif not isinstance(error, RequestFailed):
                # An unreachable server (a stale lobby entry, say).
                await self.drop_if_idle(player)
        else:
            self._seated.add(match_id)
            waited = time.monotonic() - self._first_seen.get(match_id, time.monotonic())
            self.seated_at[match_id] = waited
            log.info("seated %s in %s at %s (%.0f ms after the lobby showed it)", spec.name, match_id,
                     known.url, waited * 1000)  # fmt: skip
        finally:
            self._joining.discard(match_id)
        if moved_to is not None and moved_to != known.url and self._known.get(match_id) is known:
            known.url = moved_to
            self._consider(known)

    def _note_places(self) -> None:
        """Tell each waiting bot request its place in line where that changed (games ended, requests
        ahead of it went) or its server forgot the note (a restart)."""
        for match_id, spec, place in self._waiting.places_to_note():
            known = self._known.get(match_id)
            if known is not None and known.entry.bot is not None:
                self._spawn(self._note_queued(known, spec, place))

    async def _note_queued(self, known: _Known, spec: BotSpec, place: int) -> None:
        """Say on the lobby entry that its bot request waits for a free game; a note is advisory, so a
        refusal (the match started or went meanwhile) or an unreachable server is only logged."""
        match_id = known.entry.match_id
        reason = (
            f"all {self.config.max_games} games of fleet {self.config.fleet_id} are busy; "
            f"you are number {place} in line for {spec.name}"
        )[: wire.MAX_BOT_STATUS_LENGTH]
        try:
            link = await self._link_to(known.url, spec)
            await link.request(wire.SetBotStatus(match_id=match_id, state="queued", reason=reason))
        except (RequestFailed, ConnectionError, TimeoutError) as error:
            log.info("could not note match %s as queued: %s", match_id, error)

    async def _link_to(self, url: str, spec: BotSpec) -> Link:
        """A welcomed connection to the server at ``url``: the lobby feed there, else a bot's connection."""
        for feed in self._feeds:
            if isinstance(feed, ServerLobby) and feed.url == url and feed.link.connected.is_set():
                return feed.link
        player = self.bot_at(url, spec)
        try:
            await player.link.wait_connected()
        except (ConnectionError, TimeoutError):
            await self.drop_if_idle(player)
            raise
        return player.link

    async def drop_if_idle(self, player: BotPlayer) -> None:
        """Close a bot that plays nothing and was opened for nothing else: one that cannot reach its server
        (it would knock on its door), or one brought back with no game to resume."""
        if not player.sessions:
            shards = self.players.get((player.url, player.spec), [])
            if player in shards:
                shards.remove(player)
            await player.close()

    def bot_at(self, url: str, spec: BotSpec, token: str | None = None) -> BotPlayer:
        """The bot to seat: a connection of ``spec`` at ``url`` with room, or a new one; the player of
        ``token`` if given (a match followed from another instance sharing the database goes on with the
        player who sits in it).

        A server limits each connection's requests per second, so one connection
        plays at most :data:`GAMES_PER_CONNECTION` games; more connections of the
        same bot share its token, so it stays one player.
        """
        shards = self.players.setdefault((url, spec), [])
        for player in shards:
            if player.playing < GAMES_PER_CONNECTION and token in (None, player.link.token):
                return player
        if token is None:
            token = next((player.link.token for player in shards if player.link.token), None)
        if token is None and self.state is not None:
            token = self.state.token(url, spec.name)
        player = BotPlayer(
            url, spec, self._thinker(spec), manners=self.config.manners, capacity=self.capacity,
            backoff=self.config.backoff, token=token, fleet_key=self.config.fleet_key,
            welcomed=self._welcomed, elsewhere=self.finder.elsewhere,
        )  # fmt: skip
        player.resume = lambda match_id: self._resumes(player, match_id)
        shards.append(player)
        player.start()
        return player

    def _thinker(self, spec: BotSpec) -> Thinker:
        """Who thinks for ``spec``: the outside engine that plays its level, else the search pool."""
        engine = level_row(spec.game, spec.level).engine
        return self.pool if engine is None else self.engines[engine.name]

    def _resumes(self, player: BotPlayer, match_id: str) -> bool:
        """Whether ``player`` takes up ``match_id``, which its welcome lists and it does not follow.

        The server lists every unfinished match of the player, whichever connection of the bot plays it,
        so after a reconnection a match another connection plays is left to that one. Otherwise a
        connection takes up what it has room for (:data:`GAMES_PER_CONNECTION`), and :meth:`_welcomed`
        gives the rest to other connections of the same bot: when a fleet comes back from its state file
        with a bot that plays more games than one connection may, or when a reconnection finds a game no
        connection follows (one whose join reply was lost).
        """
        if self.finder.give(player, match_id):
            return False  # its host was looked for: it is here, and this connection plays it on
        if any(match_id in bot.sessions for bot in self.bots() if bot is not player):
            return False
        return match_id in player.sessions or player.playing < GAMES_PER_CONNECTION

    def _plays(self, match_id: str) -> bool:
        """Whether a bot of the fleet plays ``match_id`` (or the fleet looks for its host)."""
        return match_id in self.finder.adrift or any(match_id in bot.sessions for bot in self.bots())

    def _hand_on(self, player: BotPlayer) -> None:
        """Give each match ``player``'s welcome lists that no connection of its bot plays (it had no room,
        see :meth:`_resumes`) to a connection with room, opening one if need be.

        A connection already welcomed takes it up at once; a new one (or one still connecting) takes up
        what it has room for when its own welcome lists them, and hands on the rest in turn.
        """
        welcome = player.link.welcome
        shards = self.players.get((player.url, player.spec), [])
        if welcome is None or player not in shards:
            return
        for match_id in welcome.matches:
            if self._plays(match_id):
                continue
            shard = self.bot_at(player.url, player.spec, player.link.token)
            if not shard.link.connected.is_set():
                return
            shard.play_on(match_id)

    def bots(self) -> list[BotPlayer]:
        """Every bot connection of the fleet."""
        return [player for shards in self.players.values() for player in shards]

    def instance_urls(self) -> set[str]:
        """The instances the fleet knows of and believes online: those the broker's statuses say are
        online, the servers it follows, and where its bots and the lobby entries it saw are."""
        urls = {bot.url for bot in self.bots()} | {known.url for known in self._known.values()}
        online: set[str] = set()
        offline: set[str] = set()
        for feed in self._feeds:
            if isinstance(feed, MqttLobby):
                online |= feed.instance_urls(online=True)
                offline |= feed.instance_urls(online=False)
            else:
                urls.add(feed.url)
        return (urls | online) - (offline - online)

    # ------------------------------------------------------------------ the state file

    def _restore(self) -> None:
        """Bring back every bot identity the state file keeps (see :meth:`_bring_back`)."""
        if self.state is None:
            return
        for url, name, _token in self.state.identities():
            spec = BotSpec.named(name)
            if spec is None:
                log.warning("%s keeps a bot %r at %s that no level is called now; leaving it",
                            self.state.path, name, url)  # fmt: skip
                continue
            self._spawn(self._bring_back(url, spec))

    async def _bring_back(self, url: str, spec: BotSpec) -> None:
        """Connect a bot from the state file as the player it was, and keep it only if it has games.

        Its connection says hello with the kept token; the welcome lists the matches that player still
        plays there, and the bot takes them up (each takes a place in :attr:`capacity`): up to
        :data:`GAMES_PER_CONNECTION` on this connection, the rest on more connections of the same bot
        with the same token, each opened by the welcome of the one before (:meth:`_resumes`,
        :meth:`_hand_on`). The first connection was opened only to ask, so it is closed again when it
        has nothing to play (its games ended while the fleet was away; or the server refused the token, a
        different database say, and it became a new player, whose token the file now keeps), or when
        its server has not answered within ``restore_patience_s``; the token stays in the file, and the
        next time the fleet seats that bot there it comes back as the same player.
        """
        player = self.bot_at(url, spec)
        welcomed = self._restoring[player] = asyncio.Event()
        try:
            async with asyncio.timeout(self.config.restore_patience_s):
                await welcomed.wait()
        except TimeoutError:
            log.warning("%s: no welcome from %s within %.0f s; giving up (its games there, if any, end when "
                        "their grace runs out)", spec.name, url, self.config.restore_patience_s)  # fmt: skip
        finally:
            del self._restoring[player]
        if player.sessions and player.link.welcome is not None:
            log.info("%s resumes %d game(s) at %s, %d on its first connection", spec.name,
                     len(player.link.welcome.matches), url, len(player.sessions))  # fmt: skip
        await self.drop_if_idle(player)

    def _welcomed(self, player: BotPlayer) -> None:
        """A bot was welcomed: keep its token (new after a refused one) in the state file, if any, and give
        the games it listed but had no room for to other connections (:meth:`_hand_on`)."""
        if self.state is not None and player.link.token is not None:
            try:
                self.state.remember(player.url, player.spec.name, player.link.token)
            except FleetStateError as error:
                log.warning("%s; playing on, and trying again at the next welcome", error)
        self._hand_on(player)
        restoring = self._restoring.get(player)
        if restoring is not None:
            restoring.set()

    def _claimed(self, _ticket: Ticket) -> None:
        """A game takes a place (seated, or resumed): the offer may now say full."""
        self._changed()

    def _released(self, ticket: Ticket) -> None:
        """A game ended (or a seat was refused): seat the waiting request whose turn it is, if any."""
        self._seated.discard(ticket.label)
        while not self.capacity.full and (served := self._waiting.pop()) is not None:
            match_id, spec = served
            known = self._known.get(match_id)
            if known is not None and known.entry.status == "open" and known.entry.open_seats:
                self._seat(known, spec)
        self._note_places()
        self._changed()

    # ------------------------------------------------------------------ the offer

    def _changed(self) -> None:
        """Publish the offer again when the fleet fills up or has room again."""
        if self.capacity.full != self._was_full:
            self._was_full = self.capacity.full
            if self._was_full:
                log.warning("fleet full: %d games in progress", self.capacity.in_use)
            self._spawn(self._announce())

    async def _announce(self) -> None:
        config = self.config
        offer = build_offer(config.fleet_id, config.levels, config.max_games, self.capacity.in_use)
        payload = encode_offer(offer)
        for announce in self._announcers:
            try:
                await announce(offer_topic(self.config.fleet_id), payload)
            except Exception:
                log.exception("could not publish the fleet's offer")

    def _spawn(self, coroutine: Awaitable[object]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


def _requester(entry: wire.LobbyEntry) -> str:
    """Who asked for the bot an entry waits for: the person seated (the match itself if none is)."""
    person = next((player for player in entry.seats if player is not None and not player.bot), None)
    return entry.match_id if person is None else person.id


def _a_person_waits(entry: wire.LobbyEntry) -> bool:
    """One seat taken by a person, one free: someone is waiting for an opponent."""
    seated = [player for player in entry.seats if player is not None]
    return len(seated) == 1 and not seated[0].bot and len(entry.open_seats) == 1
