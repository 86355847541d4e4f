"""A bounded transposition table: what the search already learnt about a position.

The same position is reached by many move orders (in Connect Four, nearly every
position is); searching it once and remembering the result is the single biggest
saving after alpha-beta itself. The table has a fixed number of slots, chosen by
the hash of ``position.key()``, and a new entry always replaces the old one, as
in Pascal Pons' solver: recent entries are the ones the search is about to need,
and a fixed size means a bounded memory whatever the game.

Each entry keeps the depth it was searched to, the score, what kind of bound the
score is (alpha-beta proves exact values only inside its window), the best move
(tried first next time, even when the score cannot be reused) and whether the
score is *resolved*: every line under it reached the end of the game, so it holds
at any greater depth too.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import NamedTuple

from bots.result import DECISIVE
from games import Move

EXACT, LOWER, UPPER = 0, 1, 2
"""Bound kinds: the value itself, a lower bound (a cut-off), an upper bound (no move reached alpha)."""

DEFAULT_SIZE_LOG2 = 18
"""2**18 slots: a few tens of megabytes when full."""


class Entry(NamedTuple):
    key: Hashable
    depth: int
    score: int
    bound: int
    move: Move
    resolved: bool


def to_table(score: int, ply: int) -> int:
    """A score measured from the root, re-measured from the node ``ply`` plies below it.

    Only won and lost games depend on where they are counted from: a win in 5
    plies from the root is a win in ``5 - ply`` from the node, wherever the
    position is met again.
    """
    if score > DECISIVE:
        return score + ply
    if score < -DECISIVE:
        return score - ply
    return score


def from_table(score: int, ply: int) -> int:
    """The inverse of :func:`to_table`."""
    if score > DECISIVE:
        return score - ply
    if score < -DECISIVE:
        return score + ply
    return score


class TranspositionTable:
    """``2**size_log2`` slots, indexed by ``hash(key)``; always replace."""

    __slots__ = ("mask", "slots")

    def __init__(self, size_log2: int = DEFAULT_SIZE_LOG2) -> None:
        if not 0 <= size_log2 <= 30:
            raise ValueError(f"size_log2 must be between 0 and 30, got {size_log2}")
        self.mask = (1 << size_log2) - 1
        self.slots: list[Entry | None] = [None] * (self.mask + 1)

    def get(self, key: Hashable) -> Entry | None:
        """The entry for ``key``, or ``None`` if its slot holds nothing or another position."""
        entry = self.slots[hash(key) & self.mask]
        return entry if entry is not None and entry.key == key else None

    def put(self, key: Hashable, depth: int, score: int, bound: int, move: Move, resolved: bool) -> None:
        self.slots[hash(key) & self.mask] = Entry(key, depth, score, bound, move, resolved)
