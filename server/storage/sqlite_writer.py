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
``None`` once it is committed, or with why it failed, nothing of it stored. The child commits the
batches one after the other and answers them in that order, so the parent may send the next before the
last is answered (the store keeps two with the child): a batch then never waits for a turn of a busy
event loop between two commits. The parent reads the answers in its I/O callback and hands each to
whoever waits for it there, without waking a task first.

The child runs this file by its path (``python -I sqlite_writer.py DATABASE``) and needs the standard
library only, so that it starts in a few tens of milliseconds: importing the store's modules would take
half a second, for every store opened. It stops at the end of its input: when the store closes, or
when the server dies, even by SIGKILL (the kernel closes the pipe), after the commit under way.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import sqlite3
import struct
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import IO, Any, Self

SQLITE_BUSY_TIMEOUT_MS = 10_000
"""How long an SQLite connection waits for another writer (another process, such as a migration)."""

SQLITE_WAL_AUTOCHECKPOINT_PAGES = 250
"""WAL pages after which a commit copies the WAL into the database (SQLite's default is 1,000), on the
connections that leave checkpoints to SQLite: all but the writer's, whose :class:`Checkpointer` does
them, and those rarely write (a batch retried one write at a time, a migration). That copy and the
database's fsync run inside the COMMIT; a quarter of the pages makes each such stall shorter: the move
round trip's p99 at 4,000 moves/s was lower in five runs of five against the default while the batches
committed on the event loop (docs/performance.md, "SQLite's commits in a writer process")."""

WAL_EAGER_PAGES = 1_000
"""WAL pages (4 MB) past which a checkpoint follows every commit again, until one catches up with the
writer and the WAL starts over (see :class:`Checkpointer`)."""

WAL_LIMIT_PAGES = 16_384
"""WAL pages (64 MB) past which the checkpointer stops the writer once to start the WAL over."""

Statement = tuple[str, bool]
"""A batch statement as the writer takes it: its SQL, and whether it is an update that must change one
row for each of its parameter sets."""
Batch = list[tuple[int, list[list[Any]]]]
"""A batch as the writer takes it: for each statement that has rows, its index and their values."""

CHECKPOINT_INTERVAL_S = 0.1
"""The least time from one checkpoint's start to the next: at 5,000 moves a second a checkpoint after
every commit, some 500 a second, copied the same pages again and again (docs/performance.md)."""

CHECKPOINT_NICENESS = 10
"""How much nicer than the writer's other threads the checkpoint thread is (Linux): a checkpoint can wait,
a commit should not."""

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
    nothing: dict[None, None] = {}
    sqlite3.register_adapter(type(None), nothing.get)


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
    """Copies the WAL into the database on a thread of its own, after commits, so that no commit waits
    for that copy and its fsync.

    Left to SQLite, the commit that takes the WAL past ``wal_autocheckpoint`` pages does the copy
    itself: at 5,000 moves a second the writer's commits took up to 30 ms where most take under one,
    and every move queued behind such a commit waited for it (docs/performance.md). A PASSIVE checkpoint
    copies what is committed while the writer goes on appending; when it catches up, the next commit
    starts the WAL over, so the WAL stays small. Should it fall behind for good (the WAL past
    :data:`WAL_LIMIT_PAGES`), a RESTART checkpoint waits for the writer once and starts the WAL over.

    Checkpoints start at most every :data:`CHECKPOINT_INTERVAL_S`, and the thread runs at a lower CPU
    priority: the commits of one interval mostly change the same pages (a table's last leaf, its
    indexes'), which one checkpoint then copies once instead of once per commit, and on a machine whose
    cores are busy the copy waits rather than the commits, the server or its clients. But a checkpoint
    that copies an interval's commits seldom catches up with a writer that commits all the while, and
    only one that does lets the WAL start over: past :data:`WAL_EAGER_PAGES` a checkpoint follows every
    commit again, until one catches up.
    """

    def __init__(self, path: str) -> None:
        self._connection = connect(path)
        self._due = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="plyarena-sqlite-checkpoints", daemon=True)
        self._thread.start()

    def after_commit(self) -> None:
        self._due.set()

    def stop(self) -> None:
        self._stopped.set()
        self._due.set()
        self._thread.join()
        self._connection.close()

    def _run(self) -> None:
        _lower_thread_priority()
        eager = False
        while True:
            self._due.wait()
            # (the commits of the interval join this checkpoint)
            if self._stopped.wait(0 if eager else CHECKPOINT_INTERVAL_S):
                return
            self._due.clear()
            try:
                _busy, wal_pages, _copied = self._connection.execute(
                    "PRAGMA wal_checkpoint(PASSIVE)"
                ).fetchone()
                if wal_pages > WAL_LIMIT_PAGES:
                    self._connection.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
            except sqlite3.Error as error:  # the next commit tries again
                print(f"plyarena sqlite writer: checkpoint failed: {error}", file=sys.stderr, flush=True)
            else:
                eager = wal_pages > WAL_EAGER_PAGES


def _lower_thread_priority() -> None:
    """Make the calling thread yield the CPU to the rest of the machine (Linux: a thread's own nice)."""
    if sys.platform != "linux":  # (elsewhere a priority is the whole process's: it is kept)
        return
    thread = threading.get_native_id()
    with contextlib.suppress(OSError):
        os.setpriority(
            os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + CHECKPOINT_NICENESS)
        )


