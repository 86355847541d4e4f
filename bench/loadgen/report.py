"""The figures of one ``plyarena bench server`` run, as tables for the terminal and Markdown for the docs.

Round trips are the clients' own: from sending a move (or an echo) to reading
its reply, merged over every load-generator process. Durable moves per second
come from the server's ``plyarena_moves_total``, which counts a move only once
it is committed; event-loop lag, commits and gauges also come from ``/metrics``,
read at the start and end of each window's measured part. Latency histograms
give quantiles as Prometheus does (linear within a bucket), so a server lag of
"3.2 ms" means "between the 3 and 5 ms bucket bounds".
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from bench.engine import TextTable
from bench.loadgen.commands import Window, WindowSamples
from bench.loadgen.target import Scrape

TARGET_CONNECTIONS = 10_000
TARGET_LIVE_MATCHES = 5_000
TARGET_MOVES_PER_S = 5_000.0
TARGET_P99_MS = 50.0
TARGET_ECHO_RATIO = 0.5
SECTION_TITLE = "## Server: connections, live matches, durable moves, against a raw websockets echo"


@dataclass(frozen=True, slots=True)
class Spread:
    """Quantiles of a sample, in its unit (``nan`` without samples)."""

    count: int
    p50: float
    p95: float
    p99: float
    max: float

    @classmethod
    def of(cls, samples: Iterable[float]) -> Spread:
        ordered = sorted(samples)
        if not ordered:
            return cls(0, math.nan, math.nan, math.nan, math.nan)
        return cls(
            len(ordered),
            percentile(ordered, 50),
            percentile(ordered, 95),
            percentile(ordered, 99),
            ordered[-1],
        )


def percentile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile of an ascending sequence."""
    rank = math.ceil(q / 100 * len(ordered))
    return ordered[min(len(ordered) - 1, max(0, rank - 1))]


def histogram_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float:
    """The ``q`` quantile (0-1) of a cumulative histogram, interpolated as Prometheus' ``histogram_quantile``.

    ``inf`` when it lies past the last finite bound (off the histogram's scale); ``nan`` when empty.
    """
    if not buckets or buckets[-1][1] <= 0:
        return math.nan
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if math.isinf(bound):
                return math.inf
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return lower_bound


def bucket_delta(before: Scrape, after: Scrape, histogram: str) -> list[tuple[float, float]]:
    """The histogram's observations between two readings."""
    earlier = dict(before.buckets(histogram))
    return [(bound, count - earlier.get(bound, 0.0)) for bound, count in after.buckets(histogram)]


@dataclass(frozen=True, slots=True)
class Observation:
    """What the bench read from outside during a window's measured part."""

    first: Scrape | None
    last: Scrape | None
    gauges: tuple[Scrape, ...]
    """Readings about once a second, for the gauges' medians."""
    server_cpu_s: float
    helpers_cpu_s: float
    """The processes the server started: SQLite's writer."""
    loadgen_cpu_s: float
    machine_busy_s: float
    """Every core's busy time, whoever used it: the rest is other processes' (and the kernel's network)."""
    server_waiting_s: float | None
    """How long the server's event loop was ready to run but waited for a core (``None``: not counted)."""
    seconds: float


@dataclass(frozen=True, slots=True)
class WindowResult:
    name: str
    interval_s: float
    asked_per_s: float | None
    """Moves (or echoes) per second the clients offered: every match moving once per interval."""
    seconds: float
    round_trips_ms: Spread
    answered_per_s: float
    """Replies to moves (or echoes) the clients received, per second."""
    durable_moves_per_s: float | None
    """From the server's committed-move counter; ``None`` for the echo."""
    errors: dict[str, int]
    games_ended: int
    connections: float | None
    live_matches: float | None
    server_lag_ms: tuple[float, float] | None
    """Event-loop lag p50 and p99, from the server's histogram."""
    commits_per_s: float | None
    writes_per_commit: float | None
    commit_p99_ms: float | None
    server_cpu: float
    """CPU time over wall time: 1.0 is one core kept busy."""
    helpers_cpu: float
    """The same for the processes the server started (SQLite's writer), on the other core."""
    loadgen_cpu: float
    other_cpu: float
    """Cores busy with anything else: other processes, and the kernel's work for the loopback network."""
    loadgen_lag_p99_ms: float
    gc_share: float | None = None
    """The part of the window the server spent in garbage collections, which stop it whole."""
    full_collections: int | None = None
    server_waiting: float | None = None
    """The part of the window the server's event loop was ready to run but waited for a core, which its
    SQLite writer, its clients and everything else held: time it could not use, beside ``server_cpu``."""


