"""``plyarena bench bots``: how bot throughput scales with search workers, and what it costs the server.

One process runs what ``make run`` runs: a server (SQLite in a scratch
directory) and a fleet whose bots play each other over real WebSockets. For
each worker count, ``games`` bot-vs-bot games at one level are played to the
end at once, so the pool always has more searches queued than workers. It
reports bot moves per second (every move counts, from the first ``match.create``
to the last ``ended``) and the event-loop lag that the server's loop sees while
every worker is searching: a probe sleeps ``probe_ms`` again and again and
records how late it wakes up.

The bench lives in the composition root because it starts the server and the
fleet together; the bots in it still reach the server only over the wire.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.machine import machine_description
from bots import wire
from bots.client import BotPlayer, BotSpec
from bots.fleet import Fleet, FleetConfig
from bots.pool import SearchPool, ThinkRequest, ThinkResult
from server.app import running_server
from server.config import ServerConfig

SPEEDUP_TARGET = 1.8
LAG_P99_TARGET_MS = 10.0


@dataclass(frozen=True, slots=True)
class BotsPlan:
    game: str = "connect4"
    level: int = 7
    """Level 7 searches 7 plies without noise (some 40 ms a move): long enough that the pool's hand-off
    is small beside the search, and the games are much alike from run to run, so worker counts compare
    like with like."""
    games: int = 6
    worker_counts: tuple[int, ...] = (1, 2)
    probe_ms: float = 5.0

    @classmethod
    def quick(cls) -> BotsPlan:
        return cls(level=3, games=2)


@dataclass(frozen=True, slots=True)
class BotsRun:
    workers: int
    games: int
    moves: int
    seconds: float
    busy_lags_ms: tuple[float, ...]
    """Probe lateness sampled while every worker was searching."""
    all_lags_ms: tuple[float, ...]
    search_s: float
    """Seconds the workers spent searching: over ``workers * seconds``, how busy they were."""

    other_cores: float | None
    """CPU the rest of the machine used meanwhile, in cores (``None`` off Linux): it skews the figures."""

    @property
    def worker_busy(self) -> float:
        return self.search_s / (self.workers * self.seconds)

    @property
    def moves_per_s(self) -> float:
        return self.moves / self.seconds

    def lag(self, quantile: int, busy: bool = True) -> float:
        """The ``quantile``-th percentile of the lag, in milliseconds (``nan`` without samples)."""
        samples = sorted(self.busy_lags_ms if busy else self.all_lags_ms)
        if not samples:
            return float("nan")
        return samples[min(len(samples) - 1, round(quantile / 100 * (len(samples) - 1)))]


class CountingPool(SearchPool):
    """A search pool that knows how many searches are in flight."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.in_flight = 0
        self.search_ms = 0
        """Time spent searching in the workers, summed over every search."""

    async def think(self, request: ThinkRequest) -> ThinkResult:
        self.in_flight += 1
        try:
            result = await super().think(request)
        finally:
            self.in_flight -= 1
        self.search_ms += result.think_ms
        return result


@dataclass(slots=True)
class LagProbe:
    """Sleeps ``interval_s`` over and over on the event loop and records how late each wake-up is."""

    interval_s: float
    pool: CountingPool
    busy: list[float] = field(default_factory=list)
    every: list[float] = field(default_factory=list)

    async def run(self) -> None:
        while True:
            all_busy = self.pool.in_flight >= self.pool.workers
            before = time.perf_counter()
            await asyncio.sleep(self.interval_s)
            late_ms = max(0.0, (time.perf_counter() - before - self.interval_s) * 1000)
            self.every.append(late_ms)
            if all_busy and self.pool.in_flight >= self.pool.workers:
                self.busy.append(late_ms)


