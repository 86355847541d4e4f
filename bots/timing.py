"""How long a bot may think for one move, given its clock.

A bot must never lose on time under a sane time control, yet should use the
time it has. The rule is the usual one of chess engines: spend a share of what
is left (as if about :data:`MOVES_TO_GO` moves remained) plus most of the
increment, keep a safety margin for the trip over the wire and the hop to a
worker process, and never spend more than the level itself would. With little
time left the budget shrinks, and iterative deepening stops at a shallower
depth.
"""

from __future__ import annotations

from dataclasses import dataclass

MOVES_TO_GO = 30
"""Moves we assume are still to play when sharing out the remaining time."""

INCREMENT_SHARE = 0.8
"""Share of the increment spent on each move; the rest builds a reserve."""

SAFETY_MS = 150
"""Kept back from every timed move: network round trip, process hop, scheduling."""

MIN_BUDGET_MS = 5
"""The least a search is given: enough for a shallow search, so there is always a move."""


@dataclass(frozen=True, slots=True)
class Clock:
    """The bot's own clock as the server last reported it (milliseconds)."""

    remaining_ms: int
    increment_ms: int = 0


def think_budget_ms(level_budget_ms: int | None, clock: Clock | None) -> int | None:
    """The time budget for one search, or ``None`` for "no limit but the level's depth".

    ``level_budget_ms`` is the level's own budget (``None`` if the level is bounded
    by depth only); ``clock`` is ``None`` for an untimed match.
    """
    if level_budget_ms is not None and level_budget_ms < 0:
        raise ValueError(f"level budget must be >= 0 ms, got {level_budget_ms}")
    if clock is None:
        return level_budget_ms
    if clock.remaining_ms < 0 or clock.increment_ms < 0:
        raise ValueError(f"clock times must be >= 0 ms, got {clock}")
    share = clock.remaining_ms / MOVES_TO_GO + clock.increment_ms * INCREMENT_SHARE
    # Never plan to spend more than half of what is left, whatever the increment says.
    budget = min(share, clock.remaining_ms / 2) - SAFETY_MS
    if level_budget_ms is not None:
        budget = min(budget, level_budget_ms)
    return max(MIN_BUDGET_MS, int(budget))
