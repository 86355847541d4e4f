"""Where the store's writer task sends its batches: SQLite's writer process, or SQLAlchemy.

The store picks one :class:`Sink` when it opens (:func:`open_sink`) and hands it every batch. A sink
commits a batch in one transaction and settles its writes through the store's
:class:`~server.storage.pending.Ledger`; if the batch fails it retries the writes one at a time, each in
its own transaction, so that only the faulty one fails (:func:`commit_one_by_one`). Once a write finds
the database unreachable or the instance's claim taken, the rest of its batch fails at once, instead of
each waiting for the database.

- :class:`SqliteProcessSink`, for an SQLite file: the batch goes to SQLite's writer process
  (:mod:`server.storage.sqlite_writer`, which says why a process), converted on the loop by
  :class:`~server.storage.batches.SqliteBatches`. Up to :data:`SQLITE_IN_FLIGHT` batches are with it at
  once, and their writes are settled in the I/O callback that reads the answer. Retries run on pooled
  connections in this process, while later batches go on.
- :class:`SqlAlchemySink`, for PostgreSQL (and SQLite in memory or by URI): the batch runs through
  SQLAlchemy on the connection that holds the instance's claim
  (:class:`~server.storage.claims.InstanceClaim`), so that no write is made without the claim.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.sql.dml import Update

from server.storage.batches import BATCH_STATEMENTS, Part, SqliteBatches, apply_batch, batch_rows
from server.storage.claims import InstanceClaim
from server.storage.classify import is_about_the_data, is_unavailable, reason, why_not_updated
from server.storage.engine import sqlite_file
from server.storage.errors import InstanceTakenError
from server.storage.pending import PARTS, Ledger, PendingWrite

SQLITE_IN_FLIGHT = 2
"""Batches handed to SQLite's writer process at once: one committing, the next waiting in the pipe, so
that no batch waits for a turn of a busy loop between two commits."""


class Sink(Protocol):
    """Commits the writer task's batches and settles their writes."""

    async def commit(self, batch: list[PendingWrite]) -> None:
        """Commit ``batch`` in one transaction (else each write alone) and settle every write of it, perhaps
        only after returning: the writer task then goes on to the next batch."""

    async def commit_one(self, parts: tuple[Part, ...]) -> None:
        """Apply one write's rows alone, in a transaction of their own, raising their precise error."""

    async def drain(self) -> None:
        """Wait until every write handed over is settled (the store is closing)."""

    async def close(self) -> None:
        """Let go of what the sink holds of its own (the claim and the engine are the store's)."""


def open_sink(engine: AsyncEngine, claim: InstanceClaim, ledger: Ledger) -> Sink:
    """The sink for ``engine``'s database: SQLite's writer process for an SQLite file, else SQLAlchemy."""
    path = sqlite_file(engine)
    if path is None:
        return SqlAlchemySink(claim, ledger)
    return SqliteProcessSink(engine, path, ledger)


async def commit_one_by_one(sink: Sink, batch: list[PendingWrite], ledger: Ledger) -> None:
    """Retry each write of a failed ``batch`` alone, so each gets its own precise error; once the database
    is unreachable or the claim taken, fail the rest at once."""
    for index, write in enumerate(batch):
        started = ledger.now()
        try:
            await sink.commit_one(write.parts)
        except Exception as error:
            ledger.refused(write, error)
            if is_unavailable(error) or isinstance(error, InstanceTakenError):
                for rest in batch[index + 1 :]:
                    ledger.refused(rest, error)
                return
        else:
            ledger.stored([write], started)


async def apply_alone(connection: AsyncConnection, parts: tuple[Part, ...]) -> None:
    """Apply one write's rows by themselves, raising the precise error of the first that fails."""
    for part in parts:
        statement = BATCH_STATEMENTS[part.kind]
        result = await connection.execute(statement, part.params)
        if isinstance(statement, Update) and result.rowcount == 0:
            raise await why_not_updated(connection, part)


