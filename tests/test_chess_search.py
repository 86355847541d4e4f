"""Our chess bots: alpha-beta with quiescence against its oracles, the evaluation, and the search command.

Chess positions cost python-chess's move generation at every node, so the oracle checks of
tests/test_search.py run here on fewer random positions, and the quiescence search is held to a
full-width one (:func:`bots.minimax.quiet_value`) where few captures are on the board.
"""

from __future__ import annotations

import json
from typing import Any

import chess
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_positions import random_position

from bots.evaluation import evaluator_for
from bots.evaluation.chess import evaluate, order_key
from bots.minimax import minimax, quiet_value
from bots.negamax import AlphaBeta
from bots.quiescence import Quiescence
from bots.result import INFINITY, WIN
from games.chess import Chess
from plyarena.cli import main

EVALUATOR = evaluator_for("chess")
FEW_CAPTURES = (
    "4k3/8/2p5/3p4/8/8/3Q4/4K3 w - - 0 1",  # the pawn on d5 is defended: taking it loses the queen
    "4k3/3r4/8/3p4/4P3/2N5/8/4K2R w - - 0 1",  # e4xd5 Rxd5 Nxd5: an exchange of three captures
    "r3k3/1p6/8/3n4/2B5/8/1P3Q2/4K2R b - - 0 1",
    "4k3/8/8/3q4/4P3/2N2B2/8/4K3 b - - 0 1",  # the queen is attacked twice and defended by nothing
)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 2))
def test_alphabeta_with_quiescence_equals_minimax(seed: int, depth: int) -> None:
    position = random_position("chess", seed)
    assert AlphaBeta(EVALUATOR).search(position, depth).score == minimax(position, EVALUATOR, depth).score


@pytest.mark.parametrize("fen", FEW_CAPTURES)
def test_quiescence_reaches_the_full_width_value_of_the_captures(fen: str) -> None:
    position = Chess.from_fen(fen)
    exact = quiet_value(position, EVALUATOR)
    quiescence = Quiescence(EVALUATOR)
    assert quiescence.search(position, -INFINITY, INFINITY)[0] == exact
    for alpha, beta in ((exact - 1, exact + 1), (exact + 10, exact + 500), (exact - 500, exact - 10)):
        score, _ = quiescence.search(position, alpha, beta)
        if alpha < exact < beta:
            assert score == exact
        elif exact <= alpha:
            assert exact <= score <= alpha, "fail-soft: an upper bound at or below alpha"
        else:
            assert beta <= score <= exact, "fail-soft: a lower bound at or above beta"


def test_a_one_ply_search_does_not_take_a_defended_pawn_with_its_queen() -> None:
    position = Chess.from_fen(FEW_CAPTURES[0])
    result = AlphaBeta(EVALUATOR).search(position, 1)
    assert position.format_move(result.move) != "d2d5"
    assert result.score > 0, "White is still a queen up"
    assert result.nodes > len(position.legal_moves()), "the captures after each move were searched"


def test_the_search_sees_a_mate_in_one_and_says_so() -> None:
    position = Chess.start()
    for text in ("e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6"):
        position = position.play(position.parse_move(text))
    result = AlphaBeta(EVALUATOR).search(position, 3)
    assert position.format_move(result.move) == "h5f7" and result.score == WIN - 1


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 3))
def test_the_principal_variation_is_legal_and_starts_with_the_move(seed: int, depth: int) -> None:
    position = random_position("chess", seed)
    result = AlphaBeta(EVALUATOR).search(position, depth)
    assert result.pv[0] == result.move and 1 <= len(result.pv) <= result.depth
    notation = result.as_dict(position)  # plays the line: raises if a move of it is illegal
    assert notation["pv"][0] == notation["move"]


def test_the_evaluation_is_symmetric_and_from_the_side_to_move() -> None:
    start = Chess.start()
    assert evaluate(start) == 0
    up_a_knight = Chess.from_fen("rnbqkb1r/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1")
    assert evaluate(up_a_knight) > 250
    black_up_a_knight = Chess(up_a_knight.board.mirror())  # colours swapped, and Black to move
    assert evaluate(black_up_a_knight) == evaluate(up_a_knight)
    white_to_move = Chess.from_fen(black_up_a_knight.fen().replace(" b ", " w "))
    assert evaluate(white_to_move) == -evaluate(up_a_knight)


def test_captures_are_ordered_first_the_most_valuable_victim_first() -> None:
    position = Chess.from_fen("4k3/8/2q1r3/3P4/8/8/8/6K1 w - - 0 1")
    moves = sorted(position.legal_moves(), key=lambda move: order_key(position, move), reverse=True)
    assert [move.uci() for move in moves[:2]] == ["d5c6", "d5e6"]
    assert order_key(position, chess.Move.from_uci("d5d6")) < order_key(position, moves[1])


def test_plyarena_search_prints_the_object_the_other_games_print(capsys: Any) -> None:
    assert main(["search", "chess", "--moves", "e2e4 e7e5", "--depth", "4"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) == {"move", "score", "depth", "nodes", "pv", "time_ms", "source"}
    assert printed["depth"] == 4 and printed["pv"][0] == printed["move"] and len(printed["pv"]) == 4
    after = Chess.start()
    for text in ("e2e4", "e7e5", *printed["pv"]):
        after = after.play(after.parse_move(text))  # the line is legal, in UCI


def test_plyarena_search_starts_from_a_fen(capsys: Any) -> None:
    assert main(["search", "chess", "--fen", FEW_CAPTURES[3], "--depth", "2"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["move"].startswith("d5"), "the queen, attacked twice and defended by nothing, moves"
