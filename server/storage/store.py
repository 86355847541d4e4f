"""Durable records of players and matches, written through one group-committing writer.

Every write (a new player, a match, a seat, a move, a result, a chat line) is queued for one writer
task. The writer takes everything queued so far, up to ``max_batch`` writes, and commits it in one
transaction; writes queued meanwhile form the next batch. So the cost of a commit (an fsync on SQLite,
a round trip on PostgreSQL) is shared by every match that moved meanwhile, with no delay added when the
server is quiet. :meth:`Store.commit` queues a write when called and returns a future, with no coroutine
around it (thousands may wait at once), which resolves only after the commit that holds the write: a
move is acknowledged only once it is durable. A batch is applied kind by kind, one multi-row statement
per kind (:mod:`server.storage.batches`), and goes to the store's sink (:mod:`server.storage.sinks`):
SQLite's writer process for an SQLite file, SQLAlchemy otherwise.

A failed batch is retried one write at a time, so only the faulty write fails (say, a duplicate ply);
if the database itself is unreachable, the rest fail at once. A write that fails raises a
:class:`~server.storage.errors.StorageError` and nothing of it is stored: the writes given to one
:meth:`Store.commit` (a move and the result it brings, a game's end and its rematch) commit together or
not at all. Reads use their own pooled connections and never wait for the writer (SQLite runs in WAL
mode).

A caller cancelled before its write reached the database withdraws the write; one cancelled later may
find it stored. If the connection drops during COMMIT itself, the database may have committed a write
reported as failed: the server then finds the move stored when it restarts, which only ever errs
towards keeping a move.

How a restarted server finds its state: every match row names the instance that hosts it (``host``).
On start, the server opens the store (which upgrades the schema to the newest migration), calls
:meth:`Store.unfinished_matches` with its instance id and gets every open or live match it was hosting,
with seats, every committed move in ply order, and its last chat lines. Replaying those moves rebuilds
each position; the clocks after the last move, its ``played_at`` time and the match's time control
rebuild the clocks. Since a move (or a chat line) is sent only after its commit, every one a player saw
is among them.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import uuid
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Self

import msgspec
from sqlalchemy import ColumnElement, Row, Select, func, or_, select, text, tuple_
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import aliased, selectinload

from server.storage import claims, writes
from server.storage.claims import InstanceClaim
from server.storage.classify import closed_error, is_unavailable, reason
from server.storage.engine import check_sqlite_file, create_engine, failure_reason, safe_url, sqlite_file
from server.storage.errors import DatabaseOpenError, DatabaseUnavailableError, StoreClosedError
from server.storage.leases import LEASE_S
from server.storage.migrate import upgrade_to_head
from server.storage.models import (
    UNFINISHED_STATUSES,
    ChatLineRow,
    MatchRow,
    MoveRow,
    PlayerRow,
    SeatRow,
    SessionRow,
)
from server.storage.pending import Ledger, PendingWrite
from server.storage.profiles import Profiles
from server.storage.ratings import RatingBook
from server.storage.records import (
    ChatRecord,
    EngineInfo,
    MatchRecord,
    MoveRecord,
    PlayerRecord,
    SeatRecord,
)
from server.storage.sinks import open_sink
from server.storage.stats import WriteStats
from server.storage.writes import Write

log = logging.getLogger(__name__)

DEFAULT_MAX_BATCH = 10_000
"""Writes per transaction, at most: it must stay well above what arrives while a commit takes its few
turns of a busy event loop, or it caps the server's moves a second."""
MAX_LIST_LIMIT = 200


