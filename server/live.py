"""The live matches of one instance: the thin I/O shell around :mod:`server.match`.

For each match, one lock orders everything: take the match's next
:class:`~server.steps.Step`, commit its effects to the store, and only then
adopt the new state, log its events and push them to the followers and the bus.
A failed commit leaves the match exactly as it was. Timers turn flag falls and
expired grace periods into steps of their own; a commit whose answer was lost is
settled with the store before anything else happens in its match
(:mod:`server.recovery`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

import msgspec

from games import GAMES, Game
from server import recovery, stalls, storage
from server.bus import Publish
from server.config import ServerConfig
from server.connection import Connection, push_to
from server.effect_rows import match_record, rows_for
from server.errors import ErrorCode, ProtocolError, storage_failure
from server.event_log import EventLog
from server.followers import SpectatorCounter, catchup_for, state_for
from server.ids import new_id
from server.lobby import Lobby, lobby_entry, match_topic
from server.match import CHAT_KEPT, LIVE, OPEN, Match
from server.metrics import Metrics
from server.protocol import (
    BotStatus,
    BotStatusNote,
    MatchEvent,
    MatchState,
    Moved,
    PlayerInfo,
    RequestId,
    as_reply,
    encode,
)
from server.recovery import Resend
from server.registry import LiveMatch, MatchRegistry
from server.steps import CreateRematch, Step
from server.storage import MatchRecord, SeatRecord, StorageError, Store
from server.storage.writes import Write
from server.stored_match import restore_match

__all__ = ["Intent", "LiveMatch", "MatchHost", "Resend", "player_info"]

log = logging.getLogger(__name__)


class Intent(Protocol):
    """A :class:`Match` method with all bound but the match and the time: ``intent(match, now=t)``."""

    def __call__(self, match: Match, /, *, now: float) -> Step: ...


TICK_RETRY_S = 1.0


def player_info(player: storage.PlayerRecord) -> PlayerInfo:
    return PlayerInfo(id=player.id, name=player.name, bot=player.is_bot)


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
    ) -> None:
        self.config = config
        self.store = store
        self.lobby = lobby
        self.publish = publish
        """Hands a match's events to the bus (never waiting: see :meth:`EventBus.publish_nowait`)."""
        self.metrics = metrics
        self.now = now
        self.ws_url = ws_url
        self.registry = MatchRegistry(
            config, metrics, lambda match_id: match_topic(self.config.instance_id, match_id)
        )
        self._tasks: set[asyncio.Task[None]] = set()
        self.on_finished: Callable[[Match], None] = lambda match: None
        """Told of each match that ends here, once its result is committed (the server rates it)."""
        self.spectators = SpectatorCounter(now)
        metrics.match_counts = self.registry.counts

    @functools.cached_property
    def _loop(self) -> asyncio.AbstractEventLoop:
        """The loop that runs the timers, looked up once: on Python 3.11 each lookup is a ``getpid``."""
        return asyncio.get_running_loop()

    @property
    def matches(self) -> dict[str, LiveMatch]:
        """The matches in memory, by id."""
        return self.registry.matches

    # ----------------------------------------------------------------- finding matches

    async def get(self, match_id: str) -> LiveMatch:
        """The match ``match_id``: in memory, or a finished one loaded from the store to be shown."""
        live = self.matches.get(match_id)
        if live is not None:
            self.registry.touch(live)
            return live
        record = await self.store.get_match(match_id)
        if match_id in self.matches:  # loaded meanwhile by another request
            return self.matches[match_id]
        if record is None:
            raise ProtocolError(ErrorCode.NOT_FOUND, f"no match {match_id!r}")
        if record.status in (OPEN, LIVE):
            url = self.lobby.instance_urls.get(record.host)
            where = f"instance {record.host!r}" + ("" if url is None else f" at {url}")
            raise ProtocolError(
                ErrorCode.HOSTED_ELSEWHERE, f"match {match_id!r} is hosted by {where}: ask there", url=url
            )
        live = self._adopt(record, GAMES.get(record.game))
        if live is None:
            raise ProtocolError(ErrorCode.NOT_FOUND, f"match {match_id!r} cannot be replayed")
        self.registry.keep_finished(live)
        return live

    def open_count(self, player_id: str) -> int:
        """How many matches ``player_id`` has opened that wait for an opponent (see
        :meth:`MatchRegistry.open_count`)."""
        return self.registry.open_count(player_id)

    def open_public_count(self, player_id: str) -> int:
        return self.registry.open_public_count(player_id)

    def open_public_from(self, address_key: str) -> int:
        return self.registry.open_public_from(address_key)

    def unfinished_of(self, player_id: str) -> list[str]:
        """Ids of the unfinished matches in which ``player_id`` holds a seat."""
        return self.registry.unfinished_of(player_id)

    def counts(self) -> dict[str, int]:
        return self.registry.counts()

    def is_open_here(self, match_id: str) -> bool:
        return self.registry.is_open_here(match_id)

    # ----------------------------------------------------------------- restoring

    async def restore(self, only: set[str] | None = None) -> int:
        """Rebuild every open and live match this instance hosted before it stopped, or of them those in
        ``only`` (matches just taken over from an instance whose lease lapsed); how many."""
        restored = 0
        for record in await self.store.unfinished_matches(
            self.config.instance_id, last_chat=CHAT_KEPT, only=only
        ):
            if record.id in self.matches:
                continue
            game = GAMES.get(record.game)
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
            match = restore_match(record, game, self.config.grace_s, self.now())
        except Exception:
            log.exception("match %s cannot be rebuilt from its stored moves: not restored", record.id)
            return None
        event_log = EventLog(new_id(), self.config.event_log_size, last_seq=match.seq)
        live = LiveMatch(match, event_log, record.created_at, record.rematch_of)
        self.registry.hold(live)
        return live

    # ----------------------------------------------------------------- requests

    async def create(
        self,
        match: Match,
        creator: Connection,
        seat: int,
        request_id: RequestId,
        address_key: str | None = None,
    ) -> LiveMatch:
        """Store a new match with its creator seated (one write), then follow it from ``creator``;
        ``address_key``: the capped client address it counts against while public and open."""
        assert creator.player is not None
        step = match.join(player_info(creator.player), seat, self.now())
        created_at = datetime.now(UTC)
        seat_record = SeatRecord(seat, creator.player.id, creator.player.name, creator.player.is_bot)
        public = match.options.visibility == "public"
        with self.registry.creating_match(creator.player.id, public, address_key):
            try:
                await self.store.create_match(
                    match_record(match, OPEN, (seat_record,), created_at, self.config.instance_id)
                )
            except StorageError as error:
                raise storage_failure(error) from error
        live = LiveMatch(step.match, EventLog(new_id(), self.config.event_log_size), created_at)
        live.opened_from = address_key if public else None
        live.log.append(step.events)
        self.registry.hold(live)
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
            await self._catch_up(live)
            step = live.match.join(player_info(joiner.player), seat, self.now())
            watching = joiner in live.watchers
            live.watchers.discard(joiner)  # (its match.state holds the seated and started events)
            try:
                await self.apply(live, step)
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
            await self._catch_up(live)
            if watcher.player_id is not None:  # (first, so that what it is sent shows it back)
                await self.apply(live, live.match.connect(watcher.player_id, self.now()))
            missed = live.log.since(log_id, since)
            if missed is None:
                watcher.send(self._state(live, watcher, request_id))
            else:
                watcher.send(catchup_for(live, missed, self.now(), request_id))
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
                await self.apply(live, live.match.abort(player_id, self.now()))
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
            await self._catch_up(live)
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

    async def act(
        self,
        match_id: str,
        intent: Intent,
        requester: Connection,
        request_id: RequestId,
        resend: Resend | None = None,
    ) -> None:
        """Carry out a player's intent in match ``match_id``: the one path of every request a seated player
        makes in a match. The requester gets the step's first event as its reply, with ``request_id``; a
        refusal is raised, and changes nothing.

        ``resend`` is a move's ply and text: if it repeats a move whose commit answer was lost, and which
        is found stored now, the reply is that move's ``moved``, the answer the first request never got.
        """
        live = self.matches.get(match_id) or await self.get(match_id)
        self.registry.touch(live)
        if not live.lock.try_acquire():  # (by hand: ``async with`` makes two coroutines a request)
            await live.lock.acquire()
        try:
            if self._may_catch_up(live) and await self._catch_up(live, requester, request_id, resend):
                return
            step = intent(live.match, now=self.now())
            if step.duplicate:
                requester.send(self._state(live, requester, request_id))
                return
            await self.apply(live, step, requester, request_id)
        finally:
            live.lock.release()

    # ----------------------------------------------------------------- the commit path

    def _may_catch_up(self, live: LiveMatch) -> bool:
        """Whether the store or time may have something to decide in ``live`` first (see
        :meth:`_catch_up`): a commit it is unsure of, or its timer due (time decides nothing before)."""
        return bool(live.unsure) or live.timer is None or self.now() >= live.timer_due

    async def _catch_up(
        self,
        live: LiveMatch,
        requester: Connection | None = None,
        request_id: RequestId = None,
        resend: Resend | None = None,
    ) -> bool:
        """Let the store and time decide first (a move stored although its commit failed, a flag that
        fell, a grace that ran out), so that intents see the truth. Hold ``live.lock``. Returns whether
        that answered ``resend`` (see :meth:`act`)."""
        if live.unsure and await self._settle_unsure(live, requester, request_id, resend):
            return True
        step = stalls.tick(live.match, self.now(), self.config.bot_idle_untimed_s)
        if step.match is not live.match:
            await self.apply(live, step)
        return False

    async def _settle_unsure(
        self,
        live: LiveMatch,
        requester: Connection | None,
        request_id: RequestId,
        resend: Resend | None,
    ) -> bool:
        """Play what the store holds of the commits ``live`` is unsure of, as stored: acknowledged to the
        store, it must be acknowledged to the players, or the match could never pass that ply. Returns
        whether the stored move answered ``resend``. Raises ``unavailable`` (staying unsure) when the
        store cannot say."""
        if live.unsure.takeback is not None:
            taken = await recovery.stored_takeback_step(self.store, live.match, live.unsure.takeback)
            live.unsure.takeback = None
            if taken is not None:
                await self.apply(live, taken)
        if live.unsure.finish:
            ended = await recovery.stored_finish_step(self.store, live.match, self.now())
            live.unsure.finish = False
            if ended is not None:
                await self.apply(live, ended)
        ply = live.unsure.ply
        if ply is None:
            return False
        found = await recovery.stored_move_step(self.store, live.match, ply, self.now())
        live.unsure.ply = None
        if found is None:
            return False
        step, stored = found
        player_id = None if requester is None else requester.player_id
        if recovery.answers_resend(live.match, stored, player_id, resend):
            await self.apply(live, step, requester, request_id)
            return True
        await self.apply(live, step)
        return False

    async def apply(
        self,
        live: LiveMatch,
        step: Step,
        requester: Connection | None = None,
        request_id: RequestId = None,
    ) -> None:
        """Commit ``step``'s effects, then adopt its state and send its events. Hold ``live.lock``."""
        writes = self._writes(live, step)
        if writes:
            try:
                await self.store.commit(*writes)
            except StorageError as error:
                await self._commit_failed(live, step, error)
        self._enact(live, step, requester, request_id)

    def _writes(self, live: LiveMatch, step: Step) -> tuple[Write, ...]:
        """What the store writes for ``step``'s effects; none if there is nothing to commit."""
        if not step.effects or step.stored:
            return ()
        return rows_for(live.id, step.effects, datetime.now(UTC), self.config.instance_id)

    async def _commit_failed(self, live: LiveMatch, step: Step, error: StorageError) -> None:
        """Return if ``step`` is found stored after all (a batch whose answer was lost); else note what
        the failure leaves unsure and raise its refusal, after playing a move the store turns out to
        hold (a refusal other than ``unavailable`` says the store knows more than this match)."""
        live.unsure.note_failed(step)
        if await recovery.stored_after_all(self.store, live.id, step.effects, error):
            live.unsure.ply = None  # this very move, and the rest of its step: committed
            return
        refusal = storage_failure(error)
        if refusal.code != ErrorCode.UNAVAILABLE and live.unsure.ply is not None:
            with contextlib.suppress(ProtocolError):
                await self._settle_unsure(live, None, None, None)
        raise refusal from error

    def _enact(
        self,
        live: LiveMatch,
        step: Step,
        requester: Connection | None,
        request_id: RequestId,
    ) -> None:
        """Make ``step``'s match the match, log and send its events, and follow up on what changed: once
        its effects are committed. Hold ``live.lock``."""
        before = live.match
        live.match = step.match
        if not step.events and not step.effects:
            return
        live.log.append(step.events)
        self._send(live, step.events, requester, request_id)
        self.metrics.moves_total += sum(isinstance(event, Moved) for event in step.events)
        for effect in step.effects:
            if isinstance(effect, CreateRematch):
                self._start_rematch(live, effect.match)
        self._follow_up(live, before)
        self._schedule(live)

    def _follow_up(self, live: LiveMatch, before: Match) -> None:
        """What a change from ``before`` to the match now calls for: its players noted, the lobby told of
        a change it shows (status, seats, whether an open match's creator is here), a finished match kept."""
        after = live.match
        seated = before.seats != after.seats
        if seated:
            self.registry.note_seats(live)
        status_changed = before.status != after.status
        if seated or status_changed or before.connected != after.connected:
            self._show_in_lobby(live)
        if status_changed and after.is_over and not before.is_over:
            self.metrics.matches_finished_total += 1
            self.registry.keep_finished(live)
            self.on_finished(after)

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
        self.registry.hold(live)
        for connection in list(old.watchers):
            if connection.player_id is not None and rematch.seat_of(connection.player_id) is not None:
                # The players go on to the rematch: the finished match, whose ``rematch.started`` they
                # have just had, sends them nothing more, and neither needs to leave it.
                self._stop_following(old, connection)
                self._follow(live, connection)
                connection.send(self._state(live, connection, None))
        self._show_in_lobby(live)
        self._schedule(live)

    # ----------------------------------------------------------------- followers

    def _follow(self, live: LiveMatch, connection: Connection) -> None:
        live.watchers.add(connection)
        connection.matches.add(live.id)
        self.spectators.changed(live)

    def _stop_following(self, live: LiveMatch, connection: Connection) -> None:
        live.watchers.discard(connection)
        connection.matches.discard(live.id)
        self.spectators.changed(live)

    async def _unfollow(self, live: LiveMatch, connection: Connection) -> None:
        self._stop_following(live, connection)
        player_id = connection.player_id
        if player_id is not None and not live.has_connection_of(player_id):
            await self.apply(live, live.match.disconnect(player_id, self.now()))

    def _state(self, live: LiveMatch, viewer: Connection, request_id: RequestId) -> MatchState:
        return state_for(live, viewer, self.now(), request_id)

    # ----------------------------------------------------------------- lobby and timers

    def _show_in_lobby(self, live: LiveMatch) -> None:
        entry = lobby_entry(
            live.match, live.created_at, live.bot_status, self.config.instance_id, self.ws_url()
        )
        if entry is None:
            self.lobby.hide(live.id)
        else:
            self.lobby.show(entry)

    def _schedule(self, live: LiveMatch) -> None:
        """Have the match's one timer fire by its next deadline (flag fall, grace expiry, stall), if any.

        A timer already due no later than that deadline is kept: firing early only finds nothing to
        decide yet and arms it again. Most moves push the deadline later, so most keep their timer
        rather than cancel one and make another.
        """
        deadline = stalls.deadline(live.match, self.config.bot_idle_untimed_s)
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
                await self._catch_up(live)
                self._schedule(live)
        except ProtocolError as error:
            log.warning("match %s: deciding on time failed (%s); retrying", live.id, error.message)
            # (``timer_due`` stays the deadline that passed: until it is decided, every request asks)
            live.timer = self._loop.call_later(TICK_RETRY_S, self._fire, live)
        except Exception:
            log.exception("match %s: deciding on time failed", live.id)

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
            live.spectators.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
