"""SQLite's writer: a process of its own that applies and commits the store's batches on an SQLite file.

A commit on an SQLite file costs CPU (the statements, the WAL's pages, now and then a checkpoint that
copies the WAL into the database) and an fsync. On the event loop's thread the whole server stood still
through both: at 5,000 moves a second that was a fifth of a move's CPU and the loop's longest stalls
(docs/performance.md). A thread does not help: ``sqlite3`` lets go of the GIL around every row, and a
thread has to win it back from a busy loop each time (``plyarena bench store``). A process has a GIL of
its own. The loop hands it a batch, its rows already in the order of the statements and converted for
the driver, and serves everyone else while the batch commits. The child copies the WAL into the
database on a thread of its own (:class:`Checkpointer`), so that no commit waits for that either.

The two ends speak over the child's standard input and output, in frames of a 4-byte length and a
pickle. The parent first sends the statements (each one's SQL, and whether it is an update that must
change one row per parameter set); the child answers ``None`` once the database is open, or why it
cannot be. Then each frame is one batch, ``[(statement index, [values, ...]), ...]``, answered with
``None`` once it is committed, or with why it failed, nothing of it stored. One batch is in flight at a
time: the store's writer waits for each commit, and what is queued meanwhile makes the next batch.

The child runs this file by its path (``python -I sqlite_writer.py DATABASE``) and needs the standard
library only, so that it starts in a few tens of milliseconds: importing the store's modules would take
half a second, for every store opened. It stops at the end of its input: when the store closes, or
when the server dies, even by SIGKILL (the kernel closes the pipe), after the commit under way.
"""

from __future__ import annotations

import asyncio
import contextlib
import pickle
import signal
import sqlite3
import struct
import sys
import threading
from collections.abc import Sequence
from typing import IO, Any, Self

SQLITE_BUSY_TIMEOUT_MS = 10_000
"""How long an SQLite connection waits for another writer (another process, such as a migration)."""

SQLITE_WAL_AUTOCHECKPOINT_PAGES = 250
"""WAL pages after which a commit copies the WAL into the database (SQLite's default is 1,000), on the
connections that leave checkpoints to SQLite: all but the writer's, whose :class:`Checkpointer` does
them, and those rarely write (a batch retried one write at a time, a migration). That copy and the
database's fsync run inside the COMMIT; a quarter of the pages makes each such stall shorter: the move
round trip's p99 at 4,000 moves/s was lower in five runs of five against the default while the batches
committed on the event loop (docs/performance.md, 2026-11-24)."""

WAL_LIMIT_PAGES = 16_384
"""WAL pages (64 MB) past which the checkpointer stops the writer once to start the WAL over."""

Statement = tuple[str, bool]
"""A batch statement as the writer takes it: its SQL, and whether it is an update that must change one
row for each of its parameter sets."""
Batch = list[tuple[int, list[list[Any]]]]
"""A batch as the writer takes it: for each statement that has rows, its index and their values."""

_LENGTH = struct.Struct(">I")
STOP_WAIT_S = 10.0
"""How long closing waits for the child to commit what it has and exit before killing it."""


class BatchMismatchError(Exception):
    """An update of a batch changed fewer rows than it names: some write of it fails on its own."""


class WriterError(Exception):
    """A batch was not committed: the reason the writer gave, or the writer process is gone."""


def configure_sqlite_connection(dbapi_connection: Any) -> None:
    """WAL with short checkpoints, a full fsync per commit, foreign keys, and a wait for another
    process's write lock: every SQLite connection of the store, the writer's and SQLAlchemy's alike."""
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = FULL")
        cursor.execute(f"PRAGMA wal_autocheckpoint = {SQLITE_WAL_AUTOCHECKPOINT_PAGES}")
        cursor.execute("PRAGMA foreign_keys = ON")
    finally:
        cursor.close()


def connect(path: str) -> sqlite3.Connection:
    """A connection for applying batches: configured as every other, transactions begun by hand."""
    _bind_none_directly()
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        configure_sqlite_connection(connection)
    except BaseException:
        connection.close()
        raise
    return connection


