"""What a player's profile reads: who a name stands for, their results per game, and their game history.

Guests' names are not unique, so :func:`player_named` resolves a name to the player who claimed it, or
else the guest seen most recently under it; ``id:`` + a player id names one player exactly. Only public
matches are shown: a profile is for everyone to read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, cast

from sqlalchemy import ColumnElement, and_, case, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.orm import aliased

from server.storage.models import MatchRow, PlayerRow, RatingChangeRow, SeatRow

Outcome = Literal["win", "draw", "loss"]
OUTCOMES: tuple[Outcome, ...] = ("win", "draw", "loss")


@dataclass(frozen=True, slots=True)
class ProfilePlayer:
    id: str
    name: str
    bot: bool
    created_at: datetime
    last_seen_at: datetime


@dataclass(frozen=True, slots=True)
class PlayedGame:
    """One finished or aborted match of the player, from their seat."""

    match_id: str
    game: str
    status: str
    rated: bool
    seat: int
    outcome: Outcome | None
    """``None`` for an aborted match."""
    reason: str | None
    opponent_id: str | None
    opponent_name: str | None
    opponent_bot: bool | None
    created_at: datetime
    finished_at: datetime | None
    rating_before: float | None
    rating_after: float | None


@dataclass(frozen=True, slots=True)
class GameFilter:
    """Which of a player's games to list: all of them when every field is ``None``."""

    game: str | None = None
    outcome: Outcome | None = None
    rated: bool | None = None


def _public() -> ColumnElement[bool]:
    return func.coalesce(MatchRow.options["visibility"].as_string(), "public") == "public"


def _outcome() -> ColumnElement[str | None]:
    return case(
        (MatchRow.status != "finished", None),
        (MatchRow.winner.is_(None), "draw"),
        (MatchRow.winner == SeatRow.seat, "win"),
        else_="loss",
    )


class Profiles:
    """The profile's reads, on the store's engine."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def player_named(self, name: str, claimed_key: str) -> ProfilePlayer | None:
        """The player ``name`` stands for: ``id:`` + an id, else the player who claimed the name (whose
        ``name_key`` is ``claimed_key``), else the guest seen most recently by that name."""
        if name.startswith("id:"):
            candidates = [PlayerRow.id == name[3:]]
        else:
            candidates = [PlayerRow.name_key == claimed_key, PlayerRow.name == name]
        async with self._engine.connect() as connection:
            for condition in candidates:
                statement = (
                    select(PlayerRow)
                    .where(condition)
                    .order_by(PlayerRow.last_seen_at.desc(), PlayerRow.id)
                    .limit(1)
                )
                row = (await connection.execute(statement)).first()
                if row is not None:
                    break
        if row is None:
            return None
        return ProfilePlayer(row.id, row.name, row.is_bot, row.created_at, row.last_seen_at)

    async def counts_of(self, player_id: str) -> dict[str, dict[Outcome, int]]:
        """Wins, draws and losses per game, of the player's finished public matches."""
        outcome = _outcome().label("outcome")
        statement = (
            select(MatchRow.game, outcome, func.count())
            .join(SeatRow, SeatRow.match_id == MatchRow.id)
            .where(SeatRow.player_id == player_id, MatchRow.status == "finished", _public())
            .group_by(MatchRow.game, outcome)
        )
        counts: dict[str, dict[Outcome, int]] = {}
        async with self._engine.connect() as connection:
            for game, result, count in await connection.execute(statement):
                if result in OUTCOMES:
                    counts.setdefault(game, dict.fromkeys(OUTCOMES, 0))[result] = count
        return counts

    async def games_of(
        self, player_id: str, where: GameFilter, *, limit: int, before: str | None = None
    ) -> list[PlayedGame]:
        """A page of the player's finished and aborted public matches, newest first; ``before`` is the last
        match id of the previous page (one not among them gives an empty page)."""
        opponent_seat = aliased(SeatRow)
        opponent = aliased(PlayerRow)
        outcome = _outcome()
        statement = (
            select(
                MatchRow.id,
                MatchRow.game,
                MatchRow.status,
                MatchRow.rated,
                SeatRow.seat,
                outcome,
                MatchRow.reason,
                opponent.id,
                opponent.name,
                opponent.is_bot,
                MatchRow.created_at,
                MatchRow.finished_at,
                RatingChangeRow.rating_before,
                RatingChangeRow.rating_after,
            )
            .join(SeatRow, SeatRow.match_id == MatchRow.id)
            .outerjoin(
                opponent_seat, and_(opponent_seat.match_id == MatchRow.id, opponent_seat.seat != SeatRow.seat)
            )
            .outerjoin(opponent, opponent.id == opponent_seat.player_id)
            .outerjoin(
                RatingChangeRow,
                and_(RatingChangeRow.match_id == MatchRow.id, RatingChangeRow.player_id == player_id),
            )
            .where(SeatRow.player_id == player_id, MatchRow.status.in_(("finished", "aborted")), _public())
            .order_by(MatchRow.created_at.desc(), MatchRow.id.desc())
            .limit(limit)
        )
        if where.game is not None:
            statement = statement.where(MatchRow.game == where.game)
        if where.rated is not None:
            statement = statement.where(MatchRow.rated == where.rated)
        if where.outcome is not None:
            statement = statement.where(outcome == where.outcome)
        async with self._engine.connect() as connection:
            if before is not None:
                cursor = (
                    await connection.execute(
                        select(MatchRow.created_at, MatchRow.id).where(MatchRow.id == before)
                    )
                ).first()
                if cursor is None:
                    return []
                statement = statement.where(tuple_(MatchRow.created_at, MatchRow.id) < tuple(cursor))
            rows = (await connection.execute(statement)).all()
        return [PlayedGame(*cast(tuple[Any, ...], row)) for row in rows]
