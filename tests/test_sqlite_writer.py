"""SQLite's writer process: it commits the store's batches, comes back if it dies, and never outlives the
server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.process import has_ended, wait_until_ended
from test_storage import match_record, move, new_player

from server.storage import Store, sqlite_writer
from server.storage.sinks import SqliteProcessSink
from server.storage.sqlite_writer import CHECKPOINT_NICENESS, WAL_EAGER_PAGES, SqliteWriter, WriterError
from server.storage.writes import new_move


async def test_a_killed_writer_loses_no_write_and_is_started_again(tmp_path: Path) -> None:
    async with await Store.open(f"sqlite:///{tmp_path}/db.sqlite3") as store:
        alice, bob = await new_player(store, "alice"), await new_player(store, "bob")
        await store.create_match(match_record("m1", alice, bob))
        sink = store._sink
        assert isinstance(sink, SqliteProcessSink)
        first = sink.batches.writer_pid
        assert first is not None

        os.kill(first, signal.SIGKILL)
        assert await asyncio.to_thread(wait_until_ended, first)
        # The batch fails with the writer; its writes are retried one by one, and both commit.
        await asyncio.gather(store.commit(new_move(move("m1", 0))), store.commit(new_move(move("m1", 1))))
        await store.commit(new_move(move("m1", 2)))

        second = sink.batches.writer_pid
        assert second is not None and second != first
        stored = await store.get_match("m1")
        assert stored is not None and [m.ply for m in stored.moves] == [0, 1, 2]
    assert has_ended(second)  # closing the store ended its writer


async def test_a_batch_the_writer_refuses_is_answered_with_its_reason_and_the_writer_goes_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plain.sqlite3"
    with sqlite3.connect(path) as setup:
        setup.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    statements = [("INSERT INTO t (id) VALUES (?)", False), ("UPDATE t SET id = id WHERE id = ?", True)]
    async with SqliteWriter(str(path), statements) as writer:
        await writer.commit([(0, [[1], [2]])])
        with pytest.raises(WriterError, match="IntegrityError: UNIQUE constraint failed"):
            await writer.commit([(0, [[3], [1]])])
        with pytest.raises(WriterError, match=r"BatchMismatchError: .* fewer than 2 rows changed"):
            await writer.commit([(0, [[4]]), (1, [[4], [99]])])
        pid = writer.pid
        await writer.commit([(0, [[5]])])
        assert writer.pid == pid  # the same process throughout
    with sqlite3.connect(path) as check:
        assert [row[0] for row in check.execute("SELECT id FROM t ORDER BY id")] == [1, 2, 5]


async def test_a_writer_that_cannot_open_its_database_says_why(tmp_path: Path) -> None:
    missing = tmp_path / "no such directory" / "db.sqlite3"
    async with SqliteWriter(str(missing), []) as writer:
        with pytest.raises(WriterError, match=r"cannot open .*db\.sqlite3: unable to open database file"):
            await writer.commit([])
        assert writer.pid is None


def test_the_writer_stops_when_the_server_is_killed(tmp_path: Path) -> None:
    """SIGKILL gives the server no chance to close its store: the writer sees its input end, and exits."""
    server = textwrap.dedent(
        f"""
        import asyncio, sys
        from server.storage import Store

        async def main():
            store = await Store.open("sqlite:///{tmp_path}/db.sqlite3")
            await store.create_player("alice", "hash-of-alice")
            print(store._sink.batches.writer_pid, flush=True)
            await asyncio.sleep(60)

        asyncio.run(main())
        """
    )
    process = subprocess.Popen([sys.executable, "-c", server], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        writer = int(process.stdout.readline())
        assert not has_ended(writer)
    finally:
        process.kill()
        process.wait()
    assert wait_until_ended(writer)


def rows_in_the_database_file(path: Path) -> int:
    """Rows of ``t`` in the database file itself, as if its WAL were not there."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?immutable=1", uri=True)) as reader:
        return int(reader.execute("SELECT count(*) FROM t").fetchone()[0])


async def test_commits_are_copied_from_the_wal_into_the_database_as_they_come(tmp_path: Path) -> None:
    """The writer leaves checkpoints to a thread of its own, which runs after commits (at most every
    ``CHECKPOINT_INTERVAL_S``): no commit waits for one, and the WAL does not grow."""
    path = tmp_path / "plain.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as setup:
        setup.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    async with SqliteWriter(str(path), [("INSERT INTO t (id) VALUES (?)", False)]) as writer:
        for number in range(200):
            await writer.commit([(0, [[number]])])
            assert (tmp_path / "plain.sqlite3-wal").stat().st_size < 1_000_000
        for _ in range(500):
            if rows_in_the_database_file(path) == 200:
                break
            await asyncio.sleep(0.01)
        assert rows_in_the_database_file(path) == 200


