"""The PGN export's eval comments: a bot's score, from the mover's side, as PGN has it from White's."""

from __future__ import annotations

import io

import chess
import chess.engine
import chess.pgn
import pytest

from server.pgn import MATE_SCORE, eval_comment
from server.storage.records import EngineInfo


@pytest.mark.parametrize(
    ("score", "white_moved", "comment"),
    [
        (35, True, "{[%eval 0.35,7]}"),
        (35, False, "{[%eval -0.35,7]}"),
        (MATE_SCORE - 3, True, "{[%eval #1,7]}"),  # White mates on its next move
        (MATE_SCORE - 3, False, "{[%eval #-1,7]}"),  # so does Black
        (2 - MATE_SCORE, True, "{[%eval #-1,7]}"),  # White is mated on Black's next move
        (MATE_SCORE - 1, False, "{[%eval #0,7]}"),  # Black's move mates: White, to move, is mated
    ],
)
def test_scores_become_pgn_evals_from_whites_side(score: int, white_moved: bool, comment: str) -> None:
    assert eval_comment(EngineInfo(score=score, depth=7), white_moved=white_moved) == comment


@pytest.mark.parametrize("source", ["searched", None])
def test_a_searched_move_or_one_of_unknown_source_gives_its_depth(source: str | None) -> None:
    assert eval_comment(EngineInfo(score=35, depth=7, source=source), white_moved=True) == "{[%eval 0.35,7]}"


def test_a_book_move_gives_no_depth_even_if_its_bot_sent_one() -> None:
    assert eval_comment(EngineInfo(score=35, source="book"), white_moved=True) == "{[%eval 0.35]}"
    assert eval_comment(EngineInfo(score=35, depth=41, nodes=0, source="book"), white_moved=True) == (
        "{[%eval 0.35]}"
    )
    game = chess.pgn.read_game(io.StringIO('[Result "*"]\n\n1. e4 {[%eval 0.35]} *\n'))
    first = None if game is None else game.next()
    assert first is not None and first.eval() == chess.engine.PovScore(chess.engine.Cp(35), chess.WHITE)


def test_a_move_without_a_score_has_no_comment() -> None:
    assert eval_comment(None, white_moved=True) is None
    assert eval_comment(EngineInfo(depth=3), white_moved=True) is None


def test_python_chess_reads_the_mates_as_meant() -> None:
    text = '[Result "0-1"]\n\n1. f3 {[%eval -1.20,5]} e5 2. g4 {[%eval #-1,9]} Qh4# {[%eval #0,245]} 0-1\n'
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None
    evals = [node.eval() for node in game.mainline()]
    assert evals[0] == chess.engine.PovScore(chess.engine.Cp(-120), chess.WHITE)
    assert evals[2] is not None and evals[2].white() == chess.engine.Mate(-1)
    assert evals[3] is not None and evals[3].black() == chess.engine.MateGiven
