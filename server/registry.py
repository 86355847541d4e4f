"""The matches an instance holds in memory: found by id and by player, and the finished ones kept a while.

A finished match stays for ``finished_ttl_s`` (a rematch to offer, a word to say, a replay to watch),
within ``max_finished_in_memory``; past that the least needed goes first, never one a request is
acting on. A forgotten match stays in the store and is loaded again when asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from server.config import ServerConfig
from server.connection import Connection
from server.event_log import EventLog
from server.followers import SpectatorTally
from server.match import LIVE, OPEN, Match
from server.matchlock import MatchLock
from server.metrics import Metrics
from server.protocol import BotStatus
from server.recovery import Unsure

EXPIRY_RETRY_S = 1.0
"""How long the end of a finished match's time in memory is put off while a request acts on it."""
ATTENDED_ROOMS = 3
"""How many of the finished matches a player follows (the last they took a seat in) count as rooms they
are still in: the room of a game just over (a rematch to offer, a word to say), not the hundreds a pair
could finish and keep following to make every other pair's room go first."""
EVICTION_SCAN = 16
"""How many of the least recently used finished matches are looked at for one to forget: a bound on the
work of making room, even when every one has a player still there (see
:meth:`MatchRegistry._least_needed`)."""


@dataclass(eq=False)
class LiveMatch:
    """A match in memory with what serving it needs: its lock, event log, followers and timers."""

    match: Match
    log: EventLog
    created_at: datetime
    rematch_of: str | None = None
    lock: MatchLock = field(default_factory=MatchLock)
    watchers: set[Connection] = field(default_factory=set)
    timer: asyncio.TimerHandle | None = None
    timer_due: float = 0.0
    """When ``timer`` fires, on the host's clock: at or before the match's next deadline, so time decides
    nothing before then (a deadline that passed undecided stays here until it is decided)."""
    expiry: asyncio.TimerHandle | None = None
    bot_status: BotStatus | None = None
    """The latest note on the match's bot request: advisory, so kept in memory only."""
    spectators: SpectatorTally = field(default_factory=SpectatorTally)
    """How many watch, as last told to the followers (:mod:`server.followers`)."""
    unsure: Unsure = field(default_factory=Unsure)
    """What a failed commit left this match unsure of (see :mod:`server.recovery`)."""
    id: str = field(init=False)
    """The match's id, which no step changes."""
    topic: str = ""
    """The bus topic of the match's events, named once as the registry takes the match in."""
    opened_from: str | None = None
    """The client address (its allowance key) that opened the match, while it is a public one waiting for
    an opponent and that address is capped; else ``None``."""

    def __post_init__(self) -> None:
        self.id = self.match.id

    def has_connection_of(self, player_id: str) -> bool:
        return any(watcher.player_id == player_id for watcher in self.watchers)

    def is_here(self, player_id: str) -> bool:
        """Whether ``player_id`` holds a seat here and is there (a connection of theirs follows it)."""
        seat = self.match.seat_of(player_id)
        return seat is not None and self.match.connected[seat]

    @property
    def in_use(self) -> bool:
        """Whether a request holds the lock or waits for it: forgetting the match then would leave that
        request acting on a copy no one follows (a rematch it starts would reach neither player)."""
        return self.lock.locked()


