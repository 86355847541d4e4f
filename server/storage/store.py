"""Durable records of players and matches, written through one group-committing writer.

Every write (a new player, a match, a seat, a move, a result, a chat line) is queued for one
writer task. The writer takes everything queued so far, up to ``max_batch``
writes, applies it in one transaction and commits once; writes queued after it
took its batch form the next one. So the cost of a commit (an fsync on SQLite, a
round trip on PostgreSQL) is shared by every match that moved meanwhile,
without adding any delay when the server is quiet. Each caller
awaits its own future, which the writer resolves only after the commit that
holds its write: a move is acknowledged only once it is durable. The methods
that write queue their write when called and return that future, with no
coroutine around it: under load thousands of writes wait for their commits at
once, and each coroutine would be one more object for the collector to visit.
A caller that answers in callbacks (the server's moves) gives a callback
instead (:meth:`Store.commit_then`), called as soon as the commit's answer is
read, with no future and no turn of the loop in between.

A batch costs a handful of statements however many writes it holds: its
writes are applied kind by kind (new players, matches, seats, starts, moves,
results, chat lines), each kind as one multi-row statement, in that order, which is the
order in which any one match's writes are queued (see
:mod:`server.storage.batches`). On PostgreSQL each statement is a round trip
through the event loop. On an SQLite file the batch goes to SQLite's writer
process (:mod:`server.storage.sqlite_writer`), which applies it on a plain
``sqlite3`` connection and commits: the loop serves everyone else meanwhile,
where a thread would have fought it for the GIL (``plyarena bench store``).
Two batches may be with the writer at once, one committing and the next
waiting in the pipe, and the writes' futures resolve (their callbacks are
called) in the I/O callback that reads the answer: no batch waits for a turn
of a busy loop between two commits.

If a batch fails, its writes are retried one at a time, each in its own
transaction, so only the faulty one fails (say, a duplicate ply) and the others
commit (on SQLite, while later batches go on: a caller that needs one write
stored before another awaits the first, as the match host does); if the
database itself is unreachable, the remaining writes fail at once instead of
each waiting for it. A write that fails raises a
:class:`~server.storage.errors.StorageError` and nothing of it is stored: the
writes given to one :meth:`Store.commit` (a move and the result it brings, a
game's end and its rematch) commit together or not at all. One writer also
means SQLite rarely sees two of our writers compete for its lock (only a
retried write does). Reads use their own pooled connections and never wait for the writer
(SQLite runs in WAL mode).

A caller cancelled before its write reached the database withdraws the write; one
cancelled later may find it stored. If the connection drops during COMMIT itself,
the database may have committed a write reported as failed: the server then
finds the move stored when it restarts, which only ever errs towards keeping a move.

How a restarted server finds its state: every match row names the instance
that hosts it (``host``). On start, the server opens the store (which upgrades the
schema to the newest migration), calls :meth:`Store.unfinished_matches` with its
instance id and gets every open or live match it was hosting, with seats and
every committed move in ply order, and its last chat lines. Replaying those moves
with the rules rebuilds each position; the clocks after the last move, its
``played_at`` time and the match's time control rebuild the clocks. Since a move
(or a chat line) is sent only after its commit, every one a player saw is among them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from operator import attrgetter
from typing import Self

import msgspec
from sqlalchemy import Select, func, or_, select, text, tuple_
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import aliased, selectinload
from sqlalchemy.sql.dml import Update

from server.storage import claims, writes
from server.storage.batches import BATCH_STATEMENTS, Kind, Part, SqliteBatches, apply_batch, batch_rows
from server.storage.claims import InstanceClaim
from server.storage.classify import (
    closed_error,
    is_about_the_data,
    is_unavailable,
    reason,
    storage_error,
    why_not_updated,
    write_name,
)
from server.storage.engine import create_engine, failure_reason, safe_url
from server.storage.errors import (
    DatabaseOpenError,
    DatabaseUnavailableError,
    InstanceTakenError,
    StorageError,
    StoreClosedError,
)
from server.storage.migrate import upgrade_to_head
from server.storage.models import UNFINISHED_STATUSES, ChatLineRow, MatchRow, MoveRow, PlayerRow, SeatRow
from server.storage.records import (
    ChatRecord,
    EngineInfo,
    MatchRecord,
    MoveRecord,
    PlayerRecord,
    SeatRecord,
)
from server.storage.stats import WriteStats
from server.storage.writes import Write

log = logging.getLogger(__name__)

DEFAULT_MAX_BATCH = 10_000
"""Writes per transaction, at most. A commit takes a few turns of the event loop (one per statement), and a
busy loop turns slowly, so this caps throughput at about ``max_batch`` per few turns: it must stay well
above what arrives meanwhile (a thousand capped a loaded server at a few hundred moves a second)."""
MAX_LIST_LIMIT = 200
SQLITE_IN_FLIGHT = 2
"""Batches handed to SQLite's writer process at once: one committing, the next waiting in the pipe."""


