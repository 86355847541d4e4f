"""The database schema as SQLAlchemy 2 declarative models.

These row classes never leave :mod:`server.storage`: the store turns them into
the frozen records of :mod:`server.storage.records`. The schema itself changes
only through Alembic migrations (``migrations/versions``); ``tests/test_migrations.py``
proves that these models and the migrations describe the same tables, on SQLite
and on PostgreSQL.

Indexes follow the queries the server makes:

- ``/api/matches`` pages newest first by ``(created_at, id)``, optionally within
  one game or one status, hence the three ``(..., created_at, id)`` indexes;
- its ``player`` filter looks a player's seats up by ``seats.player_id``;
- a restarted server asks for the open and live matches of its instance, which
  the status index narrows to the few unfinished rows;
- moves are read by match in ply order, which their primary key already is;
- a restarted server reads each restored match's last chat lines by ``seq``, the
  end of the chat lines' primary key.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    CheckConstraint,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    String,
    TypeDecorator,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

MATCH_STATUSES = ("open", "live", "finished", "aborted")
UNFINISHED_STATUSES = ("open", "live")
FINISHED_STATUSES = ("finished", "aborted")

# Explicit constraint names, so that migrations can refer to them on every database.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every database.

    PostgreSQL keeps ``timestamptz``; SQLite has no time zones, so values are
    stored as naive UTC text (whose order is then time order) and given their
    UTC zone back when read. A naive datetime is refused rather than guessed at.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = _in_utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def bind_processor(self, dialect: Dialect) -> Callable[[datetime | None], Any] | None:
        """On SQLite, the text SQLAlchemy would store, made in one step instead of two.

        SQLAlchemy runs :meth:`process_bind_param` and then its SQLite ``DATETIME``
        formatting, two Python functions and a ``%`` format of seven fields, for
        every move's timestamp; here the date and time to the second are formatted
        once for all the timestamps of that second, which a busy server's moves
        share (``tests/test_storage_types.py`` holds the two to the same text).
        """
        if dialect.name != "sqlite":
            return super().bind_processor(dialect)

        last: list[tuple[datetime, datetime, str]] = [(_NEVER, _NEVER, "")]
        """The latest second formatted: when it starts, when the next one starts, and its text. One
        tuple, replaced whole."""

        def naive_utc_text(value: datetime | None) -> str | None:
            if value is None:
                return None
            if value.tzinfo is not UTC:  # (the server's own timestamps are: no conversion to call)
                value = _in_utc(value)
            # The text to the second is made once a second: the whole of it, by ``isoformat``, took 5%
            # of a move's instructions (docs/performance.md).
            start, end, text = last[0]
            if not start <= value < end:
                start = value.replace(microsecond=0)
                try:
                    end = start + _ONE_SECOND
                except OverflowError:  # (the last second of year 9999: made again each time)
                    end = start
                text = start.isoformat(" ")[:-6] + "."  # (without its "+00:00")
                last[0] = (start, end, text)
            return text + str(value.microsecond).zfill(6)  # (no format spec to parse)

        return naive_utc_text

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


_NEVER = datetime.min.replace(tzinfo=UTC)
_ONE_SECOND = timedelta(seconds=1)


def _in_utc(value: datetime) -> datetime:
    """``value`` in UTC; a naive datetime is refused, not guessed at."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"timestamp {value.isoformat()} has no time zone; pass an aware datetime")
    return value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {  # noqa: RUF012 (SQLAlchemy reads this class attribute)
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
    }


class PlayerRow(Base):
    """A person or a bot. Only a hash of the player's secret token is kept, and of a claimed name's
    password."""

    __tablename__ = "players"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    token_hash: Mapped[str] = mapped_column(String(128))
    """The token the player was made with (a guest's one key); logins add :class:`SessionRow` tokens."""
    is_bot: Mapped[bool]
    created_at: Mapped[datetime]
    last_seen_at: Mapped[datetime]
    name_key: Mapped[str | None] = mapped_column(String(200))
    """The claimed name folded for comparison (server/accounts.py ``name_key``); ``None`` for a guest."""
    password_hash: Mapped[str | None] = mapped_column(String(200))
    """The claimed name's password as an argon2id hash; ``None`` for a guest."""

    __table_args__ = (
        Index("ix_players_token_hash", "token_hash", unique=True),
        Index("ix_players_name_key", "name_key", unique=True),  # one player per claimed name
    )


class SessionRow(Base):
    """A token given by a login: the player it logs in as, kept as the token's SHA-256."""

    __tablename__ = "sessions"

    token_hash: Mapped[str] = mapped_column(String(128), primary_key=True)
    player_id: Mapped[str] = mapped_column(String(64), ForeignKey("players.id"))
    created_at: Mapped[datetime]
    last_seen_at: Mapped[datetime]

    __table_args__ = (Index("ix_sessions_player_id", "player_id"),)


class MatchRow(Base):
    """A match: what is played, by which rules and options, where, and how it ended."""

    __tablename__ = "matches"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    game: Mapped[str] = mapped_column(String(32))
    options: Mapped[dict[str, Any]]
    status: Mapped[str] = mapped_column(String(16))
    winner: Mapped[int | None] = mapped_column(SmallInteger)
    reason: Mapped[str | None] = mapped_column(String(200))
    host: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    rematch_of: Mapped[str | None] = mapped_column(String(64), ForeignKey("matches.id"))
    rated: Mapped[bool] = mapped_column(server_default=false())
    """Whether the result changes the players' ratings (chosen at creation; also in ``options``)."""

    seats: Mapped[list[SeatRow]] = relationship(order_by="SeatRow.seat", lazy="raise")
    moves: Mapped[list[MoveRow]] = relationship(order_by="MoveRow.ply", lazy="raise")

    __table_args__ = (
        CheckConstraint(f"status IN {MATCH_STATUSES!r}", name="status"),
        CheckConstraint("winner IS NULL OR winner IN (0, 1)", name="winner"),
        Index("ix_matches_created_at_id", "created_at", "id"),
        Index("ix_matches_game_created_at_id", "game", "created_at", "id"),
        Index("ix_matches_status_created_at_id", "status", "created_at", "id"),
        Index("ix_matches_rematch_of", "rematch_of", unique=True),  # one rematch a match
        Index("ix_matches_rated_finished_at", "rated", "finished_at"),  # the ratings' sweep
    )


