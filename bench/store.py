"""``plyarena bench store``: what committing moves to SQLite costs, four ways, in one run.

The store hands SQLite batches to a writer process of their own
(:mod:`server.storage.sqlite_writer`). This bench shows why, applying the same
rows the same number of times each way:

- ``process``: :meth:`SqliteBatches.apply`, the rows converted on the loop and
  committed by the writer process, what the store does;
- ``loop``: the same converted rows applied and committed on the event loop's
  thread, what the store did before;
- ``thread``: that in a worker thread (``run_in_executor``);
- ``sqlalchemy``: the same rows through an SQLAlchemy ``AsyncConnection`` on
  aiosqlite's thread, the store's way for PostgreSQL and its first SQLite way.

For each way it measures, on a quiet loop, the CPU of a commit of one move and
the CPU per move in batches; then, on a busy loop (tasks burning short bursts of
CPU between yields, a stand-in for a loaded server), how long a batch takes and
how late the loop's other work runs meanwhile. CPU is the loop's process's
(its worker threads' included) and, apart, the writer process's.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.machine import cpu_seconds, machine_description
from server.eventloop import loop_factory
from server.storage import MatchRecord, MoveRecord, SeatRecord, Store, sqlite_writer, writes
from server.storage.batches import Rows, SqliteBatches, apply_batch, batch_rows
from server.storage.engine import create_engine

WAYS = ("process", "loop", "thread", "sqlalchemy")


@dataclass(frozen=True, slots=True)
class StorePlan:
    single_commits: int = 300
    batch_size: int = 100
    batches: int = 20
    busy_batch_size: int = 100
    busy_batches: int = 3
    busy_tasks: int = 3
    busy_burst_ms: float = 0.2

    @classmethod
    def quick(cls) -> StorePlan:
        """A run that checks the bench works, in seconds: its loop is not busy (a busy one takes minutes)."""
        return cls(
            single_commits=10, batch_size=10, batches=2, busy_batch_size=5, busy_batches=1, busy_tasks=0
        )

    @property
    def matches(self) -> int:
        return max(self.batch_size, self.busy_batch_size)


@dataclass(frozen=True, slots=True)
class WayResult:
    way: str
    commit_cpu_ms: float
    """CPU of one commit holding one move, in the loop's process."""
    move_cpu_us: float
    """CPU per move, in batches of ``batch_size``, in the loop's process."""
    writer_commit_cpu_ms: float
    """The same in the writer process, its checkpoint thread's included (``process`` only)."""
    writer_move_cpu_us: float
    """The same in the writer process (``process`` only)."""
    busy_batch_ms: tuple[float, ...]
    """Wall time of each batch of ``busy_batch_size`` on the busy loop."""
    busy_lag_ms: tuple[float, ...]
    """How late the busy loop's 1 ms sleeps woke up meanwhile."""

    @property
    def busy_median_ms(self) -> float:
        return statistics.median(self.busy_batch_ms)

    @property
    def busy_lag_p99_ms(self) -> float:
        lags = sorted(self.busy_lag_ms)
        return lags[min(len(lags) - 1, int(0.99 * len(lags)))] if lags else float("nan")


Commit = Callable[[Rows], Awaitable[None]]
WriterCpu = Callable[[], float]
"""CPU seconds so far of the way's writer process; none but ``process`` has one."""


class _Plies:
    """A fresh ply for every round of every way, so that no insert collides with an earlier one."""

    def __init__(self) -> None:
        self.next = 0

    def rows(self, matches: int) -> Rows:
        ply, self.next = self.next, self.next + 1
        played_at = datetime.now(UTC)
        moves = (
            MoveRecord(f"m{index}", ply, ply % 2, "4", 250, played_at, (299_000, 300_000))
            for index in range(matches)
        )
        return batch_rows([writes.new_move(move) for move in moves])


async def _prepare(url: str, matches: int) -> None:
    """Migrate a new database and give it the matches the moves belong to."""
    store = await Store.open(url)
    try:
        alice = await store.create_player("alice", "hash-of-alice")
        bob = await store.create_player("bob", "hash-of-bob")
        seats = (SeatRecord(0, alice.id, "alice", False), SeatRecord(1, bob.id, "bob", False))
        created = datetime.now(UTC)
        await asyncio.gather(
            *(
                store.create_match(
                    MatchRecord(f"m{index}", "connect4", {}, "live", "bench", created, seats=seats)
                )
                for index in range(matches)
            )
        )
    finally:
        await store.close()


async def _measure(
    plan: StorePlan, way: str, commit: Commit, writer_cpu: WriterCpu, plies: _Plies
) -> WayResult:
    await commit(plies.rows(1))  # (starts the writer process, for the way that has one)
    start, writer_start = time.process_time(), writer_cpu()
    for _ in range(plan.single_commits):
        await commit(plies.rows(1))
    commit_cpu_ms = 1000 * (time.process_time() - start) / plan.single_commits
    writer_commit_cpu_ms = 1000 * (writer_cpu() - writer_start) / plan.single_commits

    start, writer_start = time.process_time(), writer_cpu()
    for _ in range(plan.batches):
        await commit(plies.rows(plan.batch_size))
    moves = plan.batches * plan.batch_size
    move_cpu_us = 1e6 * (time.process_time() - start) / moves
    writer_move_cpu_us = 1e6 * (writer_cpu() - writer_start) / moves

    busy_batch_ms, lags = await _on_a_busy_loop(plan, commit, plies)
    return WayResult(
        way, commit_cpu_ms, move_cpu_us, writer_commit_cpu_ms, writer_move_cpu_us, busy_batch_ms, lags
    )


