"""``plyarena bench commits``: durable moves a second through the store's group commits, on the database
that instances share (PostgreSQL).

The server commits every move before it answers, and its store gathers every write queued meanwhile into
one transaction (a group commit), so the moves a database takes a second grow with the matches that move
at once. This bench opens the server's :class:`~server.storage.Store` on the database given, claims an
instance as a server does (every transaction renews its lease), and lets N matches each commit its next
move as soon as the last one is committed, for a few seconds, for each N. It reports durable moves and
transactions a second, moves per transaction, how long a move waited for its commit, and the CPU of this
process (the server's share of a commit) and, for a database on this machine, of its backends.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import sqlalchemy
from sqlalchemy.engine import make_url

from bench.machine import cpu_seconds, machine_description
from server.eventloop import loop_factory
from server.storage import MatchRecord, MoveRecord, SeatRecord, Store, writes
from server.storage.engine import create_engine, safe_url

WARM_UP_S = 1.0
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", None})
MOVES_SIZE = sqlalchemy.text("SELECT pg_total_relation_size('moves'), count(*) FROM moves")
SETTINGS = ("server_version", "synchronous_commit", "fsync", "wal_sync_method")
OTHER_BACKENDS = sqlalchemy.text(
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


@dataclass(frozen=True, slots=True)
class CommitsPlan:
    matches: tuple[int, ...] = (100, 1_000, 5_000)
    duration_s: float = 5.0

    @classmethod
    def quick(cls) -> CommitsPlan:
        return cls(matches=(10, 50), duration_s=0.5)


@dataclass(frozen=True, slots=True)
class CommitsRow:
    matches: int
    moves: int
    transactions: int
    seconds: float
    waits_ms: tuple[float, ...]
    """How long each move of the window waited, from its commit asked to its commit done."""
    process_cpu_s: float
    database_cpu_s: float | None
    """The database's backends' CPU, where they run on this machine."""

    @property
    def moves_per_s(self) -> float:
        return self.moves / self.seconds

    @property
    def transactions_per_s(self) -> float:
        return self.transactions / self.seconds

    def wait_ms(self, quantile: float) -> float:
        waits = sorted(self.waits_ms)
        return waits[min(len(waits) - 1, int(quantile * len(waits)))] if waits else float("nan")


async def _backend_pids(url: str) -> list[int] | None:
    """The database's other backends, if it runs on this machine (their CPU is read from ``/proc``)."""
    if make_url(url).host not in LOCAL_HOSTS:
        return None
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            rows = await connection.execute(OTHER_BACKENDS)
            pids = [int(pid) for (pid,) in rows]
    finally:
        await engine.dispose()
    return pids if all(Path(f"/proc/{pid}/schedstat").exists() for pid in pids) else None


def _cpu_of(pids: Sequence[int] | None) -> float | None:
    if pids is None:
        return None
    total = 0.0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError):
            total += cpu_seconds(pid)
    return total


async def _measure(url: str, matches: int, plan: CommitsPlan) -> CommitsRow:
    instance = f"bench-commits-{secrets.token_hex(3)}"
    async with await Store.open(url) as store:
        await store.claim_instance(instance)
        alice = await store.create_player("alice", f"bench-{instance}-alice")
        bob = await store.create_player("bob", f"bench-{instance}-bob")
        seats = (SeatRecord(0, alice.id, "alice", False), SeatRecord(1, bob.id, "bob", False))
        ids = [f"{instance}-{index}" for index in range(matches)]
        created = datetime.now(UTC)
        await asyncio.gather(
            *(
                store.create_match(MatchRecord(i, "connect4", {}, "live", instance, created, seats=seats))
                for i in ids
            )
        )
        pids = await _backend_pids(url)
        waits: list[float] = []
        measuring, running = False, True

        async def play(match_id: str) -> None:
            ply = 0
            while running:
                move = MoveRecord(match_id, ply, ply % 2, "4", 250, datetime.now(UTC), (299_000, 300_000))
                asked = time.perf_counter()
                await store.commit(writes.new_move(move))
                if measuring:
                    waits.append(1000 * (time.perf_counter() - asked))
                ply += 1

        players = [asyncio.create_task(play(match_id)) for match_id in ids]
        try:
            await asyncio.sleep(WARM_UP_S)
            stats = store.stats
            moves, transactions = stats.moves, stats.transactions
            cpu, database_cpu, started = time.process_time(), _cpu_of(pids), time.perf_counter()
            measuring = True
            await asyncio.sleep(plan.duration_s)
            measuring = False
            seconds = time.perf_counter() - started
            moves, transactions = stats.moves - moves, stats.transactions - transactions
            cpu = time.process_time() - cpu
            after = _cpu_of(pids)
            database_cpu = None if after is None or database_cpu is None else after - database_cpu
        finally:
            running = False
            await asyncio.gather(*players, return_exceptions=True)
    return CommitsRow(matches, moves, transactions, seconds, tuple(waits), cpu, database_cpu)


