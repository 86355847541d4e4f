"""What ``/metrics`` reports, in the Prometheus text exposition format.

A handful of counters and gauges kept as plain attributes (one process, one
event loop: no locks needed), plus the store's write statistics, rendered on
demand. Metric names follow Prometheus conventions (``_total`` for counters,
base units).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from server.storage.stats import Histogram, WriteStats


@dataclass(slots=True)
class Metrics:
    connections: int = 0
    connections_total: int = 0
    live_matches: int = 0
    open_matches: int = 0
    moves_total: int = 0
    matches_finished_total: int = 0
    requests_total: int = 0
    errors_total: Counter[str] = field(default_factory=Counter)
    bus_dropped_total: int = 0
    bus_failures_total: int = 0

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
        metric("plyarena_live_matches", "gauge", "Matches being played.", [("", self.live_matches)])
        metric("plyarena_open_matches", "gauge", "Matches waiting for a player.", [("", self.open_matches)])
        metric("plyarena_moves_total", "counter", "Moves committed and broadcast.", [("", self.moves_total)])
        metric(
            "plyarena_matches_finished_total",
            "counter",
            "Matches that ended (finished or aborted).",
            [("", self.matches_finished_total)],
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
            "Bus messages dropped because the outbox was full.",
            [("", self.bus_dropped_total)],
        )
        metric(
            "plyarena_bus_failures_total",
            "counter",
            "Bus publishes that failed.",
            [("", self.bus_failures_total)],
        )
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


def _histogram(name: str, help_text: str, histogram: Histogram) -> list[str]:
    lines = [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"]
    for bound, count in histogram.cumulative():
        le = "+Inf" if math.isinf(bound) else _number(bound)
        lines.append(f'{name}_bucket{{le="{le}"}} {count}')
    lines.append(f"{name}_sum {_number(histogram.sum)}")
    lines.append(f"{name}_count {histogram.count}")
    return lines


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
