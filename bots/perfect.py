"""Perfect play from a game's exact solver, reported like any other search.

A game with an exact solver has a module ``bots/<game>_solver.py`` with
``solve(position, *, max_nodes=None)`` (a ``Solution`` with ``score``, ``move``
and ``nodes``) and ``analyze(position, *, max_nodes=None)`` (the exact score of
every legal move), both raising the module's ``SolverBudgetExceeded`` when
``max_nodes`` runs out. Solver scores follow
Pascal Pons' convention for Connect Four: from the side to move, a win scores
``22`` minus the winner's stones when the game ends, a loss the negative, a draw
0. Here they are turned into the search's own scale (``WIN`` minus the plies to
the end), so that a level's result means the same whichever engine produced it.

Such a game may also have an opening book, a module ``bots/<game>_book.py`` with
``book_move(position)``: ``None``, or a ``BookMove`` with ``move`` and its exact
``score`` (the solver's convention), computed offline for the positions where
the solver would take too long.

Each result says where it came from (``"book"``, ``"solved"``, or ``"searched"``
for a value search that settles win, draw or loss but not the exact score) and
reports no depth: a solver sees every line to the end, and a book move was looked up.
"""

from __future__ import annotations

import importlib
import time
from types import ModuleType

from bots.result import WIN, SearchResult
from games import Move, Position
from games.connect4 import CELLS

PONS_WIN_BASE = (CELLS + 2) // 2
"""22 on a 7x6 board: a win with the winner's n-th stone scores 22 - n."""


class NoSolverError(LookupError):
    """A level asks for an exact solver that the game does not have."""

    def __init__(self, game: str) -> None:
        super().__init__(f"no exact solver for game {game!r}: expected a module bots/{game}_solver.py")
        self.game = game


class SolverBudgetExceeded(RuntimeError):
    """The solver gave up within its node budget: the position is too early for it."""


def solver_for(game: str) -> ModuleType:
    """The solver module of ``game``; raises :class:`NoSolverError` if there is none."""
    solver = _module_of(game, "solver")
    if solver is None:
        raise NoSolverError(game)
    return solver


def book_for(game: str) -> ModuleType | None:
    """The opening book module of ``game``, or ``None`` if it has none."""
    return _module_of(game, "book")


def _module_of(game: str, part: str) -> ModuleType | None:
    """``bots/<game>_<part>.py``, or ``None`` if the game has none (an import error inside it propagates)."""
    module_name = f"bots.{game}_{part}"
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        return None


def score_from_pons(pons: int, ply: int) -> int:
    """A Pons score of the position after ``ply`` plies, on the search's ``WIN - plies`` scale.

    The side to move has ``ply // 2`` stones and plays on this ply and every second
    one after it; a win with its n-th stone ends ``2 * (n - ply // 2) - 1`` plies
    from now. The opponent has ``(ply + 1) // 2`` stones and plays one ply later.
    """
    if pons > 0:
        return WIN - (2 * (PONS_WIN_BASE - pons - ply // 2) - 1)
    if pons < 0:
        return -WIN + 2 * (PONS_WIN_BASE + pons - (ply + 1) // 2)
    return 0


def nodes_within(game: str, time_ms: float) -> int:
    """The node budget ``game``'s solver spends in about ``time_ms`` (its module's ``NODES_PER_MS``)."""
    return max(1, int(time_ms * solver_for(game).NODES_PER_MS))


def solve(game: str, position: Position, max_nodes: int | None = None) -> SearchResult:
    """The solver's best move from ``position``: the exact score, a quickest win or a longest loss;
    raises :class:`SolverBudgetExceeded` past ``max_nodes``."""
    started = time.perf_counter()
    solver = solver_for(game)
    try:
        solution = solver.solve(position, max_nodes=max_nodes)
    except solver.SolverBudgetExceeded:
        raise SolverBudgetExceeded(f"no exact solution within {max_nodes:,} nodes") from None
    elapsed_ms = (time.perf_counter() - started) * 1000
    score = score_from_pons(solution.score, position.ply)
    return SearchResult(solution.move, score, None, solution.nodes, (solution.move,), elapsed_ms, "solved")


def solve_weakly(game: str, position: Position, max_nodes: int | None = None) -> SearchResult:
    """A move that keeps the value of ``position`` (win, draw or loss), when the exact score is out of reach.

    Uses the solver module's ``WeakSolver`` (see :mod:`bots.connect4_solver`): a
    couple of null-window searches around 0 settle the value more often within a
    budget than the exact score's binary search does, and the value is what a
    perfect player must not let slip. The score is the least the value promises.
    Raises :class:`SolverBudgetExceeded` past ``max_nodes``.
    """
    started = time.perf_counter()
    solver = solver_for(game)
    weak = solver.WeakSolver(max_nodes=max_nodes)
    try:
        value = weak.value(position)
        move = weak.keeping_move(position, value)
    except solver.SolverBudgetExceeded:
        raise SolverBudgetExceeded(f"no value within {max_nodes:,} nodes") from None
    elapsed_ms = (time.perf_counter() - started) * 1000
    score = score_from_pons(value, position.ply)
    # Not "solved": the value is settled, the exact score is not.
    return SearchResult(move, score, None, weak.nodes(), (move,), elapsed_ms, "searched")


def from_book(game: str, position: Position) -> SearchResult | None:
    """The opening book's move from ``position`` with its stored exact score, or ``None`` when the book
    has none. Nothing was searched, so the result has neither depth nor nodes."""
    started = time.perf_counter()
    book = book_for(game)
    found = None if book is None else book.book_move(position)
    if found is None:
        return None
    elapsed_ms = (time.perf_counter() - started) * 1000
    score = score_from_pons(found.score, position.ply)
    return SearchResult(found.move, score, None, None, (found.move,), elapsed_ms, "book")


def analyze(game: str, position: Position, max_nodes: int | None = None) -> dict[Move, SearchResult]:
    """Every legal move with its exact score, as results sharing the time spent.

    The solver's ``analyze`` reports no node count, so ``nodes`` is ``None`` here.
    Raises :class:`SolverBudgetExceeded` past ``max_nodes``.
    """
    started = time.perf_counter()
    solver = solver_for(game)
    try:
        scores = solver.analyze(position, max_nodes=max_nodes)
    except solver.SolverBudgetExceeded as error:
        raise SolverBudgetExceeded(str(error)) from error
    elapsed_ms = (time.perf_counter() - started) * 1000
    return {
        # Each move's score is from the side to move here, as in Pons' own analysis output.
        move: SearchResult(
            move, score_from_pons(pons, position.ply), None, None, (move,), elapsed_ms, source="solved"
        )
        for move, pons in scores.items()
    }