def busy_cpu_s() -> float | None:
    """CPU seconds the whole machine has spent busy since boot (Linux ``/proc/stat``), else ``None``."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(value) for value in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_cpu_s(pids: list[int]) -> float | None:
    """CPU seconds used by this process and the processes ``pids`` (Linux ``/proc``), else ``None``."""
    total = time.process_time()
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


async def measure(plan: BotsPlan, workers: int, scratch: Path) -> BotsRun:
    """Play ``plan.games`` bot-vs-bot games with ``workers`` search processes; see the module docstring."""
    config = ServerConfig(
        port=0, db_url=f"sqlite+aiosqlite:///{scratch / f'bench-{workers}.sqlite3'}", instance_id="bench-bots"
    )
    spec = BotSpec.of(plan.game, plan.level)
    async with running_server(config) as server, CountingPool(workers) as pool:
        await pool.warm_up()
        offer = FleetConfig(levels={plan.game: (plan.level,)}, max_games=plan.games, idle_wait_s=None)
        fleet = Fleet(pool, offer)
        fleet.follow_server(server.ws_url)
        hosts = [BotPlayer(server.ws_url, spec, pool, seed=index) for index in range(plan.games)]
        probe = LagProbe(plan.probe_ms / 1000, pool)
        async with fleet:
            for host in hosts:
                host.start()
            await asyncio.gather(*(host.link.wait_connected() for host in hosts))
            probing = asyncio.create_task(probe.run())
            worker_pids = [process.pid for process in multiprocessing.active_children() if process.pid]
            machine_before, own_before = busy_cpu_s(), own_cpu_s(worker_pids)
            started = time.perf_counter()
            match_ids = await asyncio.gather(
                *(host.create(plan.game, bot=wire.BotRequest(level=plan.level)) for host in hosts)
            )
            while not all(match_id in host.results for host, match_id in zip(hosts, match_ids, strict=True)):
                await asyncio.sleep(0.01)
            seconds = time.perf_counter() - started
            machine_after, own_after = busy_cpu_s(), own_cpu_s(worker_pids)
            probing.cancel()
            games = zip(hosts, match_ids, strict=True)
            moves = sum(len(host.sessions[match_id].moves) for host, match_id in games)
            await asyncio.gather(*(host.close() for host in hosts))
    others = None
    if machine_before is not None and machine_after is not None and own_before is not None and own_after:
        others = max(0.0, (machine_after - machine_before) - (own_after - own_before)) / seconds
    lags = tuple(probe.busy), tuple(probe.every)
    return BotsRun(workers, plan.games, moves, seconds, *lags, pool.search_ms / 1000, others)


async def run_bots_benchmark(plan: BotsPlan) -> list[BotsRun]:
    with tempfile.TemporaryDirectory(prefix="plyarena-bench-bots-") as scratch:
        return [await measure(plan, workers, Path(scratch)) for workers in plan.worker_counts]


def speedup(runs: list[BotsRun]) -> float | None:
    """Moves per second of the largest worker count over the smallest."""
    if len(runs) < 2:
        return None
    return runs[-1].moves_per_s / runs[0].moves_per_s


def render_markdown(plan: BotsPlan, runs: list[BotsRun], command: str) -> str:
    machine = machine_description()
    lines = [
        "## Bots: throughput per worker, and the server's event-loop lag",
        "",
        f"`{command}` on {machine}, {time.strftime('%Y-%m-%d')}. One process serves (SQLite) and runs "
        f"a fleet; {plan.games} games of {plan.game} level {plan.level} against level {plan.level} are "
        "played to the end at once over WebSockets, for each worker count. Lag: how late a "
        f"{plan.probe_ms:g} ms sleep on the server's event loop wakes up, sampled while every worker is "
        "searching (over the whole run in brackets). Worker busy: the workers' search time over workers x "
        "seconds; a search slowed by other processes still counts as busy (and takes more ms per move). "
        "Other load: CPU that other processes on the machine used meanwhile.",
        "",
        "| workers | games | moves | seconds | moves/s | search ms/move | worker busy | other load "
        "| lag p50 ms | lag p99 ms | lag max ms | samples |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for run in runs:
        p50 = f"{run.lag(50):.2f} ({run.lag(50, busy=False):.2f})"
        p99 = f"{run.lag(99):.2f} ({run.lag(99, busy=False):.2f})"
        worst = max(run.busy_lags_ms, default=float("nan"))
        samples = f"{len(run.busy_lags_ms)} ({len(run.all_lags_ms)})"
        other = "?" if run.other_cores is None else f"{run.other_cores:.2f} cores"
        lines.append(
            f"| {run.workers} | {run.games} | {run.moves} | {run.seconds:.1f} | {run.moves_per_s:.1f} "
            f"| {1000 * run.search_s / run.moves:.0f} | {run.worker_busy:.0%} | {other} "
            f"| {p50} | {p99} | {worst:.2f} | {samples} |"
        )
    ratio = speedup(runs)
    worst_p99 = max(run.lag(99) for run in runs)
    lines.append("")
    if ratio is not None:
        verdict = "meets" if ratio >= SPEEDUP_TARGET else "misses"
        lines.append(
            f"Speed-up from {runs[0].workers} to {runs[-1].workers} workers: **{ratio:.2f}x** "
            f"({verdict} the target of {SPEEDUP_TARGET}x)."
        )
    verdict = "meets" if worst_p99 < LAG_P99_TARGET_MS else "misses"
    lines.append(f"Worst event-loop lag p99 while all workers search: **{worst_p99:.2f} ms** "
                 f"({verdict} the target of {LAG_P99_TARGET_MS:g} ms).")  # fmt: skip
    if statistics.fmean(run.lag(50) for run in runs) > LAG_P99_TARGET_MS:
        lines.append("The median lag alone is over the target: the loop itself is saturated.")
    return "\n".join(lines) + "\n"
