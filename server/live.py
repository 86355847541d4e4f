"""The live matches of one instance: the thin I/O shell around :mod:`server.match`.

For each match, one lock orders everything: take the match's next
:class:`~server.match.Step`, commit its effects to the store, and only then
adopt the new state, log its events and push them to the followers and the bus.
A failed commit leaves the match exactly as it was. Timers turn flag falls and
expired grace periods into steps of their own.

A commit can also fail in a way that stored it all the same (the database
committed, then the connection dropped before it said so). A move whose commit
failed leaves its match unsure of that ply; before anything else happens in the
match, the store is asked, and a move it holds is played as it was stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
from collections import Counter, OrderedDict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol, cast

import msgspec

from games import GAMES, Game
from server import storage
from server.bus import Publish
from server.clock import Clock
from server.config import ServerConfig
from server.connection import Connection, push_to
from server.errors import ErrorCode, ProtocolError
from server.ids import new_id
from server.inbox import Pending
from server.lobby import Lobby, match_topic
from server.match import (
    ABORTED,
    CHAT_KEPT,
    FINISHED,
    LIVE,
    OPEN,
    CreateRematch,
    Effect,
    EventLog,
    Finish,
    Match,
    SaveChat,
    SaveFinish,
    SaveMove,
    SaveSeat,
    SaveStart,
    Step,
)
from server.matchlock import MatchLock
from server.metrics import Metrics
from server.protocol import (
    AnyMatchEvent,
    BotStatus,
    BotStatusNote,
    Ended,
    EngineInfo,
    LobbyEntry,
    MatchCatchup,
    MatchEvent,
    MatchState,
    Moved,
    PlayerInfo,
    RequestId,
    as_reply,
    encode,
)
from server.storage import (
    ChatRecord,
    MatchFinish,
    MatchRecord,
    MoveRecord,
    SeatRecord,
    StorageError,
    Store,
    writes,
)
from server.storage.writes import Write

log = logging.getLogger(__name__)


class Intent(Protocol):
    """A :class:`Match` method with all bound but the match and the time: ``intent(match, now=t)``."""

    def __call__(self, match: Match, /, *, now: float) -> Step: ...


Resend = tuple[int, str]
"""A move request's ply and move text: what a resend of a move must repeat."""
Refuse = Callable[[Connection, Exception, RequestId], None]
"""Sends a requester the refusal for what made its request fail, with the request's id."""
TICK_RETRY_S = 1.0
EXPIRY_RETRY_S = 1.0
"""How long the end of a finished match's time in memory is put off while a request acts on it."""
ATTENDED_ROOMS = 3
"""How many of the finished matches a player follows (the last they took a seat in) count as rooms they
are still in: the room of a game just over (a rematch to offer, a word to say), not the hundreds a pair
could finish and keep following to make every other pair's room go first."""
EVICTION_SCAN = 16
"""How many of the least recently used finished matches are looked at for one to forget: a bound on the
work of making room, even when every one has a player still there (see :meth:`MatchHost._least_needed`)."""


def _is_here(live: LiveMatch, player_id: str) -> bool:
    """Whether ``player_id`` holds a seat in ``live`` and is there (a connection of theirs follows it)."""
    seat = live.match.seat_of(player_id)
    return seat is not None and live.match.connected[seat]


def player_info(player: storage.PlayerRecord) -> PlayerInfo:
    return PlayerInfo(id=player.id, name=player.name, bot=player.is_bot)


def storage_failure(error: StorageError) -> ProtocolError:
    """The protocol error for a write the store refused; nothing of it was stored."""
    if isinstance(error, storage.DuplicateMoveError):
        return ProtocolError(ErrorCode.STALE_PLY, str(error))
    if isinstance(error, storage.SeatTakenError):
        return ProtocolError(ErrorCode.SEAT_TAKEN, str(error))
    if isinstance(error, storage.NotFoundError):
        return ProtocolError(ErrorCode.NOT_FOUND, str(error))
    if isinstance(error, storage.ConflictError):
        return ProtocolError(ErrorCode.NOT_ALLOWED, str(error))
    return ProtocolError(ErrorCode.UNAVAILABLE, f"not stored, try again: {error}")


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
    unsure_ply: int | None = None
    """The ply of a move whose commit failed: the store may hold it all the same (its answer was lost)."""
    unsure_finish: bool = False
    """A result (resignation, draw, abort, flag fall) whose commit failed: the store may hold it anyway."""

    id: str = field(init=False)
    """The match's id, which no step changes: kept apart from ``match`` as a plain attribute, read a few
    times on every move's path."""

    topic: str = field(init=False, default="")
    """The bus topic of the match's events: named once, as the host takes the match in (see
    :meth:`MatchHost._hold`), not formatted again for every move."""

    def __post_init__(self) -> None:
        self.id = self.match.id

    def has_connection_of(self, player_id: str) -> bool:
        return any(watcher.player_id == player_id for watcher in self.watchers)

    @property
    def in_use(self) -> bool:
        """Whether a request holds the lock or waits for it (a waiter holds it once it is handed over).
        Forgetting the match then would leave that request acting on a copy no one follows (a rematch it
        starts would reach neither player)."""
        return self.lock.locked()