class MatchRegistry:
    """Every match in memory, by id and by player, and the cache of finished ones."""

    def __init__(self, config: ServerConfig, metrics: Metrics, topic: Callable[[str], str]) -> None:
        self.config = config
        self.metrics = metrics
        self.topic = topic
        """Names the bus topic of a match's events."""
        self.matches: dict[str, LiveMatch] = {}
        self._seated: dict[str, dict[str, None]] = {}
        """For each player, the ids of the matches in memory where they hold a seat, in the order they
        took them: a returning player's matches are found without a pass over every match."""
        self._finished: OrderedDict[str, LiveMatch] = OrderedDict()
        """The finished matches in memory, least recently used first."""
        self.creating: Counter[str] = Counter()
        """For each player, their matches being stored, not yet held ..."""
        self.creating_public: Counter[str] = Counter()
        """... the public ones among them ..."""
        self.creating_from: Counter[str] = Counter()
        """... and the public ones by the client address (its allowance key) that asked for them."""
        self._opened_from: dict[str, dict[str, None]] = {}
        """For each capped client address, the ids of public matches it opened that may still wait for an
        opponent (pruned as they are counted)."""

    def hold(self, live: LiveMatch) -> None:
        """Keep ``live`` in memory, found by its id and by its players."""
        live.topic = self.topic(live.id)
        self.matches[live.id] = live
        self.note_seats(live)
        if live.opened_from is not None:
            self._opened_from.setdefault(live.opened_from, {})[live.id] = None

    @contextlib.contextmanager
    def creating_match(self, player_id: str, public: bool, address_key: str | None) -> Iterator[None]:
        """Count a match as being stored (see :meth:`open_count`) for as long as the block runs."""
        counters = [(self.creating, player_id)]
        if public:
            counters.append((self.creating_public, player_id))
            if address_key is not None:
                counters.append((self.creating_from, address_key))
        for counter, key in counters:
            counter[key] += 1
        try:
            yield
        finally:
            for counter, key in counters:
                counter[key] -= 1
                if not counter[key]:
                    del counter[key]

    def note_seats(self, live: LiveMatch) -> None:
        for player in live.match.seats:
            if player is not None:
                self._seated.setdefault(player.id, {})[live.id] = None

    def open_count(self, player_id: str) -> int:
        """How many matches ``player_id`` has opened that wait for an opponent, those being stored
        included (requests on several connections at once must not all pass a cap on this)."""
        seated = self._seated.get(player_id, {})
        waiting = sum(self.matches[match_id].match.status == OPEN for match_id in seated)
        return waiting + self.creating.get(player_id, 0)

    def open_public_count(self, player_id: str) -> int:
        """How many of those are public (listed in the lobby)."""
        seated = self._seated.get(player_id, {})
        waiting = sum(self._is_open_public(self.matches[match_id]) for match_id in seated)
        return waiting + self.creating_public.get(player_id, 0)

    def open_public_from(self, address_key: str) -> int:
        """How many public matches waiting for an opponent the client address ``address_key`` opened, by
        all its players, those being stored included."""
        opened = self._opened_from.get(address_key, {})
        for match_id in list(opened):
            if not self._is_open_public(self.matches.get(match_id)):
                del opened[match_id]
        if not opened:
            self._opened_from.pop(address_key, None)
        return len(opened) + self.creating_from.get(address_key, 0)

    @staticmethod
    def _is_open_public(live: LiveMatch | None) -> bool:
        return live is not None and live.match.status == OPEN and live.match.options.visibility == "public"

    def unfinished_of(self, player_id: str) -> list[str]:
        """Ids of the unfinished matches in which ``player_id`` holds a seat."""
        seated = self._seated.get(player_id, {})
        return [match_id for match_id in seated if not self.matches[match_id].match.is_over]

    def counts(self) -> dict[str, int]:
        statuses = [live.match.status for live in self.matches.values()]
        return {"open_matches": statuses.count(OPEN), "live_matches": statuses.count(LIVE)}

    def is_open_here(self, match_id: str) -> bool:
        return self._is_open_public(self.matches.get(match_id))

    # ----------------------------------------------------------------- the finished ones

    def keep_finished(self, live: LiveMatch) -> None:
        """Hold a match that is over (ended here, or loaded to be shown) for ``finished_ttl_s``, and within
        ``max_finished_in_memory``: beyond it, the least needed of the others is forgotten (see
        :meth:`_least_needed`), never ``live`` itself, which its caller is about to use."""
        if live.expiry is None:
            live.expiry = asyncio.get_running_loop().call_later(self.config.finished_ttl_s, self.expire, live)
        self._finished[live.id] = live
        self._finished.move_to_end(live.id)
        while len(self._finished) > self.config.max_finished_in_memory:
            victim = self._least_needed(live)
            if victim is None:
                break  # all being acted on: the next match to be kept makes room again
            self.forget(victim)
            self.metrics.finished_matches_evicted_total += 1
        self.metrics.finished_matches = len(self._finished)

    def touch(self, live: LiveMatch) -> None:
        """A request for a finished match: in use, so the last to be forgotten to make room."""
        if live.expiry is not None and self._finished.get(live.id) is live:
            self._finished.move_to_end(live.id)

    def _least_needed(self, keep: LiveMatch) -> LiveMatch | None:
        """The finished match to forget to make room, ``keep`` aside: of the :data:`EVICTION_SCAN` least
        recently used, the first that no request acts on and no player is still in (see
        :meth:`_attended`); else the first that no request acts on; else none.

        Each one passed over counts as used (it moves to the end), so the next look starts further on:
        a post-game room that its players are still in outlasts a flood of matches loaded for watchers,
        and a request's match is never taken from under it.
        """
        fallback = None
        for live in list(itertools.islice(self._finished.values(), EVICTION_SCAN)):
            if live is keep:
                continue
            in_use = live.in_use
            if not in_use and not self._attended(live):
                return live
            self._finished.move_to_end(live.id)
            if fallback is None and not in_use:
                fallback = live
        return fallback

    def _attended(self, live: LiveMatch) -> bool:
        """Whether a player is still in ``live``'s post-game room: of the finished matches they follow,
        it is one of the :data:`ATTENDED_ROOMS` they took a seat in last. (Only the ones they follow:
        finished matches of theirs that others load to watch must not push their own room out.)"""
        for player, here in zip(live.match.seats, live.match.connected, strict=True):
            if player is None or not here:
                continue
            rooms = (
                other
                for other in map(self.matches.get, reversed(self._seated.get(player.id, {})))
                if other is not None and other.match.is_over and other.is_here(player.id)
            )
            if any(other is live for other in itertools.islice(rooms, ATTENDED_ROOMS)):
                return True
        return False

    def expire(self, live: LiveMatch) -> None:
        """A finished match's time in memory is up: forget it, or a moment later if a request acts on it."""
        if live.in_use:
            live.expiry = asyncio.get_running_loop().call_later(EXPIRY_RETRY_S, self.expire, live)
            return
        self.forget(live)

    def forget(self, live: LiveMatch) -> None:
        """Forget a finished match (its time is up, or its room is needed); it stays in the store."""
        for handle in (live.expiry, live.timer):
            if handle is not None:
                handle.cancel()  # (a forgotten match's timer would hold it in memory until it fired)
        live.expiry = live.timer = None
        if self._finished.get(live.id) is live:
            del self._finished[live.id]
            self.metrics.finished_matches = len(self._finished)
        if self.matches.get(live.id) is live:
            del self.matches[live.id]
            self._unseat(live)
        for connection in live.watchers:
            connection.matches.discard(live.id)
        live.watchers.clear()

    def _unseat(self, live: LiveMatch) -> None:
        for player in live.match.seats:
            if player is None:
                continue
            seated = self._seated.get(player.id)
            if seated is not None:
                seated.pop(live.id, None)
                if not seated:
                    del self._seated[player.id]
