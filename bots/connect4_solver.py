"""Exact Connect Four solver: the score of a position under perfect play, and a move that keeps it.

Scores follow Pascal Pons' convention, from the side to move: a win scores 22
minus the number of stones the winner has played when the game ends (winning
sooner scores more), a loss the negative of the opponent's win, a draw 0.

The search (negamax with null windows, a transposition table and Pons' other
ideas) is :class:`~bots.connect4_exact_search.PythonSearch`, the reference, or
its compiled twin in ``bots/connect4_exact/``, 25 to 35 times faster, which
``pip install`` builds where a C compiler is found: :data:`Search` is the
compiled one when it was built, unless ``PLYARENA_NO_SPEEDUPS=1``. Both give
the same scores and moves.

The module keeps no state between calls, so :func:`solve` and :func:`analyze`
run as they are in a process pool, given a position or a move string.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bots.connect4_exact_search import (
    PythonSearch,
    SolverBudgetExceeded,
    centre_first,
    search_order,
)
from games.connect4 import ConnectFour

__all__ = [
    "NODES_PER_MS",
    "NO_SPEEDUPS_VARIABLE",
    "CompiledSearch",
    "ExactSearch",
    "PythonSearch",
    "Search",
    "SearchFactory",
    "Solution",
    "SolverBudgetExceeded",
    "WeakSolver",
    "analyze",
    "solve",
]


@dataclass(frozen=True, slots=True)
class Solution:
    """The exact score of a position, a move that achieves it and the search's cost."""

    score: int
    """From the side to move's view, in Pons' convention (see the module docstring)."""
    move: int | None
    """A best column, 0-based; ``None`` once the game is over."""
    nodes: int
    """Positions the search visited."""


def solve(
    position: ConnectFour | str, *, max_nodes: int | None = None, search: SearchFactory | None = None
) -> Solution:
    """Solve ``position``, given as a position or as a string of column digits such as ``"4453"``.

    Early positions can take the search a long time (the pure-Python one minutes);
    with ``max_nodes`` it raises :class:`SolverBudgetExceeded` instead of going
    past that many. ``search`` names the search to run (default :data:`Search`),
    for the tests and the benchmark that set both side by side.
    """
    position = _as_position(position)
    solver = (search or Search)(max_nodes, None)
    score = solver.score(position)
    return Solution(score, solver.best_move(position, score), solver.nodes())


def analyze(
    position: ConnectFour | str, *, max_nodes: int | None = None, search: SearchFactory | None = None
) -> dict[int, int]:
    """The exact score of every legal move (column 0-6), from the side to move's view.

    What a bot needs to choose among moves by their true value, for example to
    play a slightly worse move on purpose at a lower level. Empty once the game
    is over. The searches share one transposition table, and ``max_nodes``
    (see :func:`solve`) bounds them all together; ``search`` as for :func:`solve`.
    """
    position = _as_position(position)
    solver = (search or Search)(max_nodes, None)
    return {move: -solver.score(position.play(move)) for move in position.legal_moves()}


def _as_position(position: ConnectFour | str) -> ConnectFour:
    if isinstance(position, str):
        return ConnectFour.from_moves(position.strip())
    return position


class WeakSolver:
    """Win, draw or loss of many related positions, sharing one transposition table.

    For offline work such as building an opening book: a weak solve is a couple
    of null-window searches around 0 instead of a binary search on the exact
    score, and the bounds one position's search leaves in the table answer much
    of the next one's. ``table_capacity`` bounds the table (8 bytes an entry
    compiled, about 80 in pure Python); the default suits a single move, a book
    wants far more. With ``max_nodes``, any call raises
    :class:`SolverBudgetExceeded` once the calls together have visited more
    positions.
    """

    __slots__ = ("_search",)

    def __init__(self, table_capacity: int | None = None, *, max_nodes: int | None = None) -> None:
        self._search = Search(max_nodes, table_capacity)

    def value(self, position: ConnectFour | str) -> int:
        """1 if the side to move wins under perfect play, 0 for a draw, -1 if it loses."""
        return self._search.value(_as_position(position))

    def keeping_move(self, position: ConnectFour | str, value: int) -> int | None:
        """A move that keeps ``value``, the position's :meth:`value`; ``None`` once the game is over.

        In a lost position every move keeps the loss: the search's first choice
        that does not lose at once, without a search.
        """
        position = _as_position(position)
        if value >= 0:
            return self._search.best_move(position, value)
        moves = position.legal_moves()
        if not moves:
            return None
        candidates = search_order(position, position.non_losing_moves())
        return candidates[0] if candidates else centre_first(moves)[0]

    def nodes(self) -> int:
        """Positions visited so far, over every call."""
        return self._search.nodes()

    def table_size(self) -> int:
        """Bounds the transposition table holds now."""
        return self._search.table_size()


class ExactSearch(Protocol):
    """What :class:`PythonSearch` and the compiled search both offer: one solve, or many sharing a table."""

    def score(self, position: ConnectFour) -> int:
        """The exact score of ``position``, finished or not."""
        ...

    def value(self, position: ConnectFour) -> int:
        """The sign of the exact score: 1 win, 0 draw, -1 loss for the side to move."""
        ...

    def best_move(self, position: ConnectFour, score: int) -> int | None:
        """A move that keeps ``score`` (or a bound the position reaches); ``None`` once the game is over."""
        ...

    def nodes(self) -> int:
        """Positions visited so far."""
        ...

    def table_size(self) -> int:
        """Bounds the transposition table holds now."""
        ...


SearchFactory = Callable[[int | None, int | None], ExactSearch]
"""A search's class, called with ``(max_nodes, table_capacity)``; ``None`` is no budget, the default size."""

NO_SPEEDUPS_VARIABLE = "PLYARENA_NO_SPEEDUPS"
"""Set to ``1``, the compiled search is not loaded and everything runs in Python; the same variable turns
off the compiled negamax of :mod:`bots.speedups` (as ``WEBSOCKETS_NO_SPEEDUPS`` turns off websockets')."""


def _load_compiled() -> SearchFactory | None:
    """``bots._connect4_exact_search.Search``, unless the environment says no or it was not built."""
    if os.environ.get(NO_SPEEDUPS_VARIABLE) == "1":
        return None
    try:
        from bots._connect4_exact_search import Search as compiled
    except ImportError:  # built without a C compiler
        return None
    return compiled


CompiledSearch = _load_compiled()
"""The compiled search, or ``None`` where it was not built or is turned off."""

Search: SearchFactory = CompiledSearch or PythonSearch
"""The search that :func:`solve`, :func:`analyze` and :class:`WeakSolver` run unless told otherwise."""

NODES_PER_MS = 5_000 if Search is CompiledSearch else 50
"""About the speed of :data:`Search` on positions with a dozen stones (the Python one's halved, to be
cautious): it turns a level's time into the solver's node budget."""