class RecordedCheckpoints:
    """The checkpointer's connection, with each checkpoint's answer (busy, WAL pages, pages copied) put
    in ``answers`` as it returns: when a checkpoint ran, and what it saw."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection
        self.answers: queue.SimpleQueue[tuple[int, int, int]] = queue.SimpleQueue()

    def execute(self, sql: str) -> sqlite3.Cursor:
        answer = self.connection.execute(sql).fetchone()
        self.answers.put(answer)
        return self.connection.execute("SELECT ?, ?, ?", answer)  # the answer again, for the checkpointer

    def close(self) -> None:
        self.connection.close()


def test_past_the_eager_mark_a_checkpoint_follows_every_commit_until_the_wal_starts_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checkpoints that each wait an interval seldom catch up with a writer that commits all the while;
    past ``WAL_EAGER_PAGES`` one follows every commit, with no wait, until the WAL has started over."""
    path = tmp_path / "plain.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as setup:
        setup.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB)")
    writer = sqlite_writer.connect(str(path))
    writer.execute("PRAGMA wal_autocheckpoint = 0")  # as in the writer process: the thread checkpoints
    recorded = RecordedCheckpoints(sqlite_writer.connect(str(path)))
    monkeypatch.setattr(sqlite_writer, "connect", lambda _path: recorded)
    monkeypatch.setattr(sqlite_writer, "CHECKPOINT_INTERVAL_S", 0.0)
    checkpointer = sqlite_writer.Checkpointer(str(path))
    try:
        page = writer.execute("PRAGMA page_size").fetchone()[0]
        writer.execute("INSERT INTO t (id, data) VALUES (1, ?)", [bytes((WAL_EAGER_PAGES + 100) * page)])
        checkpointer.after_commit()
        _busy, wal_pages, copied = recorded.answers.get(timeout=10)
        assert wal_pages == copied > WAL_EAGER_PAGES  # all copied; the WAL starts over at the next commit
        monkeypatch.setattr(sqlite_writer, "CHECKPOINT_INTERVAL_S", 3600.0)  # only an eager one runs now

        writer.execute("INSERT INTO t (id) VALUES (2)")
        checkpointer.after_commit()
        _busy, wal_pages, copied = recorded.answers.get(timeout=10)  # at once: the WAL was past the mark
        assert wal_pages == copied < WAL_EAGER_PAGES  # the WAL started over

        writer.execute("INSERT INTO t (id) VALUES (3)")
        checkpointer.after_commit()
        with pytest.raises(queue.Empty):  # with the WAL small, a checkpoint waits for its interval
            recorded.answers.get(timeout=0.5)
    finally:
        checkpointer.stop()
        writer.close()


def nice_values_of_threads(pid: int) -> list[int]:
    """The nice value of each thread of process ``pid`` (field 19 of its /proc stat lines)."""
    values = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):
            stat = (task / "stat").read_text()
            values.append(int(stat[stat.rindex(")") + 2 :].split()[16]))
    return values


@pytest.mark.skipif(sys.platform != "linux", reason="thread priorities are read from Linux's /proc")
async def test_checkpoints_run_at_a_lower_priority_than_the_commits(tmp_path: Path) -> None:
    path = tmp_path / "plain.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as setup:
        setup.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    async with SqliteWriter(str(path), [("INSERT INTO t (id) VALUES (?)", False)]) as writer:
        await writer.commit([(0, [[1]])])
        assert writer.pid is not None
        nice = sorted(nice_values_of_threads(writer.pid))
    own = os.getpriority(os.PRIO_PROCESS, 0)
    assert nice == [own, min(19, own + CHECKPOINT_NICENESS)]  # the committing thread, the checkpoints'


async def test_batches_sent_before_earlier_ones_are_answered_are_committed_and_answered_in_order(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plain.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as setup:
        setup.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    async with SqliteWriter(str(path), [("INSERT INTO t (id) VALUES (?)", False)]) as writer:
        await writer.start()
        answers: list[str | None] = []
        for ids in ([1, 2], [3, 1], [4]):  # the second repeats a key of the first: it alone fails
            writer.send([(0, [[number] for number in ids])], answers.append)
        await wait_for_answers(answers, 3)
        assert answers[0] is None and answers[2] is None
        assert answers[1] is not None and "UNIQUE constraint failed" in answers[1]
    with contextlib.closing(sqlite3.connect(path)) as check:
        assert [row[0] for row in check.execute("SELECT id FROM t ORDER BY id")] == [1, 2, 4]


async def test_batches_waiting_when_the_writer_dies_are_answered_so(tmp_path: Path) -> None:
    path = tmp_path / "plain.sqlite3"
    with contextlib.closing(sqlite3.connect(path)) as setup:
        setup.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    async with SqliteWriter(str(path), [("INSERT INTO t (id) VALUES (?)", False)]) as writer:
        await writer.start()
        pid = writer.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)  # it reads nothing more; then it dies
        answers: list[str | None] = []
        writer.send([(0, [[1]])], answers.append)
        writer.send([(0, [[2]])], answers.append)
        os.kill(pid, signal.SIGKILL)
        await wait_for_answers(answers, 2)
        assert answers == ["the SQLite writer process stopped"] * 2
        await writer.commit([(0, [[3]])])  # a new writer
        assert writer.pid not in (None, pid)


async def wait_for_answers(answers: list[str | None], count: int) -> None:
    for _ in range(1000):
        if len(answers) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{len(answers)} answers of {count}")