class MatchHost:
    """Every match this instance hosts, and the one path by which their state changes."""

    def __init__(
        self,
        config: ServerConfig,
        store: Store,
        lobby: Lobby,
        publish: Publish,
        metrics: Metrics,
        now: Callable[[], float],
        ws_url: Callable[[], str],
        refuse: Refuse,
        *,
        at_once: bool = True,
    ) -> None:
        self.config = config
        self.store = store
        self.lobby = lobby
        self.publish = publish
        """Hands a match's events to the bus (never waiting: see :meth:`EventBus.publish_nowait`)."""
        self.metrics = metrics
        self.now = now
        self.ws_url = ws_url
        self.refuse = refuse
        """Refuses a request decided in callbacks (:meth:`act_soon`) whose commit then failed."""
        self.at_once = at_once
        """Whether :meth:`act_soon` decides requests in callbacks when it can; without, every request
        takes :meth:`act`'s coroutine (the tests hold the two ways to the same answers)."""
        self.matches: dict[str, LiveMatch] = {}
        self._seated: dict[str, dict[str, None]] = {}
        """For each player, the ids of the matches in memory where they hold a seat, in the order they
        took them: a returning player's matches are found without a pass over every match."""
        self._finished: OrderedDict[str, LiveMatch] = OrderedDict()
        """The finished matches in memory, least recently used first: at most
        ``config.max_finished_in_memory`` of them (and any a request was acting on when room was made)."""
        self._creating: Counter[str] = Counter()
        """For each player, their matches being stored by :meth:`create`, not yet held."""
        self._tasks: set[asyncio.Task[None]] = set()
        metrics.match_counts = self.counts

    @functools.cached_property
    def _loop(self) -> asyncio.AbstractEventLoop:
        """The loop that runs the timers, looked up once: on Python 3.11 each lookup is a ``getpid``."""
        return asyncio.get_running_loop()

    # ----------------------------------------------------------------- finding matches

    async def get(self, match_id: str) -> LiveMatch:
        """The match ``match_id``: in memory, or a finished one loaded from the store to be shown."""
        live = self.matches.get(match_id)
        if live is not None:
            if live.expiry is not None:
                self._touch(live)
            return live
        record = await self.store.get_match(match_id)
        if match_id in self.matches:  # loaded meanwhile by another request
            return self.matches[match_id]
        if record is None:
            raise ProtocolError(ErrorCode.NOT_FOUND, f"no match {match_id!r}")
        if record.status in (OPEN, LIVE):
            raise ProtocolError(
                ErrorCode.NOT_FOUND, f"match {match_id!r} is hosted by instance {record.host!r}"
            )
        live = self._adopt(record, self._game(record))
        if live is None:
            raise ProtocolError(ErrorCode.NOT_FOUND, f"match {match_id!r} cannot be replayed")
        self._keep_finished(live)
        return live

    def open_count(self, player_id: str) -> int:
        """How many matches ``player_id`` has opened that wait for an opponent, those being stored
        included (requests on several connections at once must not all pass a cap on this)."""
        seated = self._seated.get(player_id, {})
        waiting = sum(self.matches[match_id].match.status == OPEN for match_id in seated)
        return waiting + self._creating.get(player_id, 0)

    def unfinished_of(self, player_id: str) -> list[str]:
        """Ids of the unfinished matches in which ``player_id`` holds a seat."""
        seated = self._seated.get(player_id, {})
        return [match_id for match_id in seated if not self.matches[match_id].match.is_over]

    def counts(self) -> dict[str, int]:
        statuses = [live.match.status for live in self.matches.values()]
        return {"open_matches": statuses.count(OPEN), "live_matches": statuses.count(LIVE)}

    # ----------------------------------------------------------------- restoring

    async def restore(self) -> int:
        """Rebuild every open and live match this instance hosted before it stopped; how many."""
        restored = 0
        for record in await self.store.unfinished_matches(self.config.instance_id, last_chat=CHAT_KEPT):
            game = self._game(record)
            if record.status == OPEN and len(record.seats) == 2:
                # Both seats were taken but the start was not stored: start it now.
                started_at = datetime.now(UTC)
                await self.store.start_match(record.id, started_at)
                record = msgspec.structs.replace(record, status=LIVE, started_at=started_at)
            live = self._adopt(record, game)
            if live is None:
                continue
            self._show_in_lobby(live)
            self._schedule(live)
            restored += 1
        return restored

    def _adopt(self, record: MatchRecord, game: Game | None) -> LiveMatch | None:
        if game is None:
            log.error("match %s is of unknown game %r: not restored", record.id, record.game)
            return None
        try:
            match = Match.restore(record, game, self.config.grace_s, self.now())
        except Exception:
            log.exception("match %s cannot be rebuilt from its stored moves: not restored", record.id)
            return None
        event_log = EventLog(new_id(), self.config.event_log_size, last_seq=match.seq)
        live = LiveMatch(match, event_log, record.created_at, record.rematch_of)
        self._hold(live)
        return live

    @staticmethod
    def _game(record: MatchRecord) -> Game | None:
        return GAMES.get(record.game)

    # ----------------------------------------------------------------- changing matches

    async def create(self, match: Match, creator: Connection, seat: int, request_id: RequestId) -> LiveMatch:
        """Store a new match with its creator seated (one write), then follow it from ``creator``."""
        assert creator.player is not None
        step = match.join(player_info(creator.player), seat, self.now())
        created_at = datetime.now(UTC)
        seat_record = SeatRecord(seat, creator.player.id, creator.player.name, creator.player.is_bot)
        self._creating[creator.player.id] += 1
        try:
            await self.store.create_match(self._new_record(match, OPEN, (seat_record,), created_at))
        except StorageError as error:
            raise storage_failure(error) from error
        finally:
            self._creating[creator.player.id] -= 1
            if not self._creating[creator.player.id]:
                del self._creating[creator.player.id]
        live = LiveMatch(step.match, EventLog(new_id(), self.config.event_log_size), created_at)
        live.log.append(step.events)
        self._hold(live)
        async with live.lock:
            self._follow(live, creator)
            creator.send(self._state(live, creator, request_id))
        self._show_in_lobby(live)
        return live

    async def join(
        self, live: LiveMatch, joiner: Connection, seat: int | None, request_id: RequestId
    ) -> None:
        assert joiner.player is not None
        async with live.lock:
            await self._tick(live)
            step = live.match.join(player_info(joiner.player), seat, self.now())
            watching = joiner in live.watchers
            live.watchers.discard(joiner)  # (its match.state holds the seated and started events)
            try:
                await self._apply(live, step)
            finally:
                if watching:
                    live.watchers.add(joiner)
            self._follow(live, joiner)
            joiner.send(self._state(live, joiner, request_id))

    async def watch(
        self,
        live: LiveMatch,
        watcher: Connection,
        log_id: str | None,
        since: int | None,
        request_id: RequestId,
    ) -> None:
        """Follow ``live``: reply with what was missed after ``since`` in log ``log_id``, else the state."""
        async with live.lock:
            await self._tick(live)
            if watcher.player_id is not None:  # (first, so that what it is sent shows it back)
                await self._apply(live, live.match.connect(watcher.player_id, self.now()))
            missed = live.log.since(log_id, since)
            if missed is None:
                watcher.send(self._state(live, watcher, request_id))
            else:
                match, now = live.match, self.now()
                catchup = MatchCatchup(
                    match_id=live.id,
                    log=live.log.id,
                    seq=match.seq,
                    events=cast("list[AnyMatchEvent]", missed),  # (the log holds only concrete events)
                    clocks_ms=match.clocks_ms(now),
                    clock_running=match.clock.running if match.clock and match.status == LIVE else None,
                    id=request_id,
                )
                watcher.send(catchup)
            self._follow(live, watcher)
            if live.bot_status is not None and live.match.status == OPEN:
                watcher.send(BotStatusNote(match_id=live.id, bot_status=live.bot_status))

    async def leave(self, live: LiveMatch, leaver: Connection) -> None:
        """Stop following; the player who opened a match nobody joined cancels it by leaving."""
        async with live.lock:
            player_id = leaver.player_id
            if (
                player_id is not None
                and live.match.status == OPEN
                and live.match.seat_of(player_id) is not None
            ):  # (ended first: its creator's going starts no grace period)
                await self._apply(live, live.match.abort(player_id, self.now()))
            await self._unfollow(live, leaver)

    async def disconnected(self, connection: Connection) -> None:
        """A connection closed: each match it followed may see a player go (and start a grace period)."""
        for match_id in list(connection.matches):
            live = self.matches.get(match_id)
            if live is None:
                continue
            async with live.lock:
                await self._unfollow(live, connection)

    async def note_bot_status(self, live: LiveMatch, note: BotStatus) -> None:
        """Keep ``note`` as the latest word on ``live``'s bot request; tell its followers and the lobby."""
        async with live.lock:
            await self._tick(live)
            match = live.match
            if match.options.bot is None:
                raise ProtocolError(ErrorCode.NOT_ALLOWED, f"match {live.id!r} asks for no bot")
            if match.status != OPEN:
                raise ProtocolError(
                    ErrorCode.NOT_ALLOWED, f"match {live.id!r} is {match.status}: it waits for no bot"
                )
            live.bot_status = note
            push_to(live.watchers, encode(BotStatusNote(match_id=live.id, bot_status=note)))
            self._show_in_lobby(live)

    def act_soon(
        self,
        match_id: str,
        intent: Intent,
        requester: Connection,
        request_id: RequestId,
        resend: Resend | None = None,
    ) -> Pending | Coroutine[object, object, Step] | None:
        """:meth:`act` in callbacks, when it can be: ``None`` once the request is answered, or a
        :class:`~server.inbox.Pending` done once it is; else :meth:`act`'s coroutine, to run.

        A request whose match is in memory, free, sure of its store and not due for a decision by time
        is decided at once, and answered from its commit's callback: no task, and no coroutine waiting
        for the commit. Most moves are, and a task with its coroutines was near a tenth of a move's
        instructions (docs/performance.md). A refusal is raised here, or, after a commit that failed, sent
        with ``refuse``. Both ways hold the lock as :meth:`act` does, and answer as it does
        (``tests/test_server_paths.py`` holds the two to the same replies and rows).
        """
        live = self.matches.get(match_id)
        now = self.now()
        if (
            not self.at_once
            or live is None
            or live.unsure_ply is not None
            or live.unsure_finish
            or (live.timer is not None and now >= live.timer_due)
            or not live.lock.try_acquire()
        ):
            return self.act(match_id, intent, requester, request_id, resend)
        try:
            if live.expiry is not None:  # (over: a rematch offer or a word after the game)
                self._touch(live)
            step = intent(live.match, now=now)
            if step.duplicate:
                requester.send(self._state(live, requester, request_id))
            elif writes := self._writes(live, step):
                answered = Pending()
                committed = functools.partial(self._committed, live, step, requester, request_id, answered)
                self.store.commit_then(committed, *writes)
                return answered  # (the lock held until then)
            else:
                self._enact(live, step, requester, request_id)
        except BaseException:
            live.lock.release()
            raise
        live.lock.release()
        return None

    def _committed(
        self,
        live: LiveMatch,
        step: Step,
        requester: Connection,
        request_id: RequestId,
        answered: Pending,
        error: StorageError | None,
    ) -> None:
        """The commit of a step decided in callbacks is over, and the store says so at once: enact the
        step, which answers; or, should the commit have failed, do in a task what :meth:`act` does then."""
        if error is not None:
            task = asyncio.Task(
                self._commit_failed(live, step, requester, request_id, answered, error),
                loop=self._loop,
                name=f"plyarena-failed-commit-{live.id}",
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        try:
            self._enact(live, step, requester, request_id)
        except Exception as failure:
            self.refuse(requester, failure, request_id)
        finally:
            live.lock.release()
            answered.done()

    async def _commit_failed(
        self,
        live: LiveMatch,
        step: Step,
        requester: Connection,
        request_id: RequestId,
        answered: Pending,
        error: StorageError,
    ) -> None:
        """As :meth:`act` after a failed commit: enact the step if it is found stored after all, else
        settle what the store holds and refuse. The lock is held, and let go here."""
        try:
            try:
                await self._write_failed(live, step.effects, error)
            except ProtocolError as refusal:
                await self._settle_after(live, refusal)
                raise
            self._enact(live, step, requester, request_id)
        except Exception as failure:
            self.refuse(requester, failure, request_id)
        finally:
            live.lock.release()
            answered.done()

    async def act(
        self,
        match_id: str,
        intent: Intent,
        requester: Connection,
        request_id: RequestId,
        resend: Resend | None = None,
    ) -> Step:
        """Apply a player's intent in match ``match_id``; the requester gets the first event as the reply,
        with ``request_id``.

        ``resend`` is a move's ply and text: if it repeats a move whose commit answer was lost, and which
        is found stored now, the reply is that move's ``moved``, the answer the first request never got.
        """
        live = self.matches.get(match_id) or await self.get(match_id)
        if live.expiry is not None:  # (over: a rematch offer or a word after the game)
            self._touch(live)
        # The lock taken and let go by hand: ``async with`` would make two more coroutines a request
        # (the lock's ``__aenter__`` and ``__aexit__``), and keep one more object alive while the
        # request waits for its commit; and a free lock is taken with no coroutine at all.
        if not live.lock.try_acquire():
            await live.lock.acquire()
        try:
            if live.unsure_ply is not None or live.unsure_finish:  # (rare: no coroutine made otherwise)
                answered = await self._settle_unsure_move(live, requester, request_id, resend)
                if answered is not None:
                    return answered
            # Time decides nothing before the match's timer is due (see ``timer_due``): most requests
            # need not ask the match and its clock.
            if (live.timer is None or self.now() >= live.timer_due) and (
                decided := self._decided_by_time(live)
            ) is not None:  # (rare, as above)
                await self._apply(live, decided)
            step = intent(live.match, now=self.now())
            if step.duplicate:
                requester.send(self._state(live, requester, request_id))
                return step
            try:
                await self._apply(live, step, requester, request_id)
            except ProtocolError as refusal:
                await self._settle_after(live, refusal)
                raise
            return step
        finally:
            live.lock.release()

    async def _settle_after(self, live: LiveMatch, refusal: ProtocolError) -> None:
        """After a request's commit was refused for a reason other than the store being unavailable,
        with a ply left unsure: the store holds a move this match has not played, so play it now."""
        if refusal.code != ErrorCode.UNAVAILABLE and live.unsure_ply is not None:
            with contextlib.suppress(ProtocolError):
                await self._settle_unsure_move(live)

    # ----------------------------------------------------------------- the commit path

    async def _tick(self, live: LiveMatch) -> None:
        """Let the store and time decide first (a move stored although its commit failed, a flag that
        fell, a grace that ran out) so intents see the truth."""
        if live.unsure_ply is not None or live.unsure_finish:
            await self._settle_unsure_move(live)
        if (decided := self._decided_by_time(live)) is not None:
            await self._apply(live, decided)

    def _decided_by_time(self, live: LiveMatch) -> Step | None:
        """The step of what time alone decides now (a flag fall, a grace run out), if anything: almost
        always nothing."""
        step = live.match.tick(self.now())
        return None if step.match is live.match else step

    async def _settle_unsure_move(
        self,
        live: LiveMatch,
        requester: Connection | None = None,
        request_id: RequestId = None,
        resend: Resend | None = None,
    ) -> Step | None:
        """After a move's commit failed, ask the store whether it holds the move; if so, play it.

        The move is played as stored (its think time and clocks), and everyone following hears of it:
        acknowledged to the store, it must be acknowledged to the players, or the match could never
        pass that ply (every other move for it is refused as a duplicate). Returns the step when
        ``resend`` (from ``requester``) repeats that very move and the step's event answered it.
        Raises ``unavailable`` (and stays unsure) when the store cannot say.
        """
        if live.unsure_finish:
            await self._settle_unsure_finish(live)
        ply = live.unsure_ply
        if ply is None:
            return None
        try:
            record = await self.store.get_match(live.id)
        except StorageError as error:
            raise storage_failure(error) from error
        live.unsure_ply = None
        stored = next((move for move in record.moves if move.ply == ply), None) if record else None
        if stored is None or ply != live.match.ply:
            return None  # the failed commit stored nothing
        try:
            step = _replay_stored_move(live.match, stored, self.now())
        except ProtocolError as error:
            log.error("match %s: the stored move %d %r cannot be played: %s", live.id, ply, stored.notation,
                      error.message)  # fmt: skip
            return None
        player = live.match.seats[stored.seat]
        answers = (
            requester is not None
            and resend is not None
            and player is not None
            and requester.player_id == player.id
            and resend[0] == ply
            and resend[1].strip().lower() == stored.notation.lower()
        )
        if answers:
            await self._apply(live, step, requester, request_id)
            return step
        await self._apply(live, step)
        return None

    async def _settle_unsure_finish(self, live: LiveMatch) -> None:
        """After a result's commit failed, ask the store whether it holds the result; if so, end the match
        as stored. Otherwise the match would stay live here while the store refuses every later result
        (and a retried resignation) as one for a finished match."""
        try:
            record = await self.store.get_match(live.id)
        except StorageError as error:
            raise storage_failure(error) from error
        live.unsure_finish = False
        if record is None or record.status not in (FINISHED, ABORTED) or live.match.is_over:
            return
        stored = Finish(record.status, record.winner, record.reason or record.status)
        rematch_id = live.match.rematch_agreed_id  # (committed with the result, if its step started it)
        try:
            rematch = rematch_id is not None and await self.store.get_match(rematch_id) is not None
        except StorageError as error:
            live.unsure_finish = True
            raise storage_failure(error) from error
        await self._apply(live, live.match.end_as_stored(stored, self.now(), rematch=rematch))

    async def _apply(
        self,
        live: LiveMatch,
        step: Step,
        requester: Connection | None = None,
        request_id: RequestId = None,
    ) -> None:
        """Commit ``step``'s effects, then adopt its state and send its events. Hold ``live.lock``."""
        write = self._commit(live, step)
        if write is not None:
            try:
                await write
            except StorageError as error:
                await self._write_failed(live, step.effects, error)
        self._enact(live, step, requester, request_id)

    def _commit(self, live: LiveMatch, step: Step) -> asyncio.Future[None] | None:
        """Start committing ``step``'s effects (see :meth:`_writes`); ``None`` with nothing to commit."""
        writes = self._writes(live, step)
        return self.store.commit(*writes) if writes else None

    def _writes(self, live: LiveMatch, step: Step) -> tuple[Write, ...]:
        """What the store writes for ``step``'s effects, to commit in one transaction (a step is stored
        whole, or not at all); none if there is nothing to commit."""
        effects = step.effects
        if not effects or step.stored:
            return ()
        at = datetime.now(UTC)
        if len(effects) == 1:
            return (self._rows(live, effects[0], at),)
        return tuple(self._rows(live, effect, at) for effect in effects)

    def _enact(
        self,
        live: LiveMatch,
        step: Step,
        requester: Connection | None,
        request_id: RequestId,
    ) -> None:
        """Make ``step``'s match the match, log and send its events, and follow up on what changed: once
        its effects are committed. Hold ``live.lock``."""
        if not step.events and not step.effects:
            live.match = step.match
            return
        before = live.match
        after = live.match = step.match
        live.log.append(step.events)
        self._send(live, step.events, requester, request_id)
        for event in step.events:
            if isinstance(event, Moved):
                self.metrics.moves_total += 1
        for effect in step.effects:
            if isinstance(effect, CreateRematch):
                self._start_rematch(live, effect.match)
        seated = before.seats != after.seats
        if seated:
            self._note_seats(live)
        status_changed = before.status != after.status
        # The lobby shows a match's status and seats, and whether an open match's creator is here.
        if seated or status_changed or before.connected != after.connected:
            self._show_in_lobby(live)
        if status_changed and after.is_over and not before.is_over:
            self.metrics.matches_finished_total += 1
            self._keep_finished(live)
        self._schedule(live)

    def _rows(self, live: LiveMatch, effect: Effect, at: datetime) -> Write:
        """What the store writes for ``effect``."""
        match_id = live.id
        if isinstance(effect, SaveMove):
            engine = effect.engine
            move = MoveRecord(
                match_id=match_id,
                ply=effect.ply,
                seat=effect.seat,
                notation=effect.notation,
                think_ms=effect.think_ms,
                played_at=at,
                clocks_ms=effect.clocks_ms,
                engine=None
                if engine is None
                else storage.EngineInfo(
                    score=engine.score, depth=engine.depth, nodes=engine.nodes, pv=tuple(engine.pv)
                ),
            )
            return writes.new_move(move, _finish(effect.finish, at))
        if isinstance(effect, SaveSeat):
            player = effect.player
            return writes.new_seat(match_id, SeatRecord(effect.seat, player.id, player.name, player.bot), at)
        if isinstance(effect, SaveStart):
            return writes.match_start(match_id, at)
        if isinstance(effect, SaveFinish):
            finish = _finish(effect.finish, at)
            assert finish is not None
            return writes.match_finish(match_id, finish)
        if isinstance(effect, SaveChat):
            line = effect.line
            return writes.new_chat(ChatRecord(match_id, line.seq, line.seat, line.name, line.text, at))
        assert isinstance(effect, CreateRematch)
        rematch = effect.match
        seats = tuple(
            SeatRecord(seat, player.id, player.name, player.bot)
            for seat, player in enumerate(rematch.seats)
            if player is not None
        )
        return writes.new_match(self._new_record(rematch, LIVE, seats, at, rematch_of=match_id), at)

    def _new_record(
        self,
        match: Match,
        status: str,
        seats: tuple[SeatRecord, ...],
        at: datetime,
        *,
        rematch_of: str | None = None,
    ) -> MatchRecord:
        """The stored row of a match made here: open for its creator, or live from the start (a rematch)."""
        return MatchRecord(
            id=match.id,
            game=match.game.name,
            options=msgspec.to_builtins(match.options),
            status=status,
            host=self.config.instance_id,
            created_at=at,
            started_at=at if status == LIVE else None,
            seats=seats,
            rematch_of=rematch_of,
        )

    async def _write_failed(self, live: LiveMatch, effects: tuple[Effect, ...], error: StorageError) -> None:
        """Raise the refusal for a step whose write failed, first noting what the failure leaves unsure; or
        return, if the write is found stored after all (a move whose commit answer was lost)."""
        for effect in effects:
            if isinstance(effect, SaveMove):
                live.unsure_ply = effect.ply  # the commit may have gone through all the same
                # A duplicate means a move is stored for this ply: which one decides.
                if isinstance(error, storage.DuplicateMoveError) and await self._stored_by_a_lost_commit(
                    live.id, effect
                ):
                    live.unsure_ply = None  # this very move, and the rest of its step: committed
                    return
            elif isinstance(effect, SaveFinish):
                live.unsure_finish = True  # the commit may have gone through all the same
        raise storage_failure(error) from error

    async def _stored_by_a_lost_commit(self, match_id: str, move: SaveMove) -> bool:
        """Whether ``move`` is already stored, exactly: a batch can commit although its answer is lost
        (the database went away during COMMIT), and the store, retrying its writes one by one, then
        finds this one stored. (A move refused ``unavailable`` and sent again never gets here: the
        match is settled with the store first, see :meth:`_settle_unsure_move`.)"""
        record = await self.store.get_match(match_id)
        stored = next((m for m in record.moves if m.ply == move.ply), None) if record else None
        return stored is not None and (stored.seat, stored.notation) == (move.seat, move.notation)

    def _send(
        self,
        live: LiveMatch,
        events: tuple[MatchEvent, ...],
        requester: Connection | None,
        request_id: RequestId,
    ) -> None:
        topic = live.topic
        for index, event in enumerate(events):
            data = encode(event)
            for watcher in live.watchers:  # (not a set of the others: two sets made for every move)
                if watcher is not requester:
                    watcher.push(data)
            self.publish(topic, data)
            if requester is not None:
                if index == 0:
                    requester.push(as_reply(data, request_id))
                elif requester in live.watchers:
                    requester.push(data)

    def _start_rematch(self, old: LiveMatch, rematch: Match) -> None:
        live = LiveMatch(rematch, EventLog(new_id(), self.config.event_log_size), datetime.now(UTC), old.id)
        self._hold(live)
        for connection in list(old.watchers):
            if connection.player_id is not None and rematch.seat_of(connection.player_id) is not None:
                # The players go on to the rematch: the finished match, whose ``rematch.started`` they
                # have just had, sends them nothing more, and neither needs to leave it.
                self._stop_following(old, connection)
                self._follow(live, connection)
                connection.send(self._state(live, connection, None))
        self._show_in_lobby(live)
        self._schedule(live)

    def _hold(self, live: LiveMatch) -> None:
        """Keep ``live`` in memory, found by its id and by its players."""
        live.topic = match_topic(self.config.instance_id, live.id)
        self.matches[live.id] = live
        self._note_seats(live)

    def _note_seats(self, live: LiveMatch) -> None:
        for player in live.match.seats:
            if player is not None:
                self._seated.setdefault(player.id, {})[live.id] = None

    # ----------------------------------------------------------------- followers

    def _follow(self, live: LiveMatch, connection: Connection) -> None:
        live.watchers.add(connection)
        connection.matches.add(live.id)

    def _stop_following(self, live: LiveMatch, connection: Connection) -> None:
        live.watchers.discard(connection)
        connection.matches.discard(live.id)

    async def _unfollow(self, live: LiveMatch, connection: Connection) -> None:
        self._stop_following(live, connection)
        player_id = connection.player_id
        if player_id is not None and not live.has_connection_of(player_id):
            await self._apply(live, live.match.disconnect(player_id, self.now()))

    def _state(self, live: LiveMatch, viewer: Connection, request_id: RequestId) -> MatchState:
        state = live.match.state(log=live.log.id, now=self.now(), viewer=viewer.player_id)
        return msgspec.structs.replace(state, id=request_id)

    # ----------------------------------------------------------------- lobby, timers, gauges

    def _show_in_lobby(self, live: LiveMatch) -> None:
        match = live.match
        if match.options.visibility != "public" or match.status not in (OPEN, LIVE) or match.creator_away:
            self.lobby.hide(live.id)
            return
        self.lobby.show(
            LobbyEntry(
                match_id=live.id,
                game=match.game.name,
                status=match.status,
                time_control=match.options.time_control,
                seats=list(match.seats),
                bot=match.options.bot,
                host=self.config.instance_id,
                url=self.ws_url(),
                created_at=live.created_at.isoformat(),
                bot_status=live.bot_status if match.status == OPEN else None,
            )
        )

    def is_open_here(self, match_id: str) -> bool:
        live = self.matches.get(match_id)
        return live is not None and live.match.status == OPEN and live.match.options.visibility == "public"

    def _schedule(self, live: LiveMatch) -> None:
        """Have the match's one timer fire by its next deadline (flag fall or grace expiry), if any.

        A timer already due no later than that deadline is kept: firing early only finds nothing to
        decide yet and arms it again. Most moves push the deadline later, so most keep their timer
        rather than cancel one and make another.
        """
        deadline = live.match.deadline()
        if live.timer is not None:
            if deadline is not None and live.timer_due <= deadline:
                return
            live.timer.cancel()
            live.timer = None
        if deadline is not None:
            live.timer_due = deadline
            live.timer = self._loop.call_later(max(0.0, deadline - self.now()), self._fire, live)

    async def _on_deadline(self, live: LiveMatch) -> None:
        live.timer = None
        try:
            async with live.lock:
                await self._tick(live)
                self._schedule(live)
        except ProtocolError as error:
            log.warning("match %s: deciding on time failed (%s); retrying", live.id, error.message)
            # (``timer_due`` stays the deadline that passed: until it is decided, every request asks)
            live.timer = self._loop.call_later(TICK_RETRY_S, self._fire, live)
        except Exception:
            log.exception("match %s: deciding on time failed", live.id)

    def _keep_finished(self, live: LiveMatch) -> None:
        """Hold a match that is over (ended here, or loaded to be shown) for ``finished_ttl_s``, and within
        ``max_finished_in_memory``: beyond it, the least needed of the others is forgotten (see
        :meth:`_least_needed`), never ``live`` itself, which its caller is about to use."""
        self._expire_later(live)
        self._finished[live.id] = live
        self._finished.move_to_end(live.id)
        while len(self._finished) > self.config.max_finished_in_memory:
            victim = self._least_needed(live)
            if victim is None:
                break  # all being acted on: the next match to be kept makes room again
            self._forget(victim)
            self.metrics.finished_matches_evicted_total += 1
        self.metrics.finished_matches = len(self._finished)

    def _touch(self, live: LiveMatch) -> None:
        """A request for a finished match: in use, so the last to be forgotten to make room."""
        if self._finished.get(live.id) is live:
            self._finished.move_to_end(live.id)

    def _least_needed(self, keep: LiveMatch) -> LiveMatch | None:
        """The finished match to forget to make room, ``keep`` aside: of the :data:`EVICTION_SCAN` least
        recently used, the first that no request acts on and no player is still in (see
        :meth:`_attended`); else the first that no request acts on; else none.

        Each one passed over counts as used (it moves to the end), so the next look starts further on:
        a post-game room that its players are still in (a rematch to offer, a word to say) outlasts a
        flood of matches loaded for watchers, and a request's match is never taken from under it.
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
                if other is not None and other.match.is_over and _is_here(other, player.id)
            )
            if any(other is live for other in itertools.islice(rooms, ATTENDED_ROOMS)):
                return True
        return False

    def _expire_later(self, live: LiveMatch) -> None:
        if live.expiry is None:
            live.expiry = self._loop.call_later(self.config.finished_ttl_s, self._expire, live)

    def _expire(self, live: LiveMatch) -> None:
        """A finished match's time in memory is up: forget it, or a moment later if a request acts on it."""
        if live.in_use:
            live.expiry = self._loop.call_later(EXPIRY_RETRY_S, self._expire, live)
            return
        self._forget(live)

    def _forget(self, live: LiveMatch) -> None:
        """Forget a finished match (its time is up, or its room is needed); it stays in the store for
        replays, and is loaded again when asked for."""
        for handle in (live.expiry, live.timer):
            if handle is not None:
                handle.cancel()  # (a forgotten match's timer would hold it in memory until it fired)
        live.expiry = live.timer = None
        if self._finished.get(live.id) is live:
            del self._finished[live.id]
            self.metrics.finished_matches = len(self._finished)
        if self.matches.get(live.id) is live:
            del self.matches[live.id]
            for player in live.match.seats:
                if player is None:
                    continue
                seated = self._seated.get(player.id)
                if seated is not None:
                    seated.pop(live.id, None)
                    if not seated:
                        del self._seated[player.id]
        for connection in live.watchers:
            connection.matches.discard(live.id)
        live.watchers.clear()

    def _fire(self, live: LiveMatch) -> None:
        task = asyncio.create_task(self._on_deadline(live), name=f"plyarena-deadline-{live.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Disarm every timer and wait for decisions already under way."""
        for live in self.matches.values():
            for handle in (live.timer, live.expiry):
                if handle is not None:
                    handle.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _replay_stored_move(match: Match, stored: MoveRecord, now: float) -> Step:
    """The move ``stored`` at ``match``'s ply, played as it was stored: with its think time and the clocks
    stored with it (the time since is nobody's), and nothing of it left to commit: its step committed
    whole, with the rematch it starts if one was agreed. Raises :class:`ProtocolError` if the rules refuse
    it here."""
    player = match.seats[stored.seat]
    if player is None:
        raise ProtocolError(ErrorCode.NOT_A_PLAYER, f"seat {stored.seat} of match {match.id} is empty")
    engine = (
        None
        if stored.engine is None
        else EngineInfo(
            score=stored.engine.score,
            depth=stored.engine.depth,
            nodes=stored.engine.nodes,
            pv=list(stored.engine.pv),
        )
    )
    # Played without a clock, so that time that passed since the commit cannot flag the mover.
    unclocked = msgspec.structs.replace(match, clock=None)
    step = unclocked.move(player.id, stored.ply, stored.notation, engine, now)
    after, clocks = step.match, None
    if match.clock is not None:
        remaining = stored.clocks_ms or match.clock.remaining(now)
        clock = Clock(match.clock.control, remaining)
        after = msgspec.structs.replace(
            after, clock=clock if after.is_over else clock.start(after.position.turn, now)
        )
        clocks = remaining
    events = tuple(
        msgspec.structs.replace(event, clocks_ms=clocks, think_ms=stored.think_ms)
        if isinstance(event, Moved)
        else msgspec.structs.replace(event, clocks_ms=clocks)
        if isinstance(event, Ended)
        else event
        for event in step.events
    )
    return Step(after, events, step.effects, stored=True)


def _finish(finish: Finish | None, at: datetime) -> MatchFinish | None:
    if finish is None:
        return None
    return MatchFinish(status=finish.status, winner=finish.winner, reason=finish.reason, finished_at=at)