async def _on_a_busy_loop(
    plan: StorePlan, commit: Commit, plies: _Plies
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    loop = asyncio.get_running_loop()
    busy = True
    lags: list[float] = []

    async def burn() -> None:
        while busy:
            until = time.perf_counter() + plan.busy_burst_ms / 1000
            while time.perf_counter() < until:
                pass
            await asyncio.sleep(0)

    async def probe() -> None:
        while busy:
            asked = loop.time()
            await asyncio.sleep(0.001)
            lags.append(1000 * (loop.time() - asked - 0.001))

    others = [asyncio.create_task(burn()) for _ in range(plan.busy_tasks)] + [asyncio.create_task(probe())]
    took: list[float] = []
    try:
        for _ in range(plan.busy_batches):
            rows = plies.rows(plan.busy_batch_size)
            started = time.perf_counter()
            await commit(rows)
            took.append(1000 * (time.perf_counter() - started))
    finally:
        busy = False
        await asyncio.gather(*others)
    return tuple(took), tuple(lags)


async def _run(plan: StorePlan, directory: Path) -> list[WayResult]:
    path = directory / "bench.sqlite3"
    url = f"sqlite+aiosqlite:///{path}"
    await _prepare(url, plan.matches)
    engine = create_engine(url)
    batches = SqliteBatches(str(path), engine.dialect)
    connection = sqlite_writer.connect(str(path))
    executor = ThreadPoolExecutor(1, thread_name_prefix="plyarena-bench-store")
    loop = asyncio.get_running_loop()

    def apply_here(rows: Rows) -> None:
        sqlite_writer.apply(connection, batches.statements, batches.convert(rows))

    async def on_the_loop(rows: Rows) -> None:
        apply_here(rows)

    async def in_a_thread(rows: Rows) -> None:
        await loop.run_in_executor(executor, apply_here, rows)

    async def through_sqlalchemy(rows: Rows) -> None:
        async with engine.begin() as connection:
            await apply_batch(connection, rows)

    def writer_cpu() -> float:
        pid = batches.writer_pid
        return 0.0 if pid is None else cpu_seconds(pid)

    commits = dict(zip(WAYS, (batches.apply, on_the_loop, in_a_thread, through_sqlalchemy), strict=True))
    plies = _Plies()
    try:
        return [
            await _measure(plan, way, commit, writer_cpu if way == "process" else lambda: 0.0, plies)
            for way, commit in commits.items()
        ]
    finally:
        executor.shutdown()
        connection.close()
        await batches.close()
        await engine.dispose()


def run_store_benchmark(plan: StorePlan, directory: Path) -> list[WayResult]:
    """Measure every way on a new SQLite database in ``directory``, on the server's event loop."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(_run(plan, directory))


def render_markdown(plan: StorePlan, results: list[WayResult], command: str) -> str:
    machine = machine_description()
    by_way = {result.way: result for result in results}
    lines = [
        "## Store: committing moves to SQLite in a writer process, on the loop, in a thread, or through "
        "SQLAlchemy",
        "",
        f"`{command}` on {machine}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. The same "
        "rows, one statement per kind, each commit fsynced (`synchronous=FULL`), four ways: *process* "
        "hands them to the store's SQLite writer process (what the server does), *loop* applies them "
        "on the event loop's thread (what it did before), *thread* in a worker thread, *sqlalchemy* "
        "through SQLAlchemy and aiosqlite (the store's first way, and still its way for PostgreSQL). CPU "
        "is the loop's process's, threads included, plus the writer process's where there is one. "
        f"The busy loop runs {plan.busy_tasks} tasks that burn {plan.busy_burst_ms:g} ms of CPU between "
        "yields, as a loaded server's connections do; lag is how late a 1 ms sleep wakes up meanwhile.",
        "",
        f"| way | CPU per commit of one move, ms: loop's process + writer | CPU per move in batches of "
        f"{plan.batch_size}, us: loop's process + writer | batch of {plan.busy_batch_size} on a busy "
        "loop: median / max ms | busy loop's lag p99 ms |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for result in results:
        lines.append(
            f"| {result.way} | {result.commit_cpu_ms:.3f} + {result.writer_commit_cpu_ms:.3f} "
            f"| {result.move_cpu_us:.1f} + {result.writer_move_cpu_us:.1f} "
            f"| {result.busy_median_ms:.1f} / {max(result.busy_batch_ms):.1f} | {_lag(result)} |"
        )
    process, loop, thread, sqlalchemy = (by_way[way] for way in WAYS)
    lines += [
        "",
        f"A commit of one move took {loop.commit_cpu_ms / process.commit_cpu_ms:.1f}x less of the loop's "
        "CPU in the writer process than on the loop, and "
        f"{sqlalchemy.commit_cpu_ms / loop.commit_cpu_ms:.1f}x less on the loop than through SQLAlchemy. "
        "On the busy loop a batch took "
        f"{process.busy_median_ms / loop.busy_median_ms:.1f}x as long (median) in the writer process, "
        f"{thread.busy_median_ms / loop.busy_median_ms:.0f}x as long in a thread, and "
        f"{sqlalchemy.busy_median_ms / loop.busy_median_ms:.0f}x as long through SQLAlchemy, as on the loop; "
        "the loop's lag while a batch runs on it is the batch's time.",
    ]
    return "\n".join(lines) + "\n"


def _lag(result: WayResult) -> str:
    """The lag p99, or a dash when no sleep ended during the batches (they held the loop throughout)."""
    return f"{result.busy_lag_p99_ms:.2f}" if result.busy_lag_ms else "-"
