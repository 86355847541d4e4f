"""One ``plyarena bench server`` run: the echo baseline, then the game server, measured the same way.

1. An echo server process; the load generators open ``clients`` connections
   to it and, on ``matches`` of them, send a move-sized frame and wait for its
   echo, each no faster than a match may move (see
   :data:`MAX_MOVES_PER_MATCH_S`): the raw WebSocket rate of this machine.
2. ``plyarena serve`` (SQLite in a scratch directory unless a database URL is
   given); the same load generators open ``clients`` connections and say hello,
   then pair up ``2 * matches`` of them into matches, and play: in scripted
   mode first *paced* (each match moves once per ``matches / rate`` seconds;
   one paced window per rate asked, in order), then *flat-out* (as fast as
   replies come, within the protocol's rate limit);
   in bots mode, level-1 bots play at their own pace.

Memory per connection is the server's resident set size after the connections
were opened minus before, over their number.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.loadgen.commands import (
    CloseAll,
    Connect,
    Echo,
    Opened,
    Play,
    Played,
    StartBots,
    Started,
    StartMatches,
    Window,
    WindowSamples,
)
from bench.loadgen.driver import LoadGenerators, split
from bench.loadgen.report import Memory, Observation, ServerBenchReport, WindowResult, summarize
from bench.loadgen.target import (
    EchoServer,
    ServerUnderTest,
    cpu_seconds,
    machine_busy_seconds,
    rss_bytes,
    waiting_seconds,
    with_descendants,
)
from bench.machine import machine_description

MODES = ("scripted", "bots")
BOT_LEVEL = 1
MAX_MOVES_PER_MATCH_S = 30.0
"""The fastest a match moves flat-out: each player then sends 15 moves a second, under the 20 requests
a second that the server allows a connection (docs/protocol.md); echoing connections keep the same pace."""
ECHO_PAYLOAD = b'{"type":"move","id":1234,"match_id":"P7_ozOrnyPg6yKy","ply":12,"move":"4"}'
"""A move request's size and shape."""
SERVER_SPARE_CPU = 0.8
"""Below this many cores a single-threaded server still had time to spare (a saturated one shows 0.9 and
more): a window that asked for more and got less was then held back by its load generators."""
MAX_NICENESS = 19
"""The nicest a process can be on Linux: the load generators' niceness is from 0 to this."""
SETTLE_S = 1.0
"""A pause before reading memory, so that the server has handled what just happened."""
GAUGE_EVERY_S = 1.0

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class ServerBenchPlan:
    clients: int = 10_000
    matches: int = 5_000
    duration_s: float = 30.0
    """Measured seconds of each window (after its warm-up)."""
    mode: str = "scripted"
    db_url: str | None = None
    """``None``: SQLite in a scratch directory."""
    game: str = "connect4"
    time_control: str = "5+3"
    rates: tuple[float, ...] = ()
    """Moves per second of each paced window, in this order; none given: one window at one move per match
    per second. Several paces in one run compare on the same echo baseline and the same moment of a
    machine whose speed drifts between runs."""
    processes: int = 2
    loadgen_niceness: int = 10
    """How much nicer than the server (and the echo server) the load generators run: they take the cores
    the server leaves, as clients on machines of their own would take none of its cores (0: the same
    weight)."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; use one of {', '.join(MODES)}")
        if self.matches < 1 or self.clients < 2 * self.matches:
            raise ValueError(
                f"{self.matches} matches need at least one match and two clients each; "
                f"--clients {self.clients} is not enough"
            )
        if self.duration_s <= 0:
            raise ValueError(f"the duration must be positive, not {self.duration_s}")
        for rate in self.rates:
            if rate <= 0:
                raise ValueError(f"a rate must be positive, not {rate:g}")
        if self.processes < 1:
            raise ValueError(f"need at least one load-generator process, not {self.processes}")
        if not 0 <= self.loadgen_niceness <= MAX_NICENESS:
            raise ValueError(f"a niceness is from 0 to {MAX_NICENESS}, not {self.loadgen_niceness}")

    @property
    def paced_rates(self) -> tuple[float, ...]:
        return self.rates or (float(self.matches),)

    @property
    def warmup_s(self) -> float:
        return min(5.0, max(0.5, self.duration_s / 5))

    def windows(self, start: float) -> tuple[Window, ...]:
        """The windows of play, back to back from ``start`` (monotonic seconds)."""
        if self.mode == "bots":
            paces = [("bots", 0.0)]
        else:
            rates = self.paced_rates
            names = ["paced"] if len(rates) == 1 else [f"paced {rate:,.0f}/s" for rate in rates]
            paces = [(name, self.matches / rate) for name, rate in zip(names, rates, strict=True)]
            paces.append(("flat-out", 1 / MAX_MOVES_PER_MATCH_S))
        windows = []
        for name, interval in paces:
            measure_from = start + self.warmup_s
            end = measure_from + self.duration_s
            windows.append(Window(name, start, measure_from, end, interval))
            start = end
        return tuple(windows)


async def run_server_benchmark(plan: ServerBenchPlan, command: str, progress: Progress) -> ServerBenchReport:
    """Run the plan (see the module docstring) and return its figures."""
    async with LoadGenerators(plan.processes, plan.loadgen_niceness) as generators:
        echo, echo_memory = await _measure_echo(plan, generators, progress)
        with tempfile.TemporaryDirectory(prefix="plyarena-bench-server-") as scratch:
            db_url = plan.db_url or f"sqlite+aiosqlite:///{Path(scratch) / 'bench.sqlite3'}"
            progress(f"starting plyarena serve ({db_url.split(':', 1)[0]})")
            server = ServerUnderTest(db_url, Path(scratch))
            async with server:
                try:
                    figures = await _measure_server(plan, generators, server, progress)
                except BaseException:
                    progress(f"the server's log ends with:\n{server.log_tail()}")
                    raise
                finally:
                    with contextlib.suppress(Exception):
                        await generators.ask_all(lambda _: CloseAll())
                progress("stopping the server")
    connected, connect_s, live_at_start, memory, windows = figures
    return ServerBenchReport(
        command=command,
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        machine=machine_description(),
        mode=plan.mode,
        backend=db_url.split("+", 1)[0].split(":", 1)[0],
        game=plan.game,
        time_control=plan.time_control,
        clients=plan.clients,
        matches=plan.matches,
        processes=plan.processes,
        loadgen_niceness=plan.loadgen_niceness,
        connections_held=connected,
        connect_seconds=connect_s,
        live_at_start=live_at_start,
        server_memory=memory,
        echo_memory=echo_memory,
        windows=windows,
        echo=echo,
        notes=report_notes(plan, windows),
    )


async def _measure_echo(
    plan: ServerBenchPlan, generators: LoadGenerators, progress: Progress
) -> tuple[WindowResult, Memory]:
    async with EchoServer() as echo:
        progress(f"echo baseline: opening {plan.clients:,} connections")
        await asyncio.sleep(SETTLE_S)
        before = rss_bytes(echo.pid)
        shares = split(plan.clients, generators.count)
        opened = _opened(await generators.ask([Connect(echo.ws_url, share, hello=False) for share in shares]))
        await asyncio.sleep(SETTLE_S)
        memory = Memory(before, rss_bytes(echo.pid), opened)
        loop = asyncio.get_running_loop()
        start = loop.time() + 0.5
        window = Window(
            "echo", start, start + plan.warmup_s, start + plan.warmup_s + plan.duration_s,
            1 / MAX_MOVES_PER_MATCH_S,
        )  # fmt: skip
        progress(f"echo baseline: {plan.matches:,} connections echoing for {plan.duration_s:g} s")
        actives = split(plan.matches, generators.count)
        replies, observations = await asyncio.gather(
            generators.ask([Echo(active, ECHO_PAYLOAD, window) for active in actives]),
            _observe((window,), echo.pid, generators.pids, None),
        )
        await generators.ask_all(lambda _: CloseAll())
    return summarize(window, _samples(replies, 0), observations[0], plan.matches), memory


async def _measure_server(
    plan: ServerBenchPlan, generators: LoadGenerators, server: ServerUnderTest, progress: Progress
) -> tuple[int, float, int, Memory, tuple[WindowResult, ...]]:
    await asyncio.sleep(SETTLE_S)
    before = rss_bytes(server.pid)
    pairs = split(plan.matches, generators.count)
    idle = split(plan.clients - 2 * plan.matches, generators.count)
    started = time.monotonic()
    if plan.mode == "scripted":
        progress(f"opening {plan.clients:,} connections, each saying hello")
        shares = [2 * pair + rest for pair, rest in zip(pairs, idle, strict=True)]
        connects = [Connect(server.ws_url, share, hello=True) for share in shares]
        opened = _opened(await generators.ask(connects))
    else:
        progress(f"opening {plan.clients - 2 * plan.matches:,} idle connections and connecting "
                 f"{2 * plan.matches:,} level-{BOT_LEVEL} bots")  # fmt: skip
        opened = _opened(await generators.ask([Connect(server.ws_url, share, hello=True) for share in idle]))
        opened += _opened(
            await generators.ask([
                StartBots(server.ws_url, share, plan.game, BOT_LEVEL, plan.time_control, seed=10_000 * index)
                for index, share in enumerate(pairs)
            ])
        )  # fmt: skip
    connect_s = time.monotonic() - started
    await asyncio.sleep(SETTLE_S)
    memory = Memory(before, rss_bytes(server.pid), opened)
    connected = int((await server.metrics()).get("plyarena_connections"))
    if plan.mode == "scripted":
        progress(f"starting {plan.matches:,} matches of {plan.game}")
        replies = await generators.ask([
            StartMatches(share, plan.game, plan.time_control, seed=index) for index, share in enumerate(pairs)
        ])  # fmt: skip
        failed = sum(reply.failed for reply in replies if isinstance(reply, Started))
        if failed:
            errors = [reply.first_error for reply in replies if isinstance(reply, Started) and reply.failed]
            raise RuntimeError(f"{failed} of {plan.matches} matches did not start: {errors[0]}")
    live_at_start = int((await server.metrics()).get("plyarena_live_matches"))
    windows = plan.windows(asyncio.get_running_loop().time() + 0.5)
    names = ", then ".join(f"{window.name} for {plan.warmup_s + plan.duration_s:g} s" for window in windows)
    progress(f"playing: {names}")
    played, observations = await asyncio.gather(
        generators.ask([Play(windows)] * generators.count),
        _observe(windows, server.pid, generators.pids, server),
    )
    results = tuple(
        summarize(window, _samples(played, index), observation, plan.matches)
        for index, (window, observation) in enumerate(zip(windows, observations, strict=True))
    )
    return connected, connect_s, live_at_start, memory, results


async def _observe(
    windows: Sequence[Window], pid: int, loadgen_pids: Sequence[int], server: ServerUnderTest | None
) -> list[Observation]:
    """Read CPU times (and ``/metrics``) at the start and end of each window's measured part."""
    loop = asyncio.get_running_loop()
    observations = []
    for window in windows:
        await asyncio.sleep(max(0.0, window.measure_from - loop.time()))
        first = await server.metrics() if server else None
        cpu_before, waiting_before = _cpu_times(pid, loadgen_pids), waiting_seconds(pid)
        began = loop.time()
        gauges = []
        while loop.time() + GAUGE_EVERY_S < window.end:
            await asyncio.sleep(GAUGE_EVERY_S)
            if server is not None:
                gauges.append(await server.metrics())
        await asyncio.sleep(max(0.0, window.end - loop.time()))
        last = await server.metrics() if server else None
        cpu_after, waiting_after = _cpu_times(pid, loadgen_pids), waiting_seconds(pid)
        if last is not None:
            gauges.append(last)
        spent = [after - before for before, after in zip(cpu_before, cpu_after, strict=True)]
        waited = None if waiting_before is None or waiting_after is None else waiting_after - waiting_before
        seconds = loop.time() - began
        observations.append(
            Observation(first, last, tuple(gauges), *spent, server_waiting_s=waited, seconds=seconds)
        )
    return observations