def summarize(
    window: Window, samples: Sequence[WindowSamples], observed: Observation, active: int
) -> WindowResult:
    """One window's figures from every process's samples and the readings taken meanwhile."""
    seconds = observed.seconds
    trips = [value for part in samples for value in part.round_trips_ms]
    errors: dict[str, int] = {}
    for part in samples:
        for code, count in part.errors.items():
            errors[code] = errors.get(code, 0) + count
    first, last = observed.first, observed.last
    durable = lag = commits = per_commit = commit_p99 = None
    connections = live = gc_share = full_collections = None
    if first is not None and last is not None:
        elapsed = last.at - first.at
        durable = (last.get("plyarena_moves_total") - first.get("plyarena_moves_total")) / elapsed
        lag_buckets = bucket_delta(first, last, "plyarena_event_loop_lag_seconds")
        lag = (1000 * histogram_quantile(0.5, lag_buckets), 1000 * histogram_quantile(0.99, lag_buckets))
        transactions = last.get("plyarena_store_transactions_total") - first.get(
            "plyarena_store_transactions_total"
        )
        writes = last.get("plyarena_store_writes_total") - first.get("plyarena_store_writes_total")
        commits = transactions / elapsed
        per_commit = writes / transactions if transactions else None
        commit_p99 = 1000 * histogram_quantile(0.99, bucket_delta(first, last, "plyarena_commit_seconds"))
        connections = statistics.median(scrape.get("plyarena_connections") for scrape in observed.gauges)
        live = statistics.median(scrape.get("plyarena_live_matches") for scrape in observed.gauges)
        pauses = [f'plyarena_gc_pause_seconds_sum{{generation="{generation}"}}' for generation in range(3)]
        gc_share = sum(last.get(name) - first.get(name) for name in pauses) / elapsed
        full = 'plyarena_gc_pause_seconds_count{generation="2"}'
        full_collections = int(last.get(full) - first.get(full))
    lags = [value for part in samples for value in part.loop_lag_ms]
    return WindowResult(
        name=window.name,
        interval_s=window.interval_s,
        asked_per_s=active / window.interval_s if window.interval_s > 0 else None,
        seconds=seconds,
        round_trips_ms=Spread.of(trips),
        answered_per_s=len(trips) / seconds,
        durable_moves_per_s=durable,
        errors=errors,
        games_ended=sum(part.games_ended for part in samples),
        connections=connections,
        live_matches=live,
        server_lag_ms=lag,
        commits_per_s=commits,
        writes_per_commit=per_commit,
        commit_p99_ms=commit_p99,
        server_cpu=observed.server_cpu_s / seconds,
        helpers_cpu=observed.helpers_cpu_s / seconds,
        loadgen_cpu=observed.loadgen_cpu_s / seconds,
        other_cpu=(
            observed.machine_busy_s - observed.server_cpu_s - observed.helpers_cpu_s - observed.loadgen_cpu_s
        )
        / seconds,
        loadgen_lag_p99_ms=Spread.of(lags).p99,
        gc_share=gc_share,
        full_collections=full_collections,
        server_waiting=None if observed.server_waiting_s is None else observed.server_waiting_s / seconds,
    )


@dataclass(frozen=True, slots=True)
class Memory:
    """A server's resident memory before and after the bench's connections were opened."""

    before_bytes: int
    after_bytes: int
    connections: int

    @property
    def per_connection_kib(self) -> float:
        if self.connections == 0:
            return math.nan
        return (self.after_bytes - self.before_bytes) / self.connections / 1024


@dataclass(frozen=True, slots=True)
class ServerBenchReport:
    command: str
    date: str
    machine: str
    mode: str
    backend: str
    game: str
    time_control: str
    clients: int
    matches: int
    processes: int
    loadgen_niceness: int
    connections_held: int
    """The server's connection gauge once every client had connected (and said hello)."""
    connect_seconds: float
    live_at_start: int
    """Live matches once every pair had started one, before the first window."""
    server_memory: Memory
    echo_memory: Memory
    windows: tuple[WindowResult, ...]
    echo: WindowResult
    notes: tuple[str, ...] = field(default=())

    @property
    def paced(self) -> WindowResult:
        """The window at the (first) asked pace (in bots mode, the only one)."""
        return self.windows[0]

    @property
    def paced_windows(self) -> tuple[WindowResult, ...]:
        """Every window at an asked pace: all but the flat-out one (in bots mode, the only one)."""
        return self.windows[:-1] if len(self.windows) > 1 else self.windows

    @property
    def best_moves_per_s(self) -> float:
        return max(window.durable_moves_per_s or 0.0 for window in self.windows)

    @property
    def echo_ratio(self) -> float:
        """The server's best durable moves per second over the echo server's echoes per second."""
        return self.best_moves_per_s / self.echo.answered_per_s if self.echo.answered_per_s else math.nan