Committed = Callable[[StorageError | None], None]
"""Told, once a write's commit is over, ``None`` if it is stored, else why nothing of it is (see
:meth:`Store.commit_then`)."""


class _Write(msgspec.Struct, eq=False):
    """One caller's write, waiting for the writer task: its rows, and the future its caller awaits or the
    callback it gave (:meth:`Store.commit_then`).

    Nothing else is kept: under load thousands wait at once, each one more set of objects for the
    garbage collector to scan. What a failed write needs (its name, its precise error) comes from its
    first row when it fails. A struct, not a dataclass: its ``__init__`` is in C, and every write makes one.
    """

    parts: tuple[Part, ...]
    future: asyncio.Future[None] | None
    queued_at: float
    then: Committed | None = None

    @property
    def what(self) -> str:
        """Names the write in error messages, e.g. "move 12 of match 'k3x9'"."""
        return write_name(self.parts[0])

    @property
    def given_up(self) -> bool:
        """Whether its caller stopped waiting before it was written (its future cancelled)."""
        return self.future is not None and self.future.cancelled()

    def settle(self, error: StorageError | None) -> None:
        """Tell the caller that the commit is over: stored if ``error`` is ``None``."""
        then = self.then
        if then is not None:
            self.then = None  # (told once)
            try:
                then(error)
            except Exception:  # (one caller's failure is not the other writes')
                log.exception("a commit's callback failed")
            return
        future = self.future
        if future is not None and not future.done():
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)


_PARTS = attrgetter("parts")
"""A :class:`_Write`'s rows (for :func:`batch_rows`, in C)."""


