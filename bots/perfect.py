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
``book_move(position)``: ``None``, or a ``BookMove`` with ``move`` and ``value``
(the position's score in Pons' convention for the side to move), computed offline
for the positions where the solver would take too long.

Each result says where it came from (``"book"`` or ``"solved"``) and reports no
depth: a solver sees every line to the end, and a book move was looked up.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
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


def orientations(game: str) -> int:
    """How many images of a position the solver level tries: 2 where the game has a mirror image."""
    return 2 if hasattr(solver_for(game), "mirrored") else 1


def _images(solver: ModuleType, position: Position) -> list[tuple[Position, Callable[[Move], Move]]]:
    """The position, then its mirror image if the solver module has ``mirrored`` and ``mirror_move``.

    The search orders moves the same way on both images, so their trees differ and one may fit a
    budget the other does not; trying both also gives a position and its mirror image one answer.
    """
    images: list[tuple[Position, Callable[[Move], Move]]] = [(position, lambda move: move)]
    if hasattr(solver, "mirrored"):
        images.append((solver.mirrored(position), solver.mirror_move))
    return images


def solve(game: str, position: Position, max_nodes: int | None = None) -> SearchResult:
    """The solver's best move from ``position``, trying its mirror image too (see :func:`_images`);
    raises :class:`SolverBudgetExceeded` if each runs past ``max_nodes``."""
    started = time.perf_counter()
    solver = solver_for(game)
    spent = 0
    for image, unmirror in _images(solver, position):
        try:
            solution = solver.solve(image, max_nodes=max_nodes)
        except solver.SolverBudgetExceeded:
            spent += max_nodes or 0
            continue
        elapsed_ms = (time.perf_counter() - started) * 1000
        score = score_from_pons(solution.score, position.ply)
        move = unmirror(solution.move)
        return SearchResult(move, score, None, spent + solution.nodes, (move,), elapsed_ms, "solved")
    raise SolverBudgetExceeded(f"no exact solution within {max_nodes:,} nodes")


def solve_weakly(game: str, position: Position, max_nodes: int | None = None) -> SearchResult:
    """A move that keeps the value of ``position`` (win, draw or loss), when the exact score is out of reach.

    Uses the solver module's ``WeakSolver`` (see :mod:`bots.connect4_solver`): a
    couple of null-window searches around 0 settle the value more often within a
    budget than the exact score's binary search does, and the value is what a
    perfect player must not let slip. Tries the mirror image too, as :func:`solve`.
    The score is the least the value promises: a win with the last stone, a draw, or
    a loss with the opponent's last stone. Raises :class:`SolverBudgetExceeded` if
    each image runs past ``max_nodes``.
    """
    started = time.perf_counter()
    solver = solver_for(game)
    spent = 0
    for image, unmirror in _images(solver, position):
        weak = solver.WeakSolver(max_nodes=max_nodes)
        try:
            value = weak.value(image)
            found = weak.keeping_move(image, value)
        except solver.SolverBudgetExceeded:
            spent += max_nodes or 0
            continue
        elapsed_ms = (time.perf_counter() - started) * 1000
        score = score_from_pons(value, position.ply)
        move = unmirror(found)
        return SearchResult(move, score, None, spent + weak.nodes(), (move,), elapsed_ms, "solved")
    raise SolverBudgetExceeded(f"no value within {max_nodes:,} nodes")


def from_book(game: str, position: Position) -> SearchResult | None:
    """The opening book's move from ``position`` with the score the book stored, or ``None`` when the
    book has none. Nothing was searched, so the result has neither depth nor nodes."""
    started = time.perf_counter()
    book = book_for(game)
    found = None if book is None else book.book_move(position)
    if found is None:
        return None
    elapsed_ms = (time.perf_counter() - started) * 1000
    score = score_from_pons(found.value, position.ply)
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
