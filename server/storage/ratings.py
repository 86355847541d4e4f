"""People's ratings in the database: read them, and apply one rated match to them exactly once.

A rated match is rated after its result is committed, in a transaction of its own
(:meth:`RatingBook.rate`): it locks the people's rating rows, computes their Glicko-2 updates
(:mod:`server.glicko2`) and stores the new ratings with one ``rating_changes`` row per person. That
table's primary key (match, player) is what makes the update once-only: an instance that rates a
match already rated, after a restart or beside another instance, finds the rows there (or fails to
insert them) and changes nothing. A result whose rating was not stored (the server died in between,
the database was down) is found again by :meth:`RatingBook.unrated_matches`, so none is lost.

This is the one write of the store that does not go through the batch writer: it reads what it
writes, and it is not on any player's move path.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import case, exists, func, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from server.glicko2 import NEW_PLAYER, Glicko, Result, aged, periods_since, rate
from server.storage.classify import is_unavailable, reason
from server.storage.errors import DatabaseUnavailableError
from server.storage.models import MatchRow, RatingChangeRow, RatingRow

DAY_S = 86_400.0


@dataclass(frozen=True, slots=True)
class Side:
    """One seat of a rated match: a person (``player_id``) whose rating changes, or a bot whose fixed
    ``rating`` counts in the person's update; and the seat's score (1 won, 0.5 drawn, 0 lost)."""

    score: float
    player_id: str | None = None
    rating: Glicko | None = None


@dataclass(frozen=True, slots=True)
class RatingRecord:
    """A person's rating in one game, its deviation grown for the time since their last rated game."""

    game: str
    rating: float
    deviation: float
    volatility: float
    games: int
    updated_at: datetime

    @property
    def provisional(self) -> bool:
        return Glicko(self.rating, self.deviation, self.volatility).provisional


@dataclass(frozen=True, slots=True)
class RatingChange:
    """What one rated match did to a person's rating: a point of their history."""

    match_id: str
    """``""`` for a private match."""
    game: str
    rating_before: float
    deviation_before: float
    rating_after: float
    deviation_after: float
    at: datetime