def _cpu_times(pid: int, loadgen_pids: Sequence[int]) -> tuple[float, float, float, float]:
    """CPU seconds so far of the server, of the processes it started (SQLite's writer), of the load
    generators, and of the whole machine."""
    helpers = _cpu_of(with_descendants([pid])[1:])
    return cpu_seconds(pid), helpers, _cpu_of(with_descendants(loadgen_pids)), machine_busy_seconds()


def _cpu_of(pids: Sequence[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):  # a process that ended meanwhile
            total += cpu_seconds(pid)
    return total


def _opened(replies: Sequence[object]) -> int:
    opened = [reply for reply in replies if isinstance(reply, Opened)]
    failed = sum(reply.failed for reply in opened)
    if failed:
        first = next(reply.first_error for reply in opened if reply.failed)
        raise RuntimeError(f"{failed} connections could not be opened: {first}")
    return sum(reply.opened for reply in opened)


def _samples(replies: Sequence[object], window: int) -> list[WindowSamples]:
    return [reply.windows[window] for reply in replies if isinstance(reply, Played)]


def _set_by_the_load(window: WindowResult) -> bool:
    """Whether a window asked for more moves than it got while the server still had time to spare."""
    unpaced = window.asked_per_s is None or window.answered_per_s < 0.9 * window.asked_per_s
    return (
        window.durable_moves_per_s is not None
        and unpaced
        and window.server_cpu < SERVER_SPARE_CPU
        and window.loadgen_cpu > window.server_cpu
    )


def report_notes(plan: ServerBenchPlan, windows: tuple[WindowResult, ...]) -> tuple[str, ...]:
    """What a reader of the figures should know that the tables cannot say."""
    notes = []
    for window in windows:
        if window.loadgen_lag_p99_ms > 50:
            notes.append(
                f"In the {window.name} window the load generators' own event loops lagged (p99 "
                f"{window.loadgen_lag_p99_ms:.0f} ms): their round trips include that wait, and they may "
                "have offered less than asked."
            )
        if _set_by_the_load(window):
            notes.append(
                f"In the {window.name} window the server used {window.server_cpu:.2f} of a core and the "
                f"load generators {window.loadgen_cpu:.2f}: they, not the server, set the pace, so its "
                "moves/s and round trips measure them."
            )
    if plan.mode == "scripted" and plan.matches * MAX_MOVES_PER_MATCH_S < 50_000:
        notes.append(
            f"With {plan.matches:,} matches, flat-out is capped at {MAX_MOVES_PER_MATCH_S:g} moves per "
            "match per second (the protocol's rate limit), echoes alike: the ratio compares two capped rates."
        )
    return tuple(notes)