async def _settings(url: str) -> str:
    """What decides a commit's cost on PostgreSQL: its version, and whether a commit waits for its fsync."""
    if make_url(url).get_backend_name() != "postgresql":
        return make_url(url).get_backend_name()
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            shown = [await connection.scalar(sqlalchemy.text(f"SHOW {name}")) for name in SETTINGS]
            size, moves = (await connection.execute(MOVES_SIZE)).one()
    finally:
        await engine.dispose()
    version, *values = shown
    stored = f"; {size / max(1, moves):.0f} bytes a stored move, table and indexes, over {moves:,} moves"
    return (
        f"PostgreSQL {version}, "
        + ", ".join(f"{name} {value}" for name, value in zip(SETTINGS[1:], values, strict=True))
        + stored
    )


async def _run(url: str, plan: CommitsPlan) -> tuple[str, list[CommitsRow]]:
    rows = [await _measure(url, matches, plan) for matches in plan.matches]
    return await _settings(url), rows


def run_commits_benchmark(url: str, plan: CommitsPlan) -> tuple[str, list[CommitsRow]]:
    """Measure each count of matches of ``plan`` on the database at ``url`` (migrated to head first); the
    database's version and commit settings, and a row for each count."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(_run(url, plan))


def render_markdown(
    url: str, settings: str, plan: CommitsPlan, rows: Sequence[CommitsRow], command: str
) -> str:
    database = make_url(url)
    lines = [
        f"## Commits: durable moves through the store's group commits on {database.get_backend_name()}",
        "",
        f"`{command}` on {machine_description()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"database {safe_url(url)} ({settings}). The server's store, its instance claimed (every "
        "transaction renews the lease), takes N matches that each commit their next move as soon as the "
        f"last one is committed, for {plan.duration_s:g} s after {WARM_UP_S:g} s of warm-up; every write "
        "queued while a transaction runs goes into the next one. *Wait*: from a move's commit asked to its "
        "commit "
        "done. CPU per move: this process's (the server's share) and the database's backends' (where "
        "they run on this machine), on cores shared with other work.",
        "",
        "| matches moving at once | durable moves/s | transactions/s | moves per transaction | wait p50 / "
        "p99 ms | this process's CPU per move, us | database backends' CPU per move, us |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        per_transaction = row.moves / row.transactions if row.transactions else float("nan")
        moves = max(1, row.moves)
        database_us = "-" if row.database_cpu_s is None else f"{1e6 * row.database_cpu_s / moves:.1f}"
        lines.append(
            f"| {row.matches:,} | {row.moves_per_s:,.0f} | {row.transactions_per_s:,.0f} "
            f"| {per_transaction:.1f} | {row.wait_ms(0.5):.1f} / {row.wait_ms(0.99):.1f} "
            f"| {1e6 * row.process_cpu_s / moves:.1f} | {database_us} |"
        )
    best = max(rows, key=lambda row: row.moves_per_s, default=None)
    if best is not None:
        lines += [
            "",
            f"Best: {best.moves_per_s:,.0f} durable moves/s with {best.matches:,} matches moving at once, "
            f"{best.moves / max(1, best.transactions):.0f} moves a transaction.",
        ]
    return "\n".join(lines) + "\n"
