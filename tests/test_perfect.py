"""Perfect play from the Connect Four solver, on the search's own score scale."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from support.pons import pons_set

from bots import perfect
from bots.connect4_solver import WeakSolver
from bots.evaluation import Evaluator
from bots.levels import choose_move, level
from bots.negamax import AlphaBeta
from bots.result import WIN
from games import get_game
from games.connect4 import CELLS, ConnectFour

NO_HEURISTIC = Evaluator("connect4", evaluate=lambda position: 0)
"""Searches below reach the end of every line, so the evaluation is never asked."""


def endgames(empties: int, count: int) -> list[tuple[str, int]]:
    """Lines of Pons' late-game set with at most ``empties`` empty cells: (moves, exact score)."""
    return [(moves, score) for moves, score in pons_set("Test_L3_R1") if CELLS - len(moves) <= empties][
        :count
    ]


@pytest.mark.parametrize(
    ("pons", "ply", "score"),
    [(18, 0, WIN - 7), (-18, 1, -(WIN - 6)), (1, 41, WIN - 1), (-1, 40, -(WIN - 2)), (0, 12, 0)],
)
def test_pons_scores_become_plies_to_the_end(pons: int, ply: int, score: int) -> None:
    assert perfect.score_from_pons(pons, ply) == score


@pytest.mark.parametrize("index", range(40))
def test_the_solver_and_a_full_depth_alphabeta_agree(index: int) -> None:
    moves, pons = endgames(empties=9, count=40)[index]
    position = get_game("connect4").replay(list(moves))
    solved = perfect.solve("connect4", position)
    searched = AlphaBeta(NO_HEURISTIC).search(position, depth=CELLS - len(moves))
    assert solved.score == searched.score == perfect.score_from_pons(pons, len(moves))
    assert solved.move in position.legal_moves()
    assert (solved.source, solved.depth, searched.source) == ("solved", None, "searched")


@pytest.mark.parametrize("index", range(10))
def test_every_move_scores_as_the_search_scores_it(index: int) -> None:
    moves, pons = endgames(empties=7, count=10)[index]
    position = get_game("connect4").replay(list(moves))
    solved = perfect.analyze("connect4", position)
    searched = AlphaBeta(NO_HEURISTIC).analyze(position, depth=CELLS - len(moves))
    assert {move: result.score for move, result in solved.items()} == {
        move: result.score for move, result in searched.items()
    }
    assert max(result.score for result in solved.values()) == perfect.score_from_pons(pons, len(moves))
    assert {(result.source, result.depth, result.nodes) for result in solved.values()} == {
        ("solved", None, None)
    }


def test_the_top_connect_four_level_plays_a_best_move() -> None:
    moves, pons = endgames(empties=12, count=1)[0]
    position = get_game("connect4").replay(list(moves))
    move, result = choose_move(position, level("connect4", 8), random.Random(0))
    assert result.score == perfect.score_from_pons(pons, len(moves))
    assert perfect.analyze("connect4", position)[move].score == result.score


def test_a_game_without_a_solver_is_named() -> None:
    with pytest.raises(perfect.NoSolverError, match=r"'othello'.*bots/othello_solver\.py"):
        perfect.solver_for("othello")


def test_past_its_budget_for_the_exact_score_a_move_that_keeps_the_value_will_do() -> None:
    # Just past the opening book, from a game an earlier top level lost as second player: the exact score
    # takes more than 100,000 nodes, a move that keeps the win does not.
    moves = "2322332434434"
    position = get_game("connect4").replay(list(moves))
    with pytest.raises(perfect.SolverBudgetExceeded):
        perfect.solve("connect4", position, 100_000)
    result = perfect.solve_weakly("connect4", position, 100_000)
    assert result.score == perfect.score_from_pons(1, len(moves))  # a win, with no promise of how soon
    assert result.source == "searched" and result.depth is None  # a value, not the exact score
    assert result.nodes is not None and 0 < result.nodes <= 100_000
    assert WeakSolver().value(position.play(result.move)) == -1  # the opponent is lost after it


def off_book_opening() -> ConnectFour:
    """A position four moves in that the opening book does not hold (the book covers openings of up to
    three moves, then each side's own lines)."""
    openings = (ConnectFour.from_moves(f"11{third}{fourth}") for third in "1234567" for fourth in "1234567")
    return next(position for position in openings if perfect.from_book("connect4", position) is None)


def test_out_of_time_for_the_solver_the_top_level_searches_instead() -> None:
    hurried = replace(level("connect4", 8), time_ms=1)
    position = off_book_opening()  # far too early for a millisecond
    move, result = choose_move(position, hurried, random.Random(0))
    assert move in position.legal_moves() and result.source == "searched"
    assert result.depth is not None and 1 <= result.depth <= hurried.depth


def test_mirroring_a_position_reflects_its_moves() -> None:
    moves = "16536137534461"
    reflected = "".join(str(8 - int(column)) for column in moves)
    position = ConnectFour.from_moves(moves)
    assert position.mirrored() == ConnectFour.from_moves(reflected)
    assert position.mirrored().mirrored() == position