class SqliteProcessSink:
    """Batches committed by SQLite's writer process, :data:`SQLITE_IN_FLIGHT` at most at once; failed ones
    retried on the engine's pooled connections."""

    def __init__(self, engine: AsyncEngine, path: str, ledger: Ledger) -> None:
        self.batches = SqliteBatches(path, engine.dialect)
        self._engine = engine
        self._ledger = ledger
        self._in_flight = 0
        """Batches handed to the writer process and not answered yet."""
        self._slot = asyncio.Event()
        """Set when one of those is answered, or a retry of one ends."""
        self._retrying: set[asyncio.Task[None]] = set()

    async def commit(self, batch: list[PendingWrite]) -> None:
        """Hand ``batch`` to the writer process once fewer than :data:`SQLITE_IN_FLIGHT` wait for their
        commit, without waiting for its own: its writes are settled in the answer's I/O callback."""
        while self._in_flight >= SQLITE_IN_FLIGHT:
            await self._next_answer()
        batches, ledger = self.batches, self._ledger
        try:
            await batches.start()
            converted = batches.convert(batch_rows(map(PARTS, batch)))
        except Exception as error:  # the writer cannot start, or a value cannot be converted
            ledger.retrying(batch, reason(error))
            await commit_one_by_one(self, batch, ledger)
            return
        self._in_flight += 1  # (before sending: a writer found gone answers at once)
        batches.send(converted, functools.partial(self._answered, batch, ledger.now()))

    def _answered(self, batch: list[PendingWrite], started: float, failure: str | None) -> None:
        self._in_flight -= 1
        self._slot.set()
        ledger = self._ledger
        if failure is None:
            ledger.stored(batch, started)
            return
        ledger.retrying(batch, failure)
        retry = ledger.loop.create_task(commit_one_by_one(self, batch, ledger), name="plyarena-store-retry")
        self._retrying.add(retry)
        retry.add_done_callback(self._retried)

    def _retried(self, retry: asyncio.Task[None]) -> None:
        self._retrying.discard(retry)
        self._slot.set()

    async def commit_one(self, parts: tuple[Part, ...]) -> None:
        """On a pooled connection of this process: the writer process may be what failed."""
        async with self._engine.begin() as connection:
            await apply_alone(connection, parts)

    async def drain(self) -> None:
        while self._in_flight or self._retrying:
            await self._next_answer()

    async def _next_answer(self) -> None:
        self._slot.clear()
        await self._slot.wait()

    async def close(self) -> None:
        """Let the writer process commit what it was sent, and exit."""
        await self.batches.close()


class SqlAlchemySink:
    """Batches applied one after the other through SQLAlchemy, on the connection that holds the claim."""

    def __init__(self, claim: InstanceClaim, ledger: Ledger) -> None:
        self._claim = claim
        self._ledger = ledger

    async def commit(self, batch: list[PendingWrite]) -> None:
        ledger = self._ledger
        started = ledger.now()
        try:
            connection = await self._claim.connection()
            async with connection.begin():
                await self._claim.fence(connection)
                if len(batch) == 1:
                    await apply_alone(connection, batch[0].parts)
                else:
                    await apply_batch(connection, batch_rows(map(PARTS, batch)))
        except Exception as error:
            await self._drop_connection_unless_about_the_data(error)
            ledger.retrying(batch, reason(error))
            await commit_one_by_one(self, batch, ledger)
            return
        ledger.stored(batch, started)

    async def commit_one(self, parts: tuple[Part, ...]) -> None:
        try:
            connection = await self._claim.connection()
            async with connection.begin():
                await self._claim.fence(connection)
                await apply_alone(connection, parts)
        except Exception as error:
            await self._drop_connection_unless_about_the_data(error)
            raise

    async def _drop_connection_unless_about_the_data(self, error: Exception) -> None:
        """After any error but a refusal of the data, the connection may be broken: the next write opens
        another (and takes the claim again on it)."""
        if not is_about_the_data(error):
            await self._claim.drop_connection()

    async def drain(self) -> None:
        """Nothing to wait for: each batch is settled before :meth:`commit` returns."""

    async def close(self) -> None:
        """Nothing of its own: the claim's connection closes with the claim."""
