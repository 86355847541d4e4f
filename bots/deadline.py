"""The optional time budget of a search.

Reading the clock costs about as much as visiting a node, so a search asks
:meth:`Deadline.check` only every :data:`CHECK_EVERY` nodes; the overshoot is
that many nodes at worst.
"""

from __future__ import annotations

import time

CHECK_EVERY = 1024
"""Nodes between two looks at the clock; a power of two so the test is a mask."""
CHECK_MASK = CHECK_EVERY - 1


class OutOfTime(Exception):
    """Raised inside a search when its budget is spent; the iteration in progress is dropped."""


class Deadline:
    """A point in time after which a search must stop, or none at all."""

    __slots__ = ("budget_ms", "end", "start")

    def __init__(self, budget_ms: float | None) -> None:
        if budget_ms is not None and not budget_ms >= 0:  # written so that nan, never >= 0, is refused too
            raise ValueError(f"time budget must be a number >= 0 ms, got {budget_ms}")
        self.budget_ms = budget_ms
        self.start = time.perf_counter()
        self.end = None if budget_ms is None else self.start + budget_ms / 1000

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.start) * 1000

    def remaining_ms(self) -> float:
        """Milliseconds left; infinite without a budget."""
        return float("inf") if self.end is None else (self.end - time.perf_counter()) * 1000

    def check(self) -> None:
        """Raise :class:`OutOfTime` once the budget is spent."""
        if self.end is not None and time.perf_counter() >= self.end:
            raise OutOfTime
