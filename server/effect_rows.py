"""What the store writes for a step's effects: the match's words turned into the storage's rows.

Pure functions between :mod:`server.match` (which knows no storage) and
:mod:`server.storage.writes` (which knows no match): the host commits what they return.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from server.match import LIVE, Match
from server.protocol import EngineInfo
from server.steps import (
    CreateRematch,
    Effect,
    Finish,
    SaveChat,
    SaveFinish,
    SaveMove,
    SaveSeat,
    SaveStart,
    TakeBack,
)
from server.storage import records, writes
from server.storage.records import ChatRecord, MatchFinish, MatchRecord, MoveRecord, SeatRecord
from server.storage.writes import Write


def rows_for(match_id: str, effects: tuple[Effect, ...], at: datetime, host: str) -> tuple[Write, ...]:
    """The writes of ``effects``, a step's, to commit in one transaction (a step is stored whole, or not
    at all); ``host`` is the instance that hosts a rematch the step starts."""
    return tuple(_rows(match_id, effect, at, host) for effect in effects)


def match_record(
    match: Match,
    status: str,
    seats: tuple[SeatRecord, ...],
    at: datetime,
    host: str,
    *,
    rematch_of: str | None = None,
) -> MatchRecord:
    """The stored row of a match made on ``host``: open for its creator, or live from the start (a
    rematch)."""
    return MatchRecord(
        id=match.id,
        game=match.game.name,
        options=msgspec.to_builtins(match.options),
        status=status,
        host=host,
        created_at=at,
        started_at=at if status == LIVE else None,
        seats=seats,
        rematch_of=rematch_of,
    )


def _rows(match_id: str, effect: Effect, at: datetime, host: str) -> Write:
    if isinstance(effect, SaveMove):
        return writes.new_move(_move(match_id, effect, at), _finish(effect.finish, at))
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
    if isinstance(effect, TakeBack):
        return writes.take_back(match_id, effect.ply)
    assert isinstance(effect, CreateRematch)
    return _rematch(match_id, effect.match, at, host)


def _move(match_id: str, effect: SaveMove, at: datetime) -> MoveRecord:
    return MoveRecord(
        match_id=match_id,
        ply=effect.ply,
        seat=effect.seat,
        notation=effect.notation,
        think_ms=effect.think_ms,
        played_at=at,
        clocks_ms=effect.clocks_ms,
        engine=_engine(effect.engine),
    )


def _engine(engine: EngineInfo | None) -> records.EngineInfo | None:
    if engine is None:
        return None
    return records.EngineInfo(
        score=engine.score,
        depth=engine.depth,
        nodes=engine.nodes,
        pv=tuple(engine.pv),
        source=engine.source,
        time_ms=engine.time_ms,
    )


def _rematch(match_id: str, rematch: Match, at: datetime, host: str) -> Write:
    seats = tuple(
        SeatRecord(seat, player.id, player.name, player.bot)
        for seat, player in enumerate(rematch.seats)
        if player is not None
    )
    return writes.new_match(match_record(rematch, LIVE, seats, at, host, rematch_of=match_id), at)


def _finish(finish: Finish | None, at: datetime) -> MatchFinish | None:
    if finish is None:
        return None
    return MatchFinish(status=finish.status, winner=finish.winner, reason=finish.reason, finished_at=at)