def apply(connection: sqlite3.Connection, statements: Sequence[Statement], batch: Batch) -> None:
    """Apply ``batch`` in one transaction and commit; on any failure nothing of it is stored."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        for index, values in batch:
            sql, is_update = statements[index]
            changed = connection.executemany(sql, values).rowcount
            if is_update and changed != len(values):
                raise BatchMismatchError(f"{sql!r}: fewer than {len(values)} rows changed")
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


def _bind_none_directly() -> None:
    """Have ``sqlite3`` bind ``None`` (SQL NULL) without looking for a way to adapt it first.

    Python 3.11's ``sqlite3`` binds only exact ints, floats and strings as they are; for any other
    value, ``None`` included, it asks its adapters, then the protocol's ``__adapt__`` and the value's
    ``__conform__``, and the two misses each raise and clear an ``AttributeError``: a microsecond for
    each of the half dozen NULL columns of a move (its engine fields, for a person's move). An adapter
    registered for ``None`` ends the search at the first step; ``{}.get`` answers ``None`` for any
    value, in C. (It is process-wide, and changes nothing that is stored: NULL stays NULL.)
    """
    sqlite3.register_adapter(type(None), {}.get)


# --------------------------------------------------------------------- frames


def _frame(message: object) -> bytes:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(payload)) + payload


def _read_frame(source: IO[bytes]) -> object:
    """The next message from ``source``; raises :class:`EOFError` at the end of it."""
    header = source.read(_LENGTH.size)
    if len(header) < _LENGTH.size:
        raise EOFError
    (length,) = _LENGTH.unpack(header)
    payload = source.read(length)
    if len(payload) < length:
        raise EOFError
    return pickle.loads(payload)


# --------------------------------------------------------------------- the child


class Checkpointer:
    """Copies the WAL into the database on a thread of its own, after every commit, so that no commit
    waits for that copy and its fsync.

    Left to SQLite, the commit that takes the WAL past ``wal_autocheckpoint`` pages does the copy
    itself: at 5,000 moves a second the writer's commits took up to 30 ms where most take under one,
    and every move queued behind such a commit waited for it (docs/performance.md). A PASSIVE checkpoint
    copies what is committed while the writer goes on appending; when it catches up, the next commit
    starts the WAL over, so the WAL stays a few megabytes. Should it fall behind for good (the WAL past
    :data:`WAL_LIMIT_PAGES`), a RESTART checkpoint waits for the writer once and starts the WAL over.
    """

    def __init__(self, path: str) -> None:
        self._connection = connect(path)
        self._due = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="plyarena-sqlite-checkpoints", daemon=True)
        self._thread.start()

    def after_commit(self) -> None:
        self._due.set()

    def stop(self) -> None:
        self._stopping = True
        self._due.set()
        self._thread.join()
        self._connection.close()

    def _run(self) -> None:
        while True:
            self._due.wait()
            self._due.clear()
            if self._stopping:
                return
            try:
                _busy, wal_pages, _copied = self._connection.execute(
                    "PRAGMA wal_checkpoint(PASSIVE)"
                ).fetchone()
                if wal_pages > WAL_LIMIT_PAGES:
                    self._connection.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
            except sqlite3.Error as error:  # the next commit tries again
                print(f"plyarena sqlite writer: checkpoint failed: {error}", file=sys.stderr, flush=True)


def serve(path: str, source: IO[bytes], sink: IO[bytes]) -> None:
    """The child's life: open ``path``, then commit each batch from ``source`` and answer on ``sink``."""
    try:
        statements: Sequence[Statement] = _read_frame(source)  # type: ignore[assignment]
        connection = connect(path)
        connection.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer's job
        checkpointer = Checkpointer(path)
    except EOFError:
        return
    except sqlite3.Error as error:
        sink.write(_frame(f"cannot open {path}: {error}"))
        sink.flush()
        return
    try:
        sink.write(_frame(None))
        sink.flush()
        while True:
            try:
                batch: Batch = _read_frame(source)  # type: ignore[assignment]
            except EOFError:
                return
            try:
                apply(connection, statements, batch)
            except Exception as error:
                answer: str | None = f"{type(error).__name__}: {error}"
            else:
                answer = None
                checkpointer.after_commit()
            sink.write(_frame(answer))
            sink.flush()
    finally:
        checkpointer.stop()
        connection.close()  # the last connection to close copies what is left and removes the WAL


def main() -> None:
    # Interrupts go to the server, which closes the store: the writer stops at the end of its input.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(sys.argv[1], sys.stdin.buffer, sys.stdout.buffer)


# --------------------------------------------------------------------- the parent


class SqliteWriter:
    """The store's end: starts the writer process on first use, hands it batches, and starts it again
    should it die."""

    def __init__(self, path: str, statements: Sequence[Statement]) -> None:
        self.path = path
        self._statements = list(statements)
        self._process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def pid(self) -> int | None:
        """The writer process's id, while it runs."""
        return None if self._process is None else self._process.pid

    async def commit(self, batch: Batch) -> None:
        """Apply ``batch`` in one transaction and commit it; raises :class:`WriterError` if it was not.

        If the writer dies during the commit, the batch may be stored all the same (the kernel may
        have its pages): as with a database connection lost during COMMIT, callers find out by reading.
        """
        process = self._process or await self._start()
        try:
            answer = await self._ask(process, batch)
        except BaseException as error:  # (cancelled too: its answer would be read as the next one's)
            await self._stop(kill=True)
            if isinstance(error, (OSError, asyncio.IncompleteReadError)):
                raise WriterError(f"the SQLite writer process stopped: {error!r}") from error
            raise
        if answer is not None:
            raise WriterError(str(answer))

    async def close(self) -> None:
        """Let the writer finish and exit (it has nothing in flight: the store waits for each commit)."""
        await self._stop(kill=False)

    async def _start(self) -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",  # the standard library only: no site packages, no environment, no working directory
            __file__,
            self.path,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            start_new_session=True,  # a terminal's Ctrl-C is the server's to handle, not the writer's
        )
        self._process = process
        try:
            answer = await self._ask(process, self._statements)
        except BaseException as error:
            await self._stop(kill=True)
            if isinstance(error, (OSError, asyncio.IncompleteReadError)):
                raise WriterError(f"the SQLite writer process did not start: {error!r}") from error
            raise
        if answer is not None:
            await self._stop(kill=False)
            raise WriterError(str(answer))
        return process

    @staticmethod
    async def _ask(process: asyncio.subprocess.Process, message: object) -> object:
        stdin, stdout = process.stdin, process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(_frame(message))
        await stdin.drain()
        (length,) = _LENGTH.unpack(await stdout.readexactly(_LENGTH.size))
        return pickle.loads(await stdout.readexactly(length))

    async def _stop(self, *, kill: bool) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if kill:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        elif process.stdin is not None:
            process.stdin.close()  # the end of its input: it exits
        try:
            await asyncio.wait_for(process.wait(), STOP_WAIT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()


if __name__ == "__main__":
    main()