class Store:
    """The server's database: players, matches, seats, moves and chat lines. Open it with :meth:`open`."""

    def __init__(self, engine: AsyncEngine, *, max_batch: int = DEFAULT_MAX_BATCH) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be at least 1, not {max_batch}")
        self._engine = engine
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        self._sqlite = _sqlite_batches(engine)
        self._claim = InstanceClaim(engine, _sqlite_path(engine))
        """The instance's claim, and on PostgreSQL the writer's connection, which holds it."""
        self._max_batch = max_batch
        self._queue: list[_Write] = []
        self._loop = asyncio.get_running_loop()
        """Looked up once: on Python 3.11 each lookup is a ``getpid`` system call, and each write needs it."""
        self._wakeup = asyncio.Event()
        """Set when a write is queued while none was, or when the store closes: the writer waits for it only
        with nothing queued."""
        self._in_flight = 0
        """Batches handed to SQLite's writer process and not answered yet."""
        self._slot = asyncio.Event()
        """Set when one of those is answered, or a retry of one ends."""
        self._retrying: set[asyncio.Task[None]] = set()
        self._closing = False
        self._writer = asyncio.create_task(self._write_loop(), name="plyarena-store-writer")
        self.stats = WriteStats()

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
            _open_sqlite_file(engine)
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

    async def claim_instance(self, instance_id: str) -> None:
        """Hold, while this store is open, the claim that one server runs as ``instance_id``.

        Raises :class:`InstanceTakenError` while another server holds it, :class:`DatabaseOpenError` if
        an SQLite file's lock file cannot be opened or locked (see :class:`InstanceClaim
        <server.storage.claims.InstanceClaim>`). Every write goes through the connection that holds the
        claim on PostgreSQL, so none is made without it; if another server takes it meanwhile,
        :attr:`claim_lost` is set.
        """
        await self._claim.claim(instance_id)

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
            if self._sqlite is not None:
                await self._sqlite.close()
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

    async def player_by_token_hash(self, token_hash: str) -> PlayerRecord | None:
        async with self._reading("player lookup"), self._sessions() as session:
            row = await session.scalar(select(PlayerRow).where(PlayerRow.token_hash == token_hash))
        return None if row is None else _player_record(row)

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
            self._queue_write(_Write(parts, future, self._loop.time()))
        return future

    def commit_then(self, then: Committed, write: Write, *more: Write) -> None:
        """As :meth:`commit`, but call ``then`` once the commit is over, with ``None`` or the
        :class:`StorageError`, instead of resolving a future: called in the store's own callback (the
        commit's answer), never before this returns.

        For the server's moves: a future would be made for each, and once resolved its callback would
        wait for a turn of the loop, after everything else that the commit's answer resolved. Called at
        once, the move's players have their answer as soon as its batch is committed.
        """
        parts = (*write, *(part for other in more for part in other)) if more else write
        if self._closing:
            self._loop.call_soon(then, closed_error(parts))
        else:
            self._queue_write(_Write(parts, None, self._loop.time(), then))

    def _queue_write(self, write: _Write) -> None:
        queue = self._queue
        if not queue:  # (with writes queued already, the writer is not waiting: it takes them next)
            self._wakeup.set()
        queue.append(write)

    # ------------------------------------------------------------------- reads

    async def unfinished_matches(self, host: str, *, last_chat: int = 0) -> list[MatchRecord]:
        """The open and live matches hosted by instance ``host``, oldest first, with seats, moves and
        each match's last ``last_chat`` chat lines (read for all of them in one query)."""
        statement = (
            _with_seats(select(MatchRow))
            .options(selectinload(MatchRow.moves))
            .where(MatchRow.host == host, MatchRow.status.in_(UNFINISHED_STATUSES))
            .order_by(MatchRow.created_at, MatchRow.id)
        )
        async with self._reading("unfinished matches"), self._sessions() as session:
            rows = (await session.scalars(statement)).all()
            chat = await self._last_chat(session, host, last_chat) if rows and last_chat > 0 else {}
        return [
            msgspec.structs.replace(_match_record(row, with_moves=True), chat=tuple(chat.get(row.id, ())))
            for row in rows
        ]

    @staticmethod
    async def _last_chat(session: AsyncSession, host: str, last: int) -> dict[str, list[ChatRecord]]:
        """The last ``last`` chat lines of each unfinished match of ``host``, oldest first, by match."""
        newest_first = (
            func.row_number()
            .over(partition_by=ChatLineRow.match_id, order_by=ChatLineRow.seq.desc())
            .label("newest_first")
        )
        ranked = (
            select(ChatLineRow, newest_first)
            .join(MatchRow, MatchRow.id == ChatLineRow.match_id)
            .where(MatchRow.host == host, MatchRow.status.in_(UNFINISHED_STATUSES))
            .subquery()
        )
        lines = aliased(ChatLineRow, ranked)
        statement = select(lines).where(ranked.c.newest_first <= last).order_by(lines.match_id, lines.seq)
        chat: dict[str, list[ChatRecord]] = {}
        for row in await session.scalars(statement):
            chat.setdefault(row.match_id, []).append(_chat_record(row))
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
        if not all(_storable(value) for value in (game, status, player_id, before) if value is not None):
            return []
        public = func.coalesce(MatchRow.options["visibility"].as_string(), "public") == "public"
        if private_of is not None and _storable(private_of):
            public = or_(
                public, MatchRow.id.in_(select(SeatRow.match_id).where(SeatRow.player_id == private_of))
            )
        statement = _with_seats(select(MatchRow)).where(public)
        if game is not None:
            statement = statement.where(MatchRow.game == game)
        if status is not None:
            statement = statement.where(MatchRow.status == status)
        if player_id is not None:
            seated = select(SeatRow.match_id).where(SeatRow.player_id == player_id)
            statement = statement.where(MatchRow.id.in_(seated))
        statement = statement.order_by(MatchRow.created_at.desc(), MatchRow.id.desc())
        statement = statement.limit(min(limit, MAX_LIST_LIMIT + 1))
        async with self._reading("match list"), self._sessions() as session:
            if before is not None:
                cursor = (
                    await session.execute(
                        select(MatchRow.created_at, MatchRow.id).where(MatchRow.id == before)
                    )
                ).one_or_none()
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
        batch: list[_Write] = []
        try:
            while batch := await self._next_batch():
                if self._sqlite is not None:
                    await self._send_to_sqlite(self._sqlite, batch)
                else:
                    await self._commit(batch)
            while self._in_flight or self._retrying:  # (closing: what was sent is answered first)
                self._slot.clear()
                await self._slot.wait()
        except BaseException as error:
            # Only a cancelled or broken writer gets here: refuse new writes, fail those still waiting.
            self._closing = True
            for write in (*batch, *self._queue):
                write.settle(StoreClosedError(f"{write.what} not stored: the store writer stopped"))
            self._queue.clear()
            if not isinstance(error, asyncio.CancelledError):
                log.exception("store writer stopped")
            raise

    async def _next_batch(self) -> list[_Write]:
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

    async def _send_to_sqlite(self, sqlite: SqliteBatches, batch: list[_Write]) -> None:
        """Hand ``batch`` to SQLite's writer process without waiting for its commit, once fewer than
        :data:`SQLITE_IN_FLIGHT` batches wait for theirs: one commits while the next waits in the pipe,
        so a batch never waits for a turn of the loop between two commits. Its writes' futures
        resolve in the answer's own I/O callback."""
        while self._in_flight >= SQLITE_IN_FLIGHT:
            self._slot.clear()
            await self._slot.wait()
        try:
            await sqlite.start()
            converted = sqlite.convert(batch_rows(map(_PARTS, batch)))
        except Exception as error:  # the writer cannot start, or a value cannot be converted
            if len(batch) > 1:
                log.info("a batch of %d writes failed (%s); retrying one by one", len(batch), reason(error))
                self.stats.split_batches += 1
            await self._commit_one_by_one(batch)  # each with its own precise error, on pooled connections
            return
        self._in_flight += 1  # (before sending: a writer found gone answers at once)
        sqlite.send(converted, functools.partial(self._answered, batch, self._loop.time()))

    def _answered(self, batch: list[_Write], started: float, failure: str | None) -> None:
        self._in_flight -= 1
        self._slot.set()
        if failure is None:
            self._succeed(batch, started, self._loop.time())
            return
        if len(batch) > 1:
            log.info("a batch of %d writes failed (%s); retrying one by one", len(batch), failure)
            self.stats.split_batches += 1
        retry = self._loop.create_task(self._commit_one_by_one(batch), name="plyarena-store-retry")
        self._retrying.add(retry)
        retry.add_done_callback(self._retried)

    def _retried(self, retry: asyncio.Task[None]) -> None:
        self._retrying.discard(retry)
        self._slot.set()

    async def _commit(self, batch: list[_Write]) -> None:
        loop = self._loop
        started = loop.time()
        rows = batch_rows(map(_PARTS, batch))
        try:
            connection = await self._claim.connection()
            async with connection.begin():
                if len(batch) == 1:
                    await _apply_alone(connection, batch[0].parts)
                else:
                    await apply_batch(connection, rows)
        except Exception as error:
            if not is_about_the_data(error):
                await self._claim.drop_connection()  # (it may be broken: the next write opens another)
            if len(batch) > 1:
                log.info("a batch of %d writes failed (%s); retrying one by one", len(batch), reason(error))
                self.stats.split_batches += 1
            await self._commit_one_by_one(batch)  # each with its own precise error
            return
        self._succeed(batch, started, loop.time())

    async def _commit_one_by_one(self, batch: list[_Write]) -> None:
        loop = self._loop
        for index, write in enumerate(batch):
            started = loop.time()
            try:
                if self._sqlite is not None:  # (a pooled connection, in this process)
                    async with self._engine.begin() as connection:
                        await _apply_alone(connection, write.parts)
                else:  # (the writer's, which holds the claim)
                    connection = await self._claim.connection()
                    async with connection.begin():
                        await _apply_alone(connection, write.parts)
            except Exception as error:
                if self._sqlite is None and not is_about_the_data(error):
                    await self._claim.drop_connection()
                self._fail(write, error)
                if is_unavailable(error) or isinstance(error, InstanceTakenError):
                    for rest in batch[index + 1 :]:
                        self._fail(rest, error)
                    return
            else:
                self._succeed([write], started, loop.time())

    def _succeed(self, writes: list[_Write], started: float, committed: float) -> None:
        stats = self.stats
        stats.transactions += 1
        stats.writes += len(writes)
        stats.batch_size.observe(len(writes))
        stats.transaction_seconds.observe(committed - started)
        stats.commit_seconds.observe_all([committed - write.queued_at for write in writes])
        moves, new_move = 0, Kind.NEW_MOVE  # (looked up once: see writes._NEW_MOVE)
        for write in writes:
            if write.parts[0].kind == new_move:
                moves += 1
            write.settle(None)
        stats.moves += moves

    def _fail(self, write: _Write, error: Exception) -> None:
        self.stats.failed_writes += 1
        write.settle(storage_error(write.parts[0], error))

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


