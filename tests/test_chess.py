"""Chess rules on python-chess: perft against the published tables, notation both ways, and every end."""

from __future__ import annotations

import subprocess
import sys

import chess
import pytest

from games import IllegalMoveError, get_game, perft
from games.chess import Chess

START_PERFT = (20, 400, 8902, 197281)
"""Perft of the initial position, depths 1 to 4 (chessprogramming.org, "Perft Results")."""
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
KIWIPETE_PERFT = (48, 2039, 97862)
"""Peter McKenzie's position, rich in castling, en passant and promotions: depths 1 to 3."""
SCHOLARS_MATE = ["e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7"]


def replay(moves: list[str], fen: str | None = None) -> Chess:
    position = Chess.from_fen(fen) if fen else Chess.start()
    for text in moves:
        position = position.play(position.parse_move(text))
    return position


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_perft_from_the_start(depth: int) -> None:
    assert perft(get_game("chess").start(), depth) == START_PERFT[depth - 1]


@pytest.mark.parametrize("depth", [1, 2])
def test_perft_of_kiwipete(depth: int) -> None:
    assert perft(Chess.from_fen(KIWIPETE), depth) == KIWIPETE_PERFT[depth - 1]


@pytest.mark.slow
def test_the_perft_command_counts_depth_four_and_kiwipete_three() -> None:
    def command(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "plyarena.cli", "perft", "chess", *args],
                              capture_output=True, text=True, check=True, timeout=300)  # fmt: skip
        return done.stdout.strip()

    assert command("4") == str(START_PERFT[3])
    assert command("3", "--fen", KIWIPETE) == str(KIWIPETE_PERFT[2])


def test_the_grid_is_fen_letters_from_whites_side() -> None:
    grid = Chess.start().grid()
    assert grid[0] == "rnbqkbnr" and grid[7] == "RNBQKBNR" and grid[4] == "........"
    after = replay(["e2e4"]).grid()
    assert after[4][4] == "P" and after[6][4] == ".", "e4 is row 4 (rank 4 from the bottom), column e"
    assert get_game("chess").pieces["N"].seat == 0 and get_game("chess").pieces["q"].name == "queen"


def test_moves_go_out_in_uci_and_come_in_as_uci_or_san() -> None:
    position = Chess.start()
    assert position.parse_move("Nf3") == position.parse_move("g1f3") == chess.Move.from_uci("g1f3")
    assert position.format_move(position.parse_move(" E2E4 ")) == "e2e4"
    assert position.display_move(chess.Move.from_uci("g1f3")) == "Nf3"
    castled = replay(["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"])
    assert castled.parse_move("O-O") == castled.parse_move("e1g1")
    assert castled.display_move(chess.Move.from_uci("e1g1")) == "O-O"
    assert replay(SCHOLARS_MATE[:-1]).display_move(chess.Move.from_uci("h5f7")) == "Qxf7#"


def test_promotion_names_its_piece() -> None:
    position = Chess.from_fen("8/4P3/8/8/8/8/k7/4K3 w - - 0 1")
    assert position.format_move(position.parse_move("e8=N")) == "e7e8n"
    assert position.display_move(position.parse_move("e7e8q")) == "e8=Q"
    assert {"e7e8q", "e7e8r", "e7e8b", "e7e8n"} <= set(position.legal_notation())
    after = position.play(position.parse_move("e7e8q"))
    assert after.grid()[0][4] == "Q"
    with pytest.raises(IllegalMoveError, match="e7e8q, e7e8r, e7e8b or e7e8n"):
        position.parse_move("e7e8")
    with pytest.raises(IllegalMoveError, match="only a pawn that reaches the last rank"):
        position.parse_move("e1e2q")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("e2e5", "the White pawn on e2 cannot move to e5"),
        ("e7e5", "the Black pawn on e7 is not White's"),
        ("e3e4", "there is no piece on e3"),
        ("e1g1", "White cannot castle that way now"),
        ("Ke2", "no legal move of White's is Ke2 here"),
        ("hello", "expected a move in UCI (e2e4, e7e8q) or SAN"),
    ],
)
def test_refusals_say_what_is_wrong(text: str, reason: str) -> None:
    with pytest.raises(IllegalMoveError) as refused:
        Chess.start().parse_move(text)
    assert reason in refused.value.reason and refused.value.move == text