def _ms(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    if math.isinf(value):
        return "off scale"  # past the histogram's last bucket
    return f"{value:.1f}" if value < 100 else f"{value:,.0f}"


def _count(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:,.0f}"


def _rate(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:.1f}" if value < 10 else f"{value:,.0f}"


def _verdict(met: bool) -> str:
    return "met" if met else "**missed**"


def target_rows(report: ServerBenchReport) -> list[tuple[str, ...]]:
    paced = report.paced
    p99 = paced.round_trips_ms.p99
    live = paced.live_matches or 0.0
    rows = [
        ("connections held", f"{TARGET_CONNECTIONS:,}", f"{report.connections_held:,}",
         _verdict(report.connections_held >= TARGET_CONNECTIONS)),
        ("live matches (median, first window)", f"{TARGET_LIVE_MATCHES:,}", _count(live),
         _verdict(live >= TARGET_LIVE_MATCHES)),
        ("durable moves/s (best window)", f"{TARGET_MOVES_PER_S:,.0f}", _rate(report.best_moves_per_s),
         _verdict(report.best_moves_per_s >= TARGET_MOVES_PER_S)),
        (f"move round trip p99 ({paced.name} window)", f"< {TARGET_P99_MS:g} ms", f"{_ms(p99)} ms",
         _verdict(p99 < TARGET_P99_MS)),
        ("durable moves/s over echoes/s", f">= {TARGET_ECHO_RATIO:g}", f"{report.echo_ratio:.2f}",
         _verdict(report.echo_ratio >= TARGET_ECHO_RATIO)),
    ]  # fmt: skip
    return rows


def report_tables(report: ServerBenchReport) -> list[TextTable]:
    """Targets, each window, memory, and the run's setup, as titled tables."""
    targets = TextTable(
        "Targets (one server process, 2 cores shared with the load generators)",
        ("figure", "target", "measured", "verdict"),
        target_rows(report),
    )
    every = (report.echo, *report.windows)
    windows = TextTable(
        "Windows",
        ("", *(window.name for window in every)),
        [(label, *(cell(window) for window in every)) for label, cell in WINDOW_ROWS],
        caption="*asked*: what the clients offered (each match, or echoing connection, once per interval); "
        "*answered*: the replies they read; CPU in cores (1.0 = one core busy); lag: how late the event "
        "loop woke a due sleeper.",
    )
    memory = TextTable(
        "Memory (resident set size)",
        ("server", "before", "after", "connections", "KiB per connection"),
        [
            (
                name,
                f"{m.before_bytes / 2**20:,.0f} MiB",
                f"{m.after_bytes / 2**20:,.0f} MiB",
                f"{m.connections:,}",
                f"{m.per_connection_kib:.1f}",
            )
            for name, m in (("plyarena serve", report.server_memory), ("websockets echo", report.echo_memory))
        ],
    )
    return [targets, windows, memory]


def _errors(window: WindowResult) -> str:
    return ", ".join(f"{code} {count}" for code, count in sorted(window.errors.items())) or "0"


def _cpu_per_message(window: WindowResult) -> str:
    """The server's CPU per durable move, or per echo in the echo window: what one costs it, in us."""
    rate = window.answered_per_s if window.durable_moves_per_s is None else window.durable_moves_per_s
    return f"{1e6 * window.server_cpu / rate:,.0f}" if rate else "-"


def _cores(cores: float | None) -> str:
    """Cores (CPU seconds a second), or "-" where they were not counted."""
    return "-" if cores is None else f"{cores:.2f}"


def _lag(window: WindowResult) -> str:
    lag = window.server_lag_ms
    return "-" if lag is None else f"{_ms(lag[0])} / {_ms(lag[1])}"


WINDOW_ROWS: tuple[tuple[str, Callable[[WindowResult], str]], ...] = (
    ("pace per match", lambda w: f"every {w.interval_s * 1000:.0f} ms" if w.interval_s else "own pace"),
    ("asked/s", lambda w: _rate(w.asked_per_s)),
    ("answered/s", lambda w: _rate(w.answered_per_s)),
    ("durable moves/s", lambda w: _rate(w.durable_moves_per_s)),
    ("connections (median)", lambda w: _count(w.connections)),
    ("live matches (median)", lambda w: _count(w.live_matches)),
    ("round trip p50 / p95 / p99 / max ms",
     lambda w: " / ".join(_ms(v) for v in (w.round_trips_ms.p50, w.round_trips_ms.p95, w.round_trips_ms.p99,
                                           w.round_trips_ms.max))),
    ("server loop lag p50 / p99 ms", _lag),
    ("commits/s", lambda w: _rate(w.commits_per_s)),
    ("writes per commit", lambda w: "-" if w.writes_per_commit is None else f"{w.writes_per_commit:.1f}"),
    ("commit p99 ms", lambda w: _ms(w.commit_p99_ms)),
    ("server CPU", lambda w: f"{w.server_cpu:.2f}"),
    ("server ready but waiting for a core", lambda w: _cores(w.server_waiting)),
    ("server CPU per durable move (echo: per echo), us", _cpu_per_message),
    ("server's SQLite writer process CPU", lambda w: f"{w.helpers_cpu:.2f}"),
    ("server in GC: share of time / full collections",
     lambda w: "-" if w.gc_share is None else f"{w.gc_share:.0%} / {w.full_collections}"),
    ("load generators' CPU", lambda w: f"{w.loadgen_cpu:.2f}"),
    ("other CPU (other processes, kernel)", lambda w: f"{w.other_cpu:.2f}"),
    ("load generators' loop lag p99 ms", lambda w: _ms(w.loadgen_lag_p99_ms)),
    ("games ended", lambda w: f"{w.games_ended:,}"),
    ("errors", _errors),
)  # fmt: skip
"""The rows of the windows table: a label and how to show it for one window."""


def render_markdown(report: ServerBenchReport) -> str:
    """The server section of docs/benchmarks.md: this run, in full. (Earlier runs are in git's history.)"""
    paced = report.paced
    windows = ", then ".join(f"*{window.name}* ({_describe_pace(window)})" for window in report.windows)
    parts = [
        SECTION_TITLE,
        "",
        "`plyarena bench server` starts `plyarena serve` as its own process and drives it from "
        "load-generator processes (each its own event loop and thousands of WebSocket connections). "
        "Each window's *durable moves/s* counts moves committed to the database "
        "(`plyarena_moves_total`); round trips are the clients' own, from sending a move to reading "
        "its reply. The machine is shared: *other CPU* is what other processes and the kernel used "
        "meanwhile, which the server and its clients could not.",
        "",
        f"- Command: `{report.command}`",
        f"- Machine: {report.machine}",
        f"- Date: {report.date}",
        f"- Mode: {report.mode}; {report.clients:,} clients, {report.matches:,} matches of "
        f"{report.game} ({report.time_control}), database {report.backend}, "
        f"{report.processes} load-generator processes{_nicer(report.loadgen_niceness)}.",
        f"- Windows: echo baseline, then {windows}; each measured after a warm-up.",
        f"- Connections: {report.connections_held:,} held after {report.connect_seconds:.1f} s of "
        f"connecting; {report.live_at_start:,} matches live before the first window.",
        "- The reference of the ratio: in the same run, before the server, the same load generators "
        f"open {report.clients:,} connections to a minimal websockets echo server (websockets' own "
        "example: each message sent back), in a process of its own on the same event loop and at the "
        f"server's priority, and on {report.matches:,} of them send a frame of a move's size and shape "
        "and wait for its echo, each connection at most once every "
        f"{report.echo.interval_s * 1000:.0f} ms; the ratio is the best window's durable moves/s over "
        "those echoes/s.",
        f"- Quoted from this run: round trip median {_ms(paced.round_trips_ms.p50)} ms and p99 "
        f"{_ms(paced.round_trips_ms.p99)} ms at {_rate(paced.durable_moves_per_s)} durable moves/s; "
        f"best {_rate(report.best_moves_per_s)} durable moves/s against "
        f"{_rate(report.echo.answered_per_s)} echoes/s: ratio **{report.echo_ratio:.2f}**.",
    ]
    for table in report_tables(report):
        parts += ["", table.markdown()]
    if report.notes:
        parts += ["", *(f"- {note}" for note in report.notes)]
    return "\n".join(parts).rstrip() + "\n"


def _nicer(niceness: int) -> str:
    return f" at nice {niceness} (the servers at 0)" if niceness else " at the servers' priority"


def _describe_pace(window: WindowResult) -> str:
    if window.asked_per_s is None:
        return "as fast as the bots think and the server answers"
    return f"each match moves every {window.interval_s * 1000:.0f} ms"
