"""What ``/metrics`` reports, in the Prometheus text exposition format.

A handful of counters and gauges kept as plain attributes (one process, one
event loop: no locks needed), plus the store's write statistics, rendered on
demand. Metric names follow Prometheus conventions (``_total`` for counters,
base units).

Garbage collections are timed too (:meth:`Metrics.time_collections`): each one
stops the whole process, with thousands of connections a full one for most of a
second (see :mod:`server.limits`), and no other figure would show it as such.

The event-loop lag is how late the loop runs a callback that is due: every
request, commit and broadcast waits that long before it even starts, so it is
the first figure to watch when the server is busy. :func:`measure_loop_lag`
samples it by sleeping again and again and recording each wake-up's overshoot.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from server.storage.stats import Histogram, WriteStats

LOOP_LAG_INTERVAL_S = 0.02
"""How often the lag is sampled: often enough for a p99 within seconds, rarely enough to cost nothing."""
LOOP_LAG_BUCKETS_S = (
    0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0,
    2.5,
)  # fmt: skip


@dataclass(slots=True)
class Metrics:
    connections: int = 0
    connections_total: int = 0
    connections_refused_total: int = 0
    match_counts: Callable[[], Mapping[str, int]] = field(default=lambda: {})
    """Open and live matches by status (``open_matches``, ``live_matches``), counted when rendered: keeping
    them up to date on every change would cost a pass over every match each time one starts or ends."""
    moves_total: int = 0
    matches_finished_total: int = 0
    finished_matches: int = 0
    """Finished matches held in memory (for rematches, post-game chat and late watchers)."""
    finished_matches_evicted_total: int = 0
    requests_total: int = 0
    errors_total: Counter[str] = field(default_factory=Counter)
    bus_dropped: Callable[[], int] = field(default=lambda: 0)
    """Events the bus dropped, its queue for the broker full while the broker was unreachable."""
    loop_lag_seconds: Histogram = field(default_factory=lambda: Histogram(LOOP_LAG_BUCKETS_S))
    gc_pause_seconds: list[Histogram] = field(
        default_factory=lambda: [Histogram(LOOP_LAG_BUCKETS_S) for _ in range(3)]
    )
    """How long each garbage collection stopped everything, by generation (a full one is generation 2)."""
    _gc_started: float = 0.0

    def time_collections(self, phase: str, info: Mapping[str, int]) -> None:
        """A ``gc.callbacks`` entry: the loop stands still while the collector runs, so its pauses count."""
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc_pause_seconds[info["generation"]].observe(time.perf_counter() - self._gc_started)

    def render(self, writes: WriteStats | None) -> str:
        """The exposition text, the store's write path included when there is one."""
        lines: list[str] = []

        def metric(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> None:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            lines.extend(f"{name}{labels} {_number(value)}" for labels, value in samples)

        metric("plyarena_connections", "gauge", "Open WebSocket connections.", [("", self.connections)])
        metric(
            "plyarena_connections_total",
            "counter",
            "WebSocket connections accepted.",
            [("", self.connections_total)],
        )
        metric(
            "plyarena_connections_refused_total",
            "counter",
            "WebSocket connections refused: their address held all the connections it may.",
            [("", self.connections_refused_total)],
        )
        counts = self.match_counts()
        metric(
            "plyarena_live_matches", "gauge", "Matches being played.", [("", counts.get("live_matches", 0))]
        )
        metric(
            "plyarena_open_matches",
            "gauge",
            "Matches waiting for a player.",
            [("", counts.get("open_matches", 0))],
        )
        metric("plyarena_moves_total", "counter", "Moves committed and broadcast.", [("", self.moves_total)])
        metric(
            "plyarena_matches_finished_total",
            "counter",
            "Matches that ended (finished or aborted).",
            [("", self.matches_finished_total)],
        )
        metric(
            "plyarena_finished_matches",
            "gauge",
            "Matches that are over, held in memory for rematches, post-game chat and late watchers.",
            [("", self.finished_matches)],
        )
        metric(
            "plyarena_finished_matches_evicted_total",
            "counter",
            "Matches that are over, forgotten before their time to stay within max_finished_in_memory.",
            [("", self.finished_matches_evicted_total)],
        )
        metric("plyarena_requests_total", "counter", "Client requests received.", [("", self.requests_total)])
        metric(
            "plyarena_errors_total",
            "counter",
            "Error replies, by code.",
            [(f'{{code="{code}"}}', count) for code, count in sorted(self.errors_total.items())],
        )
        metric(
            "plyarena_bus_dropped_total",
            "counter",
            "Bus events dropped: the broker unreachable, and the queue of what waits for it full.",
            [("", self.bus_dropped())],
        )
        lines.extend(
            _histogram(
                "plyarena_event_loop_lag_seconds",
                "How late the event loop woke a sleeper that was due (sampled every "
                f"{LOOP_LAG_INTERVAL_S * 1000:g} ms).",
                self.loop_lag_seconds,
            )
        )
        for generation, pauses in enumerate(self.gc_pause_seconds):
            lines.extend(
                _histogram(
                    "plyarena_gc_pause_seconds",
                    "How long each garbage collection stopped the process, by generation (2: full).",
                    pauses,
                    f'generation="{generation}"',
                    header=generation == 0,
                )
            )
        for name, help_text, value in process_figures():
            metric(name, "gauge", help_text, [("", value)])
        if writes is not None:
            metric(
                "plyarena_store_transactions_total",
                "counter",
                "Committed write transactions (many moves may share one).",
                [("", writes.transactions)],
            )
            metric("plyarena_store_writes_total", "counter", "Committed writes.", [("", writes.writes)])
            metric(
                "plyarena_store_failed_writes_total",
                "counter",
                "Writes that failed.",
                [("", writes.failed_writes)],
            )
            lines.extend(
                _histogram(
                    "plyarena_commit_seconds",
                    "Time from a write being queued to its transaction committing.",
                    writes.commit_seconds,
                )
            )
        return "\n".join(lines) + "\n"


def process_figures() -> list[tuple[str, str, float]]:
    """The process's open file descriptors, their limit and its resident memory, by Prometheus' usual
    names, each where the system tells it (Linux's /proc; elsewhere the limit alone, or nothing): when
    connections pile up, descriptors run out first."""
    figures: list[tuple[str, str, float]] = []
    with contextlib.suppress(OSError):
        figures.append(("process_open_fds", "Open file descriptors.", len(os.listdir("/proc/self/fd"))))
    with contextlib.suppress(ImportError, OSError, ValueError):
        import resource  # (Unix only)

        soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft_limit != resource.RLIM_INFINITY:
            figures.append(("process_max_fds", "The most file descriptors it may open.", soft_limit))
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/self/statm", "rb") as statm:
        resident = int(statm.read().split()[1]) * os.sysconf("SC_PAGESIZE")
        figures.append(("process_resident_memory_bytes", "Resident memory.", resident))
    return figures


async def measure_loop_lag(lag: Histogram, interval_s: float = LOOP_LAG_INTERVAL_S) -> None:
    """Observe into ``lag`` how late each of endless ``interval_s`` sleeps wakes up (runs until cancelled)."""
    loop = asyncio.get_running_loop()
    while True:
        before = loop.time()
        await asyncio.sleep(interval_s)
        lag.observe(max(0.0, loop.time() - before - interval_s))


def _histogram(
    name: str, help_text: str, histogram: Histogram, labels: str = "", *, header: bool = True
) -> list[str]:
    """A histogram's lines; with ``labels``, one series of a family whose header came with its first."""
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"] if header else []
    prefix = f"{labels}," if labels else ""
    suffix = f"{{{labels}}}" if labels else ""
    for bound, count in histogram.cumulative():
        le = "+Inf" if math.isinf(bound) else _number(bound)
        lines.append(f'{name}_bucket{{{prefix}le="{le}"}} {count}')
    lines.append(f"{name}_sum{suffix} {_number(histogram.sum)}")
    lines.append(f"{name}_count{suffix} {histogram.count}")
    return lines


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