class Store:
    """The server's database: players, matches, seats, moves and chat lines. Open it with :meth:`open`."""

    def __init__(self, engine: AsyncEngine, *, max_batch: int = DEFAULT_MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, not {max_batch}")
        self._engine = engine
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        self._claim = InstanceClaim(engine, sqlite_file(engine))
        """The instance's claim, and on PostgreSQL the writer's connection, which holds it."""
        self._ledger = Ledger(WriteStats())
        self._sink = open_sink(engine, self._claim, self._ledger)
        self._max_batch = max_batch
        self._queue: list[PendingWrite] = []
        self._loop = self._ledger.loop
        self._wakeup = asyncio.Event()
        """Set when a write is queued while none was, or when the store closes: the writer waits for it only
        with nothing queued."""
        self._closing = False
        self._writer = asyncio.create_task(self._write_loop(), name="plyarena-store-writer")
        self.ratings = RatingBook(engine)
        """People's ratings: read, and each rated match applied once (:mod:`server.storage.ratings`)."""
        self.profiles = Profiles(engine)
        """What a player's profile shows (:mod:`server.storage.profiles`)."""

    @property
    def stats(self) -> WriteStats:
        """What the writer has done since the store opened (for ``/metrics``)."""
        return self._ledger.stats

    @classmethod
    async def open(cls, url: str, *, migrate: bool = True, max_batch: int = DEFAULT_MAX_BATCH) -> Store:
        """Connect to ``url`` (SQLite or PostgreSQL) and, with ``migrate``, upgrade its schema to head.

        Raises :class:`DatabaseOpenError` when the URL is not one, or the database cannot be reached,
        opened or migrated.
        """
        try:
            engine = create_engine(url)
        except ValueError as error:
            raise DatabaseOpenError(str(error)) from error
        try:
            check_sqlite_file(engine)
            if migrate:
                await upgrade_to_head(engine)
        except (OSError, sqlite3.Error, SQLAlchemyError) as error:
            await engine.dispose()
            why = failure_reason(error)
            raise DatabaseOpenError(f"cannot open the database {safe_url(url)}: {why}") from error
        except BaseException:
            await engine.dispose()
            raise
        return cls(engine, max_batch=max_batch)

    async def claim_instance(self, instance_id: str, *, lease_s: float = LEASE_S) -> None:
        """Hold, while this store is open, the claim that one server runs as ``instance_id``.

        Raises :class:`InstanceTakenError` while another server holds it, :class:`DatabaseOpenError` if
        an SQLite file's lock file cannot be opened or locked (see :class:`InstanceClaim
        <server.storage.claims.InstanceClaim>`). Every write goes through the connection that holds the
        claim on PostgreSQL, so none is made without it; if another server takes it meanwhile,
        :attr:`claim_lost` is set. On PostgreSQL the instance also starts a lease of ``lease_s`` on its
        matches, renewed by each commit (see :mod:`server.storage.leases`).
        """
        await self._claim.claim(instance_id, lease_s)

    async def adopt_lapsed(self) -> list[str]:
        """Host here the open and live matches of every instance whose lease lapsed (on PostgreSQL; none
        on SQLite): the ids of those taken over, to be restored by the caller."""
        return await self._claim.adopt_lapsed()

    @property
    def claim_lost(self) -> asyncio.Event:
        """Set when the claim, lost with the writer's connection, is found taken by another server: this
        store then refuses every write, and its server must stop (two would host the same matches)."""
        return self._claim.lost

    async def close(self) -> None:
        """Commit what is queued, stop the writer and close every connection."""
        if not self._closing:
            self._closing = True
            self._wakeup.set()
        try:
            await self._writer
        finally:
            await self._sink.close()
            await self._claim.close()
            await self._engine.dispose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def backend(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self._engine.dialect.name

    async def ping(self) -> None:
        """Raise :class:`DatabaseUnavailableError` unless the database answers (for ``/healthz``)."""
        async with self._reading("ping"), self._engine.connect() as connection:
            await connection.execute(text("SELECT 1"))

    # ----------------------------------------------------------------- players

    async def create_player(self, name: str, token_hash: str, *, is_bot: bool = False) -> PlayerRecord:
        """Store a new player; the caller keeps the token and hands over only its hash."""
        player = PlayerRecord(id=uuid.uuid4().hex, name=name, is_bot=is_bot, created_at=datetime.now(UTC))
        await self.commit(writes.new_player(player, token_hash))
        return player

    async def rating_of(self, player_id: str, game: str) -> tuple[float, float]:
        """``player_id``'s rating and deviation in ``game`` now; 1500 and 350 for one not yet rated in it."""
        return await self.ratings.rating_of(player_id, game, datetime.now(UTC))

    async def player_by_token_hash(self, token_hash: str) -> PlayerRecord | None:
        """The player a token (by its hash) names: their first token, or a login's."""
        owner = await self.token_owner(token_hash)
        return None if owner is None else owner[0]

    async def token_owner(self, token_hash: str) -> tuple[PlayerRecord, bool] | None:
        """The player a token names, and whether it is a login's (a ``sessions`` row) rather than the
        player's first token."""
        async with self._reading("player lookup"), self._sessions() as session:
            row = await session.scalar(select(PlayerRow).where(PlayerRow.token_hash == token_hash))
            if row is not None:
                return _player_record(row), False
            by_login = select(PlayerRow).join(SessionRow).where(SessionRow.token_hash == token_hash)
            row = await session.scalar(by_login)
        return None if row is None else (_player_record(row), True)

    async def claimed_player(self, name_key: str) -> tuple[PlayerRecord, str] | None:
        """The player who claimed the name folded as ``name_key``, and their password's hash."""
        async with self._reading("player lookup"), self._sessions() as session:
            row = await session.scalar(select(PlayerRow).where(PlayerRow.name_key == name_key))
        return None if row is None or row.password_hash is None else (_player_record(row), row.password_hash)

    # ----------------------------------------------------------------- matches

    def create_match(self, match: MatchRecord) -> asyncio.Future[None]:
        """Store a new match and the seats it already has (its moves come as :func:`writes.new_move
        <server.storage.writes.new_move>` writes)."""
        return self.commit(writes.new_match(match, datetime.now(UTC)))

    def start_match(self, match_id: str, started_at: datetime) -> asyncio.Future[None]:
        """Turn an open match live."""
        return self.commit(writes.match_start(match_id, started_at))

    def commit(self, write: Write, *more: Write) -> asyncio.Future[None]:
        """Commit ``write`` and ``more`` (built by :mod:`server.storage.writes`) in one transaction: all of
        them, or none. The future resolves once they are committed; awaiting it raises a :class:`StorageError`
        named after the first of them (a duplicate move, a match already over, the database
        unavailable...), and then nothing of them is stored.

        The write is queued when called; a closed store's refusal comes through the future too, so callers
        meet every storage error where they await the write.
        """
        parts = (*write, *(part for other in more for part in other)) if more else write
        future = self._loop.create_future()
        if self._closing:
            future.set_exception(closed_error(parts))
        else:
            self._queue_write(PendingWrite(parts, future, self._loop.time()))
        return future

    def _queue_write(self, write: PendingWrite) -> None:
        queue = self._queue
        if not queue:  # (with writes queued already, the writer is not waiting: it takes them next)
            self._wakeup.set()
        queue.append(write)

    # ------------------------------------------------------------------- reads

    async def unfinished_matches(
        self, host: str, *, last_chat: int = 0, only: Collection[str] | None = None
    ) -> list[MatchRecord]:
        """The open and live matches hosted by instance ``host`` (of them, those whose ids are in ``only``,
        when given), oldest first, with seats, moves and each match's last ``last_chat`` chat lines and the
        count of all its lines (read for all of them in one query)."""
        hosted = _unfinished_on(host, only)
        statement = (
            _with_seats(select(MatchRow))
            .options(selectinload(MatchRow.moves))
            .where(*hosted)
            .order_by(MatchRow.created_at, MatchRow.id)
        )
        async with self._reading("unfinished matches"), self._sessions() as session:
            rows = (await session.scalars(statement)).all()
            chat = await self._last_chat(session, hosted, last_chat) if rows and last_chat > 0 else {}
        return [
            msgspec.structs.replace(
                _match_record(row, with_moves=True),
                chat=tuple(chat[row.id][0]) if row.id in chat else (),
                chat_count=chat[row.id][1] if row.id in chat else 0,
            )
            for row in rows
        ]

    @staticmethod
    async def _last_chat(
        session: AsyncSession, hosted: list[ColumnElement[bool]], last: int
    ) -> dict[str, tuple[list[ChatRecord], int]]:
        """The last ``last`` chat lines of each match that ``hosted`` selects, oldest first, and how many it
        has in all, by match."""
        newest_first = (
            func.row_number()
            .over(partition_by=ChatLineRow.match_id, order_by=ChatLineRow.seq.desc())
            .label("newest_first")
        )
        in_all = func.count().over(partition_by=ChatLineRow.match_id).label("in_all")
        ranked = (
            select(ChatLineRow, newest_first, in_all)
            .join(MatchRow, MatchRow.id == ChatLineRow.match_id)
            .where(*hosted)
            .subquery()
        )
        lines = aliased(ChatLineRow, ranked)
        statement = (
            select(lines, ranked.c.in_all)
            .where(ranked.c.newest_first <= last)
            .order_by(lines.match_id, lines.seq)
        )
        chat: dict[str, tuple[list[ChatRecord], int]] = {}
        for row, count in await session.execute(statement):
            chat.setdefault(row.match_id, ([], count))[0].append(_chat_record(row))
        return chat

    async def list_matches(
        self,
        *,
        game: str | None = None,
        status: str | None = None,
        player_id: str | None = None,
        limit: int = 50,
        before: str | None = None,
        private_of: str | None = None,
    ) -> list[MatchRecord]:
        """A page of public matches, newest first, with seats but without moves; with ``private_of``, also
        the private matches in which that player holds a seat (others reach a private match by its id).

        ``before`` is the id of the last match of the previous page; an id the
        database does not know gives an empty page. ``limit`` is capped at
        :data:`MAX_LIST_LIMIT` (and one more, for a caller that looks ahead).
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        if not _all_storable(game, status, player_id, before):
            return []
        statement = _listed_matches(game, status, player_id, private_of).limit(min(limit, MAX_LIST_LIMIT + 1))
        async with self._reading("match list"), self._sessions() as session:
            if before is not None:
                cursor = await _place_of(session, before)
                if cursor is None:
                    return []
                statement = statement.where(tuple_(MatchRow.created_at, MatchRow.id) < tuple(cursor))
            rows = (await session.scalars(statement)).all()
        return [_match_record(row, with_moves=False) for row in rows]

    async def get_match(self, match_id: str) -> MatchRecord | None:
        """One match with its seats, every move and its rematch's id, or ``None``."""
        if not _storable(match_id):
            return None
        statement = (
            _with_seats(select(MatchRow)).options(selectinload(MatchRow.moves)).where(MatchRow.id == match_id)
        )
        rematch = select(MatchRow.id).where(MatchRow.rematch_of == match_id)
        async with self._reading(f"match {match_id!r}"), self._sessions() as session:
            row = await session.scalar(statement)
            rematch_id = None if row is None else await session.scalar(rematch)
        return None if row is None else _match_record(row, with_moves=True, rematch_id=rematch_id)

    # ------------------------------------------------------------ write path

    async def _write_loop(self) -> None:
        batch: list[PendingWrite] = []
        try:
            while batch := await self._next_batch():
                await self._sink.commit(batch)
            await self._sink.drain()  # (closing: what was handed over is settled first)
        except BaseException as error:
            # Only a cancelled or broken writer gets here: refuse new writes, fail those still waiting.
            self._closing = True
            for write in (*batch, *self._queue):
                write.settle(StoreClosedError(f"{write.what} not stored: the store writer stopped"))
            self._queue.clear()
            if not isinstance(error, asyncio.CancelledError):
                log.exception("store writer stopped")
            raise

    async def _next_batch(self) -> list[PendingWrite]:
        """Everything queued (up to ``max_batch``) once there is something; empty when closed and drained."""
        while True:
            while not self._queue:
                if self._closing:
                    return []
                self._wakeup.clear()
                if not self._claim.needs_checking:
                    await self._wakeup.wait()
                    continue
                try:
                    async with asyncio.timeout(claims.CLAIM_CHECK_S):
                        await self._wakeup.wait()
                except TimeoutError:
                    await self._claim.check()
            queue, most = self._queue, self._max_batch
            # (A cancelled write's caller gave up before it was written.)
            batch = [write for write in queue[:most] if not write.given_up]
            del queue[:most]
            if batch:
                return batch

    @asynccontextmanager
    async def _reading(self, what: str) -> AsyncIterator[None]:
        try:
            yield
        except Exception as error:
            if is_unavailable(error):
                raise DatabaseUnavailableError(
                    f"{what} failed: database unavailable: {reason(error)}"
                ) from error
            raise


# --------------------------------------------------------------------- helpers


def _all_storable(*values: str | None) -> bool:
    """Whether every value given could be stored (see :func:`_storable`)."""
    return all(_storable(value) for value in values if value is not None)


def _storable(text: str) -> bool:
    """Whether ``text`` could be a stored value: PostgreSQL text cannot hold NUL, so an id with one names
    nothing here (and PostgreSQL would answer a query for it with an error, not with no rows)."""
    return "\x00" not in text


def _chat_record(row: ChatLineRow) -> ChatRecord:
    return ChatRecord(row.match_id, row.seq, row.seat, row.name, row.text, row.said_at)


def _with_seats(statement: Select[MatchRow]) -> Select[MatchRow]:
    return statement.options(selectinload(MatchRow.seats).joinedload(SeatRow.player))


def _listed_matches(
    game: str | None, status: str | None, player_id: str | None, private_of: str | None
) -> Select[MatchRow]:
    """The matches :meth:`Store.list_matches` lists, with their seats, newest first."""
    statement = _with_seats(select(MatchRow)).where(_visible_to(private_of))
    if game is not None:
        statement = statement.where(MatchRow.game == game)
    if status is not None:
        statement = statement.where(MatchRow.status == status)
    if player_id is not None:
        statement = statement.where(MatchRow.id.in_(_seated(player_id)))
    return statement.order_by(MatchRow.created_at.desc(), MatchRow.id.desc())


def _unfinished_on(host: str, only: Collection[str] | None) -> list[ColumnElement[bool]]:
    """What selects the open and live matches of ``host``, or of them those in ``only``."""
    hosted = [MatchRow.host == host, MatchRow.status.in_(UNFINISHED_STATUSES)]
    if only is not None:
        hosted.append(MatchRow.id.in_(only))
    return hosted


def _visible_to(private_of: str | None) -> ColumnElement[bool]:
    """Public matches, and with ``private_of`` the private ones in which that player holds a seat."""
    public = func.coalesce(MatchRow.options["visibility"].as_string(), "public") == "public"
    if private_of is None or not _storable(private_of):
        return public
    return or_(public, MatchRow.id.in_(_seated(private_of)))


def _seated(player_id: str) -> Select[str]:
    """The ids of the matches in which ``player_id`` holds a seat."""
    return select(SeatRow.match_id).where(SeatRow.player_id == player_id)


async def _place_of(session: AsyncSession, match_id: str) -> Row[datetime, str] | None:
    """Where ``match_id`` stands in the newest-first order of :meth:`Store.list_matches`, if it exists."""
    statement = select(MatchRow.created_at, MatchRow.id).where(MatchRow.id == match_id)
    return (await session.execute(statement)).one_or_none()


def _player_record(row: PlayerRow) -> PlayerRecord:
    return PlayerRecord(
        id=row.id,
        name=row.name,
        is_bot=row.is_bot,
        created_at=row.created_at,
        claimed=row.password_hash is not None,
    )


def _move_record(row: MoveRow) -> MoveRecord:
    clocks = None if row.clock0_ms is None or row.clock1_ms is None else (row.clock0_ms, row.clock1_ms)
    said = (row.score, row.depth, row.nodes, row.pv, row.source, row.time_ms)
    has_engine = any(value is not None for value in said)
    engine = (
        EngineInfo(row.score, row.depth, row.nodes, tuple(row.pv or ()), row.source, row.time_ms)
        if has_engine
        else None
    )
    return MoveRecord(
        match_id=row.match_id,
        ply=row.ply,
        seat=row.seat,
        notation=row.notation,
        think_ms=row.think_ms,
        played_at=row.played_at,
        clocks_ms=clocks,
        engine=engine,
    )


def _match_record(row: MatchRow, *, with_moves: bool, rematch_id: str | None = None) -> MatchRecord:
    seats = tuple(
        SeatRecord(
            seat=seat.seat, player_id=seat.player_id, player_name=seat.player.name, is_bot=seat.player.is_bot
        )
        for seat in row.seats
    )
    return MatchRecord(
        id=row.id,
        game=row.game,
        options=row.options,
        status=row.status,
        host=row.host,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        winner=row.winner,
        reason=row.reason,
        seats=seats,
        moves=tuple(_move_record(move) for move in row.moves) if with_moves else (),
        rematch_of=row.rematch_of,
        rematch_id=rematch_id,
    )
