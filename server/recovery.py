"""Commits whose answer was lost: what the store holds after them, as steps for the host to apply.

A commit can fail in a way that stored it all the same (the database committed, then the connection
dropped before it said so). A move whose commit failed leaves its match unsure of that ply, a result
leaves it unsure of its end; before anything else happens in the match, the host asks these functions
what the store holds and plays it as stored. They read the store and return steps; they never change
a match themselves.
"""

from __future__ import annotations

import logging
from typing import cast

import msgspec

from server.clock import Clock
from server.errors import ErrorCode, ProtocolError, storage_failure
from server.match import ABORTED, FINISHED, Match
from server.protocol import Ended, EngineInfo, Moved
from server.protocol_base import EngineSource
from server.steps import Effect, Finish, SaveFinish, SaveMove, Step, TakeBack
from server.storage import DuplicateMoveError, MoveRecord, StorageError, Store

log = logging.getLogger(__name__)

Resend = tuple[int, str]
"""A move request's ply and move text: what a resend of a move must repeat."""


class Unsure(msgspec.Struct):
    """What a failed commit left a match unsure of: the ply of a move, its end, or a takeback (the step
    that took moves back), that the store may hold all the same."""

    ply: int | None = None
    finish: bool = False
    takeback: Step | None = None

    def __bool__(self) -> bool:
        return self.ply is not None or self.finish or self.takeback is not None

    def note_failed(self, step: Step) -> None:
        """Remember what ``step``, whose commit failed, may have stored all the same."""
        for effect in step.effects:
            if isinstance(effect, SaveMove):
                self.ply = effect.ply
            elif isinstance(effect, SaveFinish):
                self.finish = True
            elif isinstance(effect, TakeBack):
                self.takeback = step


async def stored_after_all(
    store: Store, match_id: str, effects: tuple[Effect, ...], error: StorageError
) -> bool:
    """Whether a step refused as a duplicate move was stored by a batch whose answer was lost: the move
    at its ply is this very move (same seat, same notation), so the rest of its step is stored too."""
    if not isinstance(error, DuplicateMoveError):
        return False
    move = next((effect for effect in effects if isinstance(effect, SaveMove)), None)
    if move is None:
        return False
    stored = await _stored_move(store, match_id, move.ply)
    return stored is not None and (stored.seat, stored.notation) == (move.seat, move.notation)


async def stored_move_step(
    store: Store, match: Match, ply: int, now: float
) -> tuple[Step, MoveRecord] | None:
    """The step that plays the move the store holds at ``ply``, if it holds one and ``match`` is still
    there; ``None`` if the failed commit stored nothing. Raises ``unavailable`` when the store cannot say."""
    try:
        stored = await _stored_move(store, match.id, ply)
    except StorageError as error:
        raise storage_failure(error) from error
    if stored is None or ply != match.ply:
        return None
    try:
        return replay_stored_move(match, stored, now), stored
    except ProtocolError as error:
        log.error("match %s: the stored move %d %r cannot be played: %s", match.id, ply, stored.notation,
                  error.message)  # fmt: skip
        return None


async def stored_finish_step(store: Store, match: Match, now: float) -> Step | None:
    """The step that ends ``match`` as the store holds it, if the store holds its end (and the rematch
    that end started, if any); ``None`` if it holds none. Raises ``unavailable`` when the store cannot say."""
    try:
        record = await store.get_match(match.id)
        if record is None or record.status not in (FINISHED, ABORTED) or match.is_over:
            return None
        rematch_id = match.rematch_agreed_id  # (committed with the result, if its step started it)
        rematch = rematch_id is not None and await store.get_match(rematch_id) is not None
    except StorageError as error:
        raise storage_failure(error) from error
    stored = Finish(record.status, record.winner, record.reason or record.status)
    return match.end_as_stored(stored, now, rematch=rematch)


async def stored_takeback_step(store: Store, match: Match, taken: Step) -> Step | None:
    """``taken``, a takeback whose commit failed, as stored, if the store holds the match without the moves
    it took back (and ``match`` still has them); ``None`` if the commit stored nothing. Raises
    ``unavailable`` when the store cannot say."""
    try:
        record = await store.get_match(match.id)
    except StorageError as error:
        raise storage_failure(error) from error
    if record is None or len(record.moves) != taken.match.ply or match.ply <= taken.match.ply:
        return None
    return msgspec.structs.replace(taken, stored=True)


def answers_resend(match: Match, stored: MoveRecord, player_id: str | None, resend: Resend | None) -> bool:
    """Whether ``resend``, from ``player_id``, repeats the stored move: its answer is then that move's
    ``moved``, the answer the first request never got."""
    player = match.seats[stored.seat]
    return (
        resend is not None
        and player is not None
        and player_id == player.id
        and resend[0] == stored.ply
        and resend[1].strip().lower() == stored.notation.lower()
    )


def replay_stored_move(match: Match, stored: MoveRecord, now: float) -> Step:
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
            time_ms=stored.engine.time_ms,
            source=cast(EngineSource | None, stored.engine.source),  # stored only as the protocol took it
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


async def _stored_move(store: Store, match_id: str, ply: int) -> MoveRecord | None:
    record = await store.get_match(match_id)
    return next((move for move in record.moves if move.ply == ply), None) if record else None