def serve(path: str, source: IO[bytes], sink: IO[bytes]) -> None:
    """The child's life: open ``path``, then commit each batch from ``source`` and answer on ``sink``."""
    try:
        statements: Sequence[Statement] = _read_frame(source)  # type: ignore[assignment]  # unpickled: the parent sends these first
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
                batch: Batch = _read_frame(source)  # type: ignore[assignment]  # unpickled: every later frame is a batch
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


Answered = Callable[[str | None], None]
"""Called with a batch's answer: ``None`` once it is committed, else why it was not."""


def _settling(future: asyncio.Future[str | None]) -> Answered:
    """An :data:`Answered` that settles ``future`` with the answer, unless it is already settled."""

    def answered(answer: str | None) -> None:
        if not future.done():
            future.set_result(answer)

    return answered


class _Answers(asyncio.SubprocessProtocol):
    """The parent's end of the pipe: hands each answer, as it arrives, to whoever waits for it, in the order
    the batches were sent, from the event loop's I/O callback itself (no task to wake first)."""

    def __init__(self, exited: asyncio.Future[None]) -> None:
        self.waiting: deque[Answered] = deque()
        self._buffer = bytearray()
        self._exited = exited

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        buffer = self._buffer
        buffer += data
        while len(buffer) >= _LENGTH.size:
            (length,) = _LENGTH.unpack_from(buffer)
            end = _LENGTH.size + length
            if len(buffer) < end:
                return
            answer = pickle.loads(buffer[_LENGTH.size : end])
            del buffer[:end]
            if self.waiting:
                self.waiting.popleft()(answer)

    def connection_lost(self, exc: Exception | None) -> None:
        """The writer exited and its pipes are closed: every batch still waiting is answered so."""
        while self.waiting:
            self.waiting.popleft()("the SQLite writer process stopped")
        if not self._exited.done():
            self._exited.set_result(None)


class SqliteWriter:
    """The store's end: starts the writer process, hands it batches, and starts it again should it die.

    Batches may be sent before earlier ones are answered: the writer commits them one after the other,
    and answers them in that order.
    """

    def __init__(self, path: str, statements: Sequence[Statement]) -> None:
        self.path = path
        self._statements = list(statements)
        self._transport: asyncio.SubprocessTransport | None = None
        self._answers: _Answers | None = None
        self._exited: asyncio.Future[None] | None = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def pid(self) -> int | None:
        """The writer process's id, while it runs."""
        return None if self._transport is None else self._transport.get_pid()

    async def start(self) -> None:
        """Start the writer process, unless it runs; raises :class:`WriterError` if it cannot open the
        database."""
        transport = self._transport
        if transport is not None:
            if not transport.is_closing() and transport.get_returncode() is None:
                return
            await self._stop(kill=True)  # it died: collect it, then start another
        loop = asyncio.get_running_loop()
        exited: asyncio.Future[None] = loop.create_future()
        transport, answers = await loop.subprocess_exec(
            lambda: _Answers(exited),
            sys.executable,
            "-I",  # the standard library only: no site packages, no environment, no working directory
            __file__,
            self.path,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=None,
            start_new_session=True,  # a terminal's Ctrl-C is the server's to handle, not the writer's
        )
        self._transport, self._answers, self._exited = transport, answers, exited
        ready: asyncio.Future[str | None] = loop.create_future()
        self._send(self._statements, _settling(ready))
        if (answer := await ready) is not None:
            await self._stop(kill=False)
            raise WriterError(answer)

    def send(self, batch: Batch, answered: Answered) -> None:
        """Hand ``batch`` to the running writer (see :meth:`start`); ``answered`` gets its answer, in the
        loop's I/O callback. If the writer dies first, the answer says so, and the batch may be stored
        all the same (as with a database connection lost during COMMIT: callers find out by reading)."""
        self._send(batch, answered)

    async def commit(self, batch: Batch) -> None:
        """Start the writer if need be, then apply ``batch`` in one transaction and commit it; raises
        :class:`WriterError` if it was not committed."""
        await self.start()
        done: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.send(batch, _settling(done))
        if (answer := await done) is not None:
            raise WriterError(answer)

    async def close(self) -> None:
        """Let the writer commit what it was sent, answer, and exit."""
        await self._stop(kill=False)

    def _send(self, message: object, answered: Answered) -> None:
        assert self._transport is not None and self._answers is not None
        stdin = self._transport.get_pipe_transport(0)
        if stdin is None or stdin.is_closing() or self._transport.get_returncode() is not None:
            answered("the SQLite writer process stopped")
            return
        self._answers.waiting.append(answered)
        stdin.write(_frame(message))  # type: ignore[attr-defined]  # typed BaseTransport; fd 0 is a write pipe

    async def _stop(self, *, kill: bool) -> None:
        transport, exited = self._transport, self._exited
        self._transport = self._answers = self._exited = None
        if transport is None or exited is None:
            return
        if kill:
            with contextlib.suppress(ProcessLookupError):
                transport.kill()
        else:
            stdin = transport.get_pipe_transport(0)
            if stdin is not None:
                stdin.close()  # the end of its input: it exits
        try:
            await asyncio.wait_for(asyncio.shield(exited), STOP_WAIT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                transport.kill()
            await exited
        transport.close()


if __name__ == "__main__":
    main()