class RatingBook:
    """Reads and the once-only update of people's ratings, on the store's engine."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def rating_of(self, player_id: str, game: str, now: datetime) -> tuple[float, float]:
        """``player_id``'s rating and deviation in ``game`` at ``now``: 1500 and 350 for a player not yet
        rated in it (for pairing by rating)."""
        async with storage_errors("rating lookup"), self._engine.connect() as connection:
            row = (
                await connection.execute(
                    select(RatingRow).where(RatingRow.player_id == player_id, RatingRow.game == game)
                )
            ).first()
        if row is None:
            return NEW_PLAYER.rating, NEW_PLAYER.deviation
        glicko = aged(Glicko(row.rating, row.deviation, row.volatility), _periods(row.updated_at, now))
        return glicko.rating, glicko.deviation

    async def ratings_of(self, player_id: str, now: datetime) -> list[RatingRecord]:
        """Every game ``player_id`` has a rating in, by game, deviations as of ``now``."""
        async with storage_errors("ratings lookup"), self._engine.connect() as connection:
            rows = (
                await connection.execute(
                    select(RatingRow).where(RatingRow.player_id == player_id).order_by(RatingRow.game)
                )
            ).all()
        records = []
        for row in rows:
            glicko = aged(Glicko(row.rating, row.deviation, row.volatility), _periods(row.updated_at, now))
            records.append(
                RatingRecord(
                    row.game, glicko.rating, glicko.deviation, glicko.volatility, row.games, row.updated_at
                )
            )
        return records

    async def history_of(self, player_id: str) -> list[RatingChange]:
        """Every rated match's change to ``player_id``'s ratings, oldest first; a private match's id is
        left out (``""``): those who were not in it reach it by its id only."""
        public = func.coalesce(MatchRow.options["visibility"].as_string(), "public") == "public"
        statement = (
            select(RatingChangeRow, case((public, RatingChangeRow.match_id), else_="").label("shown_id"))
            .join(MatchRow, MatchRow.id == RatingChangeRow.match_id)
            .where(RatingChangeRow.player_id == player_id)
            .order_by(RatingChangeRow.at, RatingChangeRow.match_id)
        )
        async with storage_errors("rating history"), self._engine.connect() as connection:
            rows = (await connection.execute(statement)).all()
        return [
            RatingChange(
                row.shown_id,
                row.game,
                row.rating_before,
                row.deviation_before,
                row.rating_after,
                row.deviation_after,
                row.at,
            )
            for row in rows
        ]

    async def unrated_matches(self, since: datetime, limit: int = 100) -> list[str]:
        """Rated matches that finished after ``since`` and whose ratings are not stored yet, in the order
        they ended (an index on ``(rated, finished_at)`` keeps this to the recent ones)."""
        statement = (
            select(MatchRow.id)
            .where(
                MatchRow.rated,
                MatchRow.finished_at > since,
                MatchRow.status == "finished",
                ~exists().where(RatingChangeRow.match_id == MatchRow.id),
            )
            .order_by(MatchRow.finished_at, MatchRow.id)
            .limit(limit)
        )
        async with storage_errors("unrated matches"), self._engine.connect() as connection:
            return list((await connection.scalars(statement)).all())

    async def rate(self, match_id: str, game: str, sides: Sequence[Side], at: datetime) -> bool:
        """Apply the result of rated match ``match_id``, which ended ``at``, to the people among ``sides``;
        ``False`` if it was rated already (by this instance or another), and then nothing changes."""
        people = sorted(side.player_id for side in sides if side.player_id is not None)
        if not people:
            return False
        try:
            async with storage_errors(f"rating match {match_id!r}"), self._engine.begin() as connection:
                # A write first: on SQLite it takes the write lock before anything is read, so what is read
                # is what is updated; on PostgreSQL the rows exist for the lock below.
                await _insert_new_ratings(connection, people, game, at)
                done = await connection.scalar(select(exists().where(RatingChangeRow.match_id == match_id)))
                if done:
                    return False
                before = await _locked_ratings(connection, people, game)
                for row in _rated(match_id, game, sides, before, at):
                    await connection.execute(
                        update(RatingRow)
                        .where(RatingRow.player_id == row.player_id, RatingRow.game == game)
                        .values(
                            rating=row.rating_after,
                            deviation=row.deviation_after,
                            volatility=row.volatility_after,
                            games=RatingRow.games + 1,
                            updated_at=at,
                        )
                    )
                    await connection.execute(
                        insert(RatingChangeRow).values(
                            match_id=match_id,
                            player_id=row.player_id,
                            game=game,
                            rating_before=row.rating_before,
                            deviation_before=row.deviation_before,
                            rating_after=row.rating_after,
                            deviation_after=row.deviation_after,
                            at=at,
                        )
                    )
        except IntegrityError:
            # Another instance rated it between our check and our insert: its rows stand, ours are gone.
            return False
        return True


@dataclass(frozen=True, slots=True)
class _Update:
    player_id: str
    rating_before: float
    deviation_before: float
    rating_after: float
    deviation_after: float
    volatility_after: float


def _rated(
    match_id: str, game: str, sides: Sequence[Side], before: dict[str, tuple[Glicko, datetime]], at: datetime
) -> list[_Update]:
    """Each person's update: their rating aged to ``at``, rated against the other side as it stood."""
    current = {player_id: aged(glicko, _periods(since, at)) for player_id, (glicko, since) in before.items()}

    def glicko_of(side: Side) -> Glicko:
        if side.player_id is not None:
            return current[side.player_id]
        if side.rating is None:
            raise ValueError(f"match {match_id!r} of {game}: a bot's side has no rating to rate against")
        return side.rating

    updates = []
    for index, side in enumerate(sides):
        if side.player_id is None:
            continue
        others = [other for position, other in enumerate(sides) if position != index]
        start = current[side.player_id]
        after = rate(start, [Result(glicko_of(other), side.score) for other in others], periods=0.0)
        updates.append(
            _Update(
                side.player_id, start.rating, start.deviation, after.rating, after.deviation, after.volatility
            )
        )
    return updates


def _periods(since: datetime, until: datetime) -> float:
    return periods_since((until - since).total_seconds() / DAY_S)


async def _insert_new_ratings(
    connection: AsyncConnection, people: list[str], game: str, at: datetime
) -> None:
    dialect = postgresql if connection.dialect.name == "postgresql" else sqlite
    rows = [
        {
            "player_id": player_id,
            "game": game,
            "rating": NEW_PLAYER.rating,
            "deviation": NEW_PLAYER.deviation,
            "volatility": NEW_PLAYER.volatility,
            "games": 0,
            "updated_at": at,
        }
        for player_id in people
    ]
    await connection.execute(dialect.insert(RatingRow).values(rows).on_conflict_do_nothing())


async def _locked_ratings(
    connection: AsyncConnection, people: list[str], game: str
) -> dict[str, tuple[Glicko, datetime]]:
    """The people's ratings in ``game``, locked until the transaction ends (PostgreSQL; SQLite's write
    lock, taken already, covers the whole database)."""
    statement = (
        select(RatingRow)
        .where(RatingRow.player_id.in_(people), RatingRow.game == game)
        .order_by(RatingRow.player_id)
    )
    if connection.dialect.name == "postgresql":
        statement = statement.with_for_update()
    rows = (await connection.execute(statement)).all()
    return {
        row.player_id: (Glicko(row.rating, row.deviation, row.volatility), row.updated_at) for row in rows
    }


@asynccontextmanager
async def storage_errors(what: str) -> AsyncIterator[None]:
    """A database that cannot answer becomes :class:`DatabaseUnavailableError`, as for the store's reads."""
    try:
        yield
    except Exception as error:
        if is_unavailable(error):
            raise DatabaseUnavailableError(f"{what} failed: database unavailable: {reason(error)}") from error
        raise