def test_a_move_into_check_and_an_ambiguous_san_are_explained() -> None:
    pinned = Chess.from_fen("4k3/8/8/8/8/8/4r3/R3KN1R w KQ - 0 1")
    with pytest.raises(IllegalMoveError, match="leave White's king in check"):
        pinned.parse_move("f1d2")
    with pytest.raises(IllegalMoveError, match=r"ambiguous: it could be Rad1 or Rhd1"):
        Chess.from_fen("4k3/8/8/8/8/8/4K3/R6R w - - 0 1").parse_move("Rd1")


def test_en_passant_is_legal_for_one_ply_only() -> None:
    position = replay(["e2e4", "a7a6", "e4e5", "d7d5"])
    assert "e5d6" in position.legal_notation()
    assert position.display_move(position.parse_move("e5d6")) == "exd6"
    assert "e5d6" not in replay(["e2e4", "a7a6", "e4e5", "d7d5", "a2a3", "a6a5"]).legal_notation()


def test_checkmate_wins_for_the_side_that_gave_it() -> None:
    mated = replay(SCHOLARS_MATE)
    outcome = mated.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason) == (0, "checkmate")
    assert mated.legal_moves() == [] and mated.legal_notation() == []
    with pytest.raises(IllegalMoveError, match=r"the game is over \(checkmate\)"):
        mated.parse_move("a7a6")


def test_stalemate_is_a_draw() -> None:
    position = Chess.from_fen("7k/8/6Q1/8/8/8/8/K7 w - - 0 1").play(chess.Move.from_uci("g6f7"))
    outcome = position.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason) == (None, "stalemate")


def test_insufficient_material_ends_the_game_at_once() -> None:
    position = Chess.from_fen("8/8/8/8/8/k7/2r5/2K5 w - - 0 1").play(chess.Move.from_uci("c1c2"))
    outcome = position.outcome()
    assert outcome is not None and outcome.reason == "insufficient material"
    assert position.legal_moves() == []


def test_the_third_repetition_draws() -> None:
    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]
    twice = replay(shuffle)
    assert twice.outcome() is None, "the start position has occurred twice"
    thrice = replay(shuffle * 2)
    outcome = thrice.outcome()
    assert outcome is not None and (outcome.winner, outcome.reason) == (None, "threefold repetition")
    assert thrice.legal_moves() == []
    with pytest.raises(IllegalMoveError, match=r"the game is over \(threefold repetition\)"):
        thrice.parse_move("e2e4")


def test_a_pawn_move_forgets_the_positions_before_it() -> None:
    assert replay(["g1f3", "g8f6", "f3g1", "f6g8", "e2e4"]).earlier_keys == ()


def test_fifty_moves_without_a_capture_or_a_pawn_move_draw() -> None:
    position = Chess.from_fen("4k3/8/8/8/8/8/4P3/R3K3 w - - 99 80")
    drawn = position.play(position.parse_move("a1a2"))
    outcome = drawn.outcome()
    assert outcome is not None and outcome.reason == "fifty moves without a capture or a pawn move"
    assert position.play(position.parse_move("e2e4")).outcome() is None, "a pawn move starts the count again"


def test_checkmate_on_the_hundredth_quiet_ply_wins() -> None:
    position = Chess.from_fen("k7/8/1K6/8/8/8/8/7R w - - 99 80")
    outcome = position.play(position.parse_move("Rh8#")).outcome()
    assert outcome is not None and (outcome.winner, outcome.reason) == (0, "checkmate")


@pytest.mark.parametrize(
    ("fen", "problem"),
    [
        ("not a fen", "expected 'w' or 'b'"),
        ("8/8/8/8/8/8/8/8 w - - 0 1", "no white king"),
        ("4k3/8/8/8/8/8/8/4K2R b K - 0 1", "valid"),
        ("4k3/8/8/8/8/8/8/R3K3 b - - 0 1", "valid"),
        ("4k2R/8/8/8/8/8/8/4K3 w - - 0 1", "opposite check"),
    ],
)
def test_a_fen_that_is_no_position_is_refused_naming_it(fen: str, problem: str) -> None:
    if problem == "valid":
        assert Chess.from_fen(fen).fen() == fen
        return
    with pytest.raises(ValueError, match=problem) as refused:
        Chess.from_fen(fen)
    assert repr(fen) in str(refused.value)


def test_positions_stay_as_they_are_when_played_from() -> None:
    start = Chess.start()
    start.play(start.parse_move("e2e4"))
    start.display_move(start.parse_move("d2d4"))
    assert start == Chess.start() and start.board.move_stack == []