class SeatRow(Base):
    """Which player holds which seat of a match (seat 0 moves first)."""

    __tablename__ = "seats"

    match_id: Mapped[str] = mapped_column(String(64), ForeignKey("matches.id"), primary_key=True)
    seat: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    player_id: Mapped[str] = mapped_column(String(64), ForeignKey("players.id"))
    joined_at: Mapped[datetime]

    player: Mapped[PlayerRow] = relationship(lazy="raise")

    __table_args__ = (
        CheckConstraint("seat IN (0, 1)", name="seat"),
        Index("ix_seats_player_id_match_id", "player_id", "match_id"),
    )


class MoveRow(Base):
    """One ply of a match, with the clocks after it and what a bot's search said about it."""

    __tablename__ = "moves"

    match_id: Mapped[str] = mapped_column(String(64), ForeignKey("matches.id"), primary_key=True)
    ply: Mapped[int] = mapped_column(Integer, primary_key=True)
    seat: Mapped[int] = mapped_column(SmallInteger)
    notation: Mapped[str] = mapped_column(String(64))
    think_ms: Mapped[int] = mapped_column(Integer)
    played_at: Mapped[datetime]
    clock0_ms: Mapped[int | None] = mapped_column(Integer)
    clock1_ms: Mapped[int | None] = mapped_column(Integer)
    score: Mapped[int | None] = mapped_column(Integer)
    depth: Mapped[int | None] = mapped_column(Integer)
    nodes: Mapped[int | None] = mapped_column(BigInteger)
    pv: Mapped[list[str] | None] = mapped_column(JSON)
    source: Mapped[str | None] = mapped_column(String(16))
    """``book``, ``solved`` or ``searched``, as the bot said; ``None`` if it did not."""
    time_ms: Mapped[int | None] = mapped_column(BigInteger)
    """The bot's own time for its search, as it said (``think_ms`` is the server's clock)."""

    __table_args__ = (
        CheckConstraint("ply >= 0", name="ply"),
        CheckConstraint("seat IN (0, 1)", name="seat"),
        CheckConstraint("think_ms >= 0", name="think_ms"),
    )


class ChatLineRow(Base):
    """One chat line of a match, numbered by the ``seq`` of its ``chat`` event, so that a restarted
    server shows the conversation as it was."""

    __tablename__ = "chat_lines"

    match_id: Mapped[str] = mapped_column(String(64), ForeignKey("matches.id"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    seat: Mapped[int] = mapped_column(SmallInteger)
    name: Mapped[str] = mapped_column(String(200))
    text: Mapped[str] = mapped_column(String(200))
    said_at: Mapped[datetime]

    __table_args__ = (
        CheckConstraint("seq > 0", name="seq"),
        CheckConstraint("seat IN (0, 1)", name="seat"),
    )


class InstanceLeaseRow(Base):
    """An instance's lease on the open and live matches it hosts, on a database that several instances
    share: every commit of the instance renews it, and checks its epoch; once it lapses, another instance
    takes the instance's matches over and moves the epoch on, so that the old owner can commit no more."""

    __tablename__ = "instance_leases"

    instance: Mapped[str] = mapped_column(String(200), primary_key=True)
    epoch: Mapped[int] = mapped_column(BigInteger)
    expires_at: Mapped[datetime | None]
    """When the lease lapses unless renewed; ``NULL`` once another instance took its matches over."""


class RatingRow(Base):
    """A person's Glicko-2 rating in one game (bots keep their fleet's ladder rating, never stored here)."""

    __tablename__ = "ratings"

    player_id: Mapped[str] = mapped_column(String(64), ForeignKey("players.id"), primary_key=True)
    game: Mapped[str] = mapped_column(String(32), primary_key=True)
    rating: Mapped[float] = mapped_column(Float)
    deviation: Mapped[float] = mapped_column(Float)
    volatility: Mapped[float] = mapped_column(Float)
    games: Mapped[int] = mapped_column(Integer)
    """Rated games counted in it."""
    updated_at: Mapped[datetime]
    """When its last rated game ended: the deviation grows from then on."""


class RatingChangeRow(Base):
    """What one rated match did to one person's rating: the history a profile plots, and the mark that
    the match was rated (its key lets a match rate each of its players once)."""

    __tablename__ = "rating_changes"

    match_id: Mapped[str] = mapped_column(String(64), ForeignKey("matches.id"), primary_key=True)
    player_id: Mapped[str] = mapped_column(String(64), ForeignKey("players.id"), primary_key=True)
    game: Mapped[str] = mapped_column(String(32))
    rating_before: Mapped[float] = mapped_column(Float)
    deviation_before: Mapped[float] = mapped_column(Float)
    rating_after: Mapped[float] = mapped_column(Float)
    deviation_after: Mapped[float] = mapped_column(Float)
    at: Mapped[datetime]

    __table_args__ = (Index("ix_rating_changes_player_id_game_at", "player_id", "game", "at"),)
