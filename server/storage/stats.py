"""Figures about the store's write path, for ``/metrics``.

Plain counters and fixed-bucket histograms in the shape Prometheus expects
(cumulative buckets, a sum and a count), so the HTTP front renders them without
knowing how the writer works.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

LATENCY_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
BATCH_SIZE_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


@dataclass(slots=True)
class Histogram:
    """Observations counted into buckets by upper bound (``le``), as in Prometheus."""

    bounds: tuple[float, ...]
    counts: list[int] = field(init=False)
    sum: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def observe_all(self, values: Sequence[float]) -> None:
        """:meth:`observe` each of ``values``, with no Python code run for each: a batch's commit observes
        one value a write."""
        counts = self.counts
        for bucket, count in Counter(map(partial(bisect.bisect_left, self.bounds), values)).items():
            counts[bucket] += count
        self.sum = sum(values, self.sum)
        self.count += len(values)

    def cumulative(self) -> list[tuple[float, int]]:
        """``(le, observations <= le)`` for every bucket, ending with ``(inf, count)``."""
        total, result = 0, []
        for bound, count in zip((*self.bounds, math.inf), self.counts, strict=True):
            total += count
            result.append((bound, total))
        return result


@dataclass(slots=True)
class WriteStats:
    """What the writer task has done since the store opened.

    ``commit_seconds`` is what callers wait for: from a write being queued to its
    transaction committing. ``transactions`` counts committed transactions, so
    ``writes / transactions`` is how many writes share a commit.
    """

    transactions: int = 0
    writes: int = 0
    moves: int = 0
    failed_writes: int = 0
    split_batches: int = 0  # batches that failed and were retried one write at a time
    batch_size: Histogram = field(default_factory=lambda: Histogram(BATCH_SIZE_BUCKETS))
    commit_seconds: Histogram = field(default_factory=lambda: Histogram(LATENCY_BUCKETS_S))
    transaction_seconds: Histogram = field(default_factory=lambda: Histogram(LATENCY_BUCKETS_S))
