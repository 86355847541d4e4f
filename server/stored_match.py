"""A live match rebuilt from its stored record, after a restart or to show a finished match."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from msgspec.structs import replace

from games import Game
from server import protocol
from server.clock import Clock, TimeControl
from server.match import ABORTED, CHAT_KEPT, FINISHED, LIVE, OPEN, Match
from server.protocol import MatchOptions, PlayerInfo
from server.storage.records import MatchRecord, MoveRecord, SeatRecord


def restore_match(record: MatchRecord, game: Game, grace_s: float, now: float) -> Match:
    """The match ``record`` holds, as it stands at ``now``.

    Clocks resume at ``now`` from the times stored with the last move, so no
    one is charged for the server's downtime; every seat of an unfinished
    match starts absent and has the grace period to come back. The stored
    chat lines come back with the ``seq`` their events had, and numbering
    goes on after the last of them, so a later line never takes the number
    of an earlier one (a client keeps chat lines by number; it gets a full
    state anyway, from the restarted server's new event log).
    """
    match = Match.open(record.id, game, _stored_options(record.options), grace_s)
    stored_moves = sorted(record.moves, key=lambda m: m.ply)
    moves = tuple(move.notation for move in stored_moves)
    positions = game.history(moves)
    seats = _stored_seats(record.seats)
    over = record.status in (FINISHED, ABORTED)
    absent = tuple(now if player is not None and not over else None for player in seats)
    return replace(
        match,
        status=record.status,
        seats=seats,
        positions=tuple(positions),
        moves=moves,
        move_clocks=tuple(move.clocks_ms for move in stored_moves),
        clock=_restored_clock(match.control, record.status, stored_moves, positions[-1].turn, now),
        turn_started=now if record.status == LIVE else None,
        result=_stored_result(record) if over else None,
        absent_since=(absent[0], absent[1]),
        rematch_id=record.rematch_id,
        chat_lines=_stored_chat(record),
        chat_count=record.chat_count,
        seq=max((line.seq for line in record.chat), default=0),
    )


def _restored_clock(
    control: TimeControl | None, status: str, stored_moves: Sequence[MoveRecord], turn: int, now: float
) -> Clock | None:
    """The clock of a restored match: the times stored with its last move, running for ``turn`` from
    ``now`` if the match is live (an open match's clocks come at its start)."""
    if control is None or status == OPEN:
        return None
    stored = stored_moves[-1].clocks_ms if stored_moves else None
    clock = Clock(control, stored) if stored else Clock.new(control)
    return clock.start(turn, now) if status == LIVE else clock


def _stored_options(options: dict[str, Any]) -> MatchOptions:
    """A match's options as stored, the defaults filling in what an older record lacks."""
    bot = options.get("bot")
    return MatchOptions(
        time_control=options.get("time_control", "untimed"),
        visibility=options.get("visibility", "public"),
        bot=protocol.BotRequest(**bot) if bot else None,
        rated=bool(options.get("rated", False)),
        bot_rating=options.get("bot_rating"),
    )


def _stored_seats(stored: Sequence[SeatRecord]) -> tuple[PlayerInfo | None, PlayerInfo | None]:
    seats: list[PlayerInfo | None] = [None, None]
    for seat in stored:
        seats[seat.seat] = PlayerInfo(id=seat.player_id, name=seat.player_name, bot=seat.is_bot)
    return seats[0], seats[1]


def _stored_result(record: MatchRecord) -> protocol.MatchResult:
    return protocol.MatchResult(status=record.status, winner=record.winner, reason=record.reason or "")


def _stored_chat(record: MatchRecord) -> tuple[protocol.ChatLine, ...]:
    """The last :data:`CHAT_KEPT` stored chat lines, with the ``seq`` their events had."""
    return tuple(
        protocol.ChatLine(match_id=record.id, seq=line.seq, seat=line.seat, name=line.name, text=line.text)
        for line in record.chat[-CHAT_KEPT:]
    )