def _sqlite_path(engine: AsyncEngine) -> str | None:
    """The file of an SQLite database given by its path; ``None`` for others (and in-memory ones)."""
    path = engine.url.database
    if engine.dialect.name != "sqlite" or not path or path == ":memory:" or path.startswith("file:"):
        return None
    return path


def _sqlite_batches(engine: AsyncEngine) -> SqliteBatches | None:
    """The writer process's batches, for an SQLite file (see :mod:`server.storage.batches`)."""
    path = _sqlite_path(engine)
    return None if path is None else SqliteBatches(path, engine.dialect)


def _open_sqlite_file(engine: AsyncEngine) -> None:
    """Open an SQLite file once, directly, so that one that cannot be opened (a missing directory, a
    file that is not a database) fails here. Failing first in aiosqlite's thread, it would also print
    that thread's traceback once the event loop has gone."""
    path = _sqlite_path(engine)
    if path is not None:
        with contextlib.closing(sqlite3.connect(path)) as connection:
            connection.execute("PRAGMA schema_version")  # reads the header: "file is not a database"


async def _apply_alone(connection: AsyncConnection, parts: tuple[Part, ...]) -> None:
    """Apply one write's rows by themselves, raising the precise error of the first that fails."""
    for part in parts:
        statement = BATCH_STATEMENTS[part.kind]
        result = await connection.execute(statement, part.params)
        if isinstance(statement, Update) and result.rowcount == 0:
            raise await why_not_updated(connection, part)


def _storable(text: str) -> bool:
    """Whether ``text`` could be a stored value: PostgreSQL text cannot hold NUL, so an id with one names
    nothing here (and PostgreSQL would answer a query for it with an error, not with no rows)."""
    return "\x00" not in text


def _chat_record(row: ChatLineRow) -> ChatRecord:
    return ChatRecord(row.match_id, row.seq, row.seat, row.name, row.text, row.said_at)


def _with_seats(statement: Select[MatchRow]) -> Select[MatchRow]:
    return statement.options(selectinload(MatchRow.seats).joinedload(SeatRow.player))


def _player_record(row: PlayerRow) -> PlayerRecord:
    return PlayerRecord(id=row.id, name=row.name, is_bot=row.is_bot, created_at=row.created_at)


def _move_record(row: MoveRow) -> MoveRecord:
    clocks = None if row.clock0_ms is None or row.clock1_ms is None else (row.clock0_ms, row.clock1_ms)
    has_engine = any(value is not None for value in (row.score, row.depth, row.nodes, row.pv))
    engine = EngineInfo(row.score, row.depth, row.nodes, tuple(row.pv or ())) if has_engine else None
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
