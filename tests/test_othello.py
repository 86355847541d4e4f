"""Othello rules: perft against the published table, passes, the end, flips and the reasons for refusals."""

from __future__ import annotations

import pickle
import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games import IllegalMoveError, perft
from games.othello import PASS, RULES, Othello, flips, legal_placements, squares
from plyarena.cli import main

PUBLISHED_PERFT = (4, 12, 56, 244, 1396, 8200, 55092, 390216)
"""Leaf move sequences from the start by depth, a pass counting as a ply."""

BLACK_MUST_PASS = ["d3", "c3", "e6", "d2", "d1", "e1", "b2", "c1"]
"""A real game in which Black, to move after eight plies, has no placement while White has."""
WIPEOUT = ["d3", "c3", "b3", "d2", "e1", "d6", "d7", "e3", "f4"]
"""A shortest game: nine plies, then White has no disc left."""
EARLY_END = ["c4", "c5", "d6", "c3", "b4", "c6", "b6", "f4", "b3", "c7", "b5", "a5", "b7", "a3", "d8", "b8"]
"""Sixteen plies, after which neither side can move although both have discs and squares are empty."""

DIRECTIONS = {
    "north": (-1, 0),
    "north-east": (-1, 1),
    "east": (0, 1),
    "south-east": (1, 1),
    "south": (1, 0),
    "south-west": (1, -1),
    "west": (0, -1),
    "north-west": (-1, -1),
}


def square(name: str) -> int:
    return 8 * (int(name[1]) - 1) + "abcdefgh".index(name[0])


def test_perft_matches_the_published_table() -> None:
    assert tuple(perft(Othello(), depth) for depth in range(1, 9)) == PUBLISHED_PERFT


def test_the_perft_command_prints_the_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["perft", "othello", "5"]) == 0
    assert capsys.readouterr().out.strip() == "1396"
    # The four openings are mirror images of each other, so each leads to a quarter of perft(4).
    assert main(["perft", "othello", "3", "--moves", "f5"]) == 0
    assert capsys.readouterr().out.strip() == str(PUBLISHED_PERFT[3] // 4)


def test_the_console_script_runs_perft() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "plyarena", "perft", "othello", "4"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "244"


def test_the_start_position() -> None:
    start = RULES.start()
    assert str(start) == "\n".join(
        (
            "  a b c d e f g h",
            "1 . . . . . . . .",
            "2 . . . . . . . .",
            "3 . . . . . . . .",
            "4 . . . W B . . .",
            "5 . . . B W . . .",
            "6 . . . . . . . .",
            "7 . . . . . . . .",
            "8 . . . . . . . .",
        )
    )
    assert start.grid()[3:5] == ("...ox...", "...xo...")
    assert (start.turn, start.ply, start.disc_counts()) == (0, 0, (2, 2))
    assert [start.format_move(move) for move in start.legal_moves()] == ["d3", "c4", "f5", "e6"]
    assert start.outcome() is None


def test_a_placement_flips_and_passes_the_turn() -> None:
    after = RULES.start().play(square("d3"))
    assert after.grid()[2:5] == ("...x....", "...xx...", "...xo...")
    assert (after.turn, after.ply, after.disc_counts()) == (1, 1, (4, 1))


def test_a_side_without_a_placement_must_pass() -> None:
    position = RULES.replay(BLACK_MUST_PASS)
    assert position.turn == 0
    assert position.mobility() == 0 and position.mobility(1) != 0
    assert position.legal_moves() == [PASS]
    assert position.outcome() is None
    assert position.parse_move(" Pass ") == PASS

    passed = position.play(PASS)
    assert passed.discs == position.discs
    assert (passed.turn, passed.ply) == (1, position.ply + 1)
    assert passed.key() != position.key()
    assert PASS not in passed.legal_moves()
    assert perft(position, 2) == len(passed.legal_moves())


def test_a_wipeout_ends_the_game_before_the_board_is_full() -> None:
    final = RULES.replay(WIPEOUT)
    assert final.disc_counts() == (13, 0)
    assert final.legal_moves() == []
    assert final.outcome() is not None
    assert (final.outcome().winner, final.outcome().reason) == (0, "more discs: 13-0")


def test_the_game_ends_when_neither_side_can_move() -> None:
    final = RULES.replay(EARLY_END)
    black, white = final.disc_counts()
    assert black > 0 and white > 0 and black + white < 64
    assert final.mobility(0) == final.mobility(1) == 0
    assert final.legal_moves() == []
    assert final.outcome() is not None
    assert (final.outcome().winner, final.outcome().reason) == (1, f"more discs: {white}-{black}")
    assert RULES.replay(EARLY_END[:-1]).outcome() is None


def test_equal_discs_on_a_full_board_is_a_draw() -> None:
    full = Othello.from_board("\n".join(["BBBBWWWW"] * 8))
    assert full.outcome() is not None
    assert full.outcome().is_draw
    assert full.outcome().reason == "equal discs: 32-32"


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_a_placement_flips_along_each_direction(direction: str) -> None:
    row_step, column_step = DIRECTIONS[direction]
    line = [8 * (3 + k * row_step) + 3 + k * column_step for k in range(4)]  # from d4, 3 steps
    white = 1 << line[1] | 1 << line[2]
    black = 1 << line[3]
    position = Othello((black, white))
    after = position.play(line[0])
    assert after.discs == (black | white | 1 << line[0], 0)


def test_a_placement_flips_every_flanked_line_at_once() -> None:
    position = Othello.from_board(
        """
        B..B..B.
        .W.W.W..
        ..WWW...
        BWW.WWB.
        ..WWW...
        .W.W.W..
        B..B..B.
        ........
        """
    )
    after = position.play(square("d4"))
    assert after.disc_counts() == (position.disc_counts()[0] + 17, 0)


def test_runs_do_not_flank_round_the_edge_of_the_board() -> None:
    # Each White run reaches an edge; the Black disc that a step off the edge would
    # wrap onto (the next row's far end) must not flank it.
    position = Othello.from_board(
        """
        ......WW
        B......B
        WW......
        ........
        .......W
        ........
        B.......
        ........
        """
    )
    own, opponent = position.discs
    for name in ("f1", "c3", "g4"):  # east past h1, west past a3, south-east past h5
        assert flips(own, opponent, square(name)) == 0, name
        assert not position.mobility() >> square(name) & 1, name


def reference_flips(own: int, opponent: int, target: int) -> int:
    """Flips by walking the board square by square: slow and obviously right."""
    flipped = 0
    row, column = divmod(target, 8)
    for row_step, column_step in DIRECTIONS.values():
        run, r, c = 0, row + row_step, column + column_step
        while 0 <= r < 8 and 0 <= c < 8 and opponent >> 8 * r + c & 1:
            run |= 1 << 8 * r + c
            r, c = r + row_step, c + column_step
        if 0 <= r < 8 and 0 <= c < 8 and own >> 8 * r + c & 1:
            flipped |= run
    return flipped


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_move_generation_agrees_with_a_square_by_square_reference(seed: int) -> None:
    rng = random.Random(seed)
    position = RULES.start()
    while position.outcome() is None:
        for seat in (0, 1):
            own, opponent = position.discs[seat], position.discs[1 - seat]
            empty = position.empty()
            expected = {target: reference_flips(own, opponent, target) for target in squares(empty)}
            assert {target: flips(own, opponent, target) for target in squares(empty)} == expected
            assert squares(legal_placements(own, opponent)) == [t for t, run in expected.items() if run]
        position = position.play(rng.choice(position.legal_moves()))


@pytest.mark.parametrize(
    ("moves", "text", "reason"),
    [
        ([], "i1", "expected a square from a1 (top left) to h8 (bottom right), or pass"),
        ([], "d", "expected a square"),
        ([], "d4", "d4 is occupied"),
        ([], "a1", "a1 flips no disc"),
        ([], "pass", "Black may not pass while a move exists (e.g. d3)"),
        (["d3"], "PASS", "White may not pass while a move exists"),
        (BLACK_MUST_PASS, "a1", "a1 flips no disc; Black has no legal move and must pass"),
        (WIPEOUT, "a1", "the game is over"),
        (WIPEOUT, "pass", "the game is over"),
    ],
)
def test_refused_moves_say_why(moves: list[str], text: str, reason: str) -> None:
    position = RULES.replay(moves)
    with pytest.raises(IllegalMoveError) as caught:
        position.parse_move(text)
    assert caught.value.move == text
    assert caught.value.reason.startswith(reason)


@pytest.mark.parametrize("move", [-1, 65, 3.0, "d3", None, True])
def test_play_refuses_what_is_not_a_move(move: object) -> None:
    with pytest.raises(IllegalMoveError, match="not a square") as caught:
        RULES.start().play(move)  # type: ignore[arg-type]
    assert caught.value.move == move


def test_play_refuses_an_illegal_square_with_its_reason() -> None:
    with pytest.raises(IllegalMoveError, match="a1 flips no disc"):
        RULES.start().play(square("a1"))
    with pytest.raises(IllegalMoveError, match="may not pass"):
        RULES.start().play(PASS)


def test_notation_ignores_case_and_spaces_and_formats_lowercase() -> None:
    start = RULES.start()
    assert start.parse_move(" D3 ") == square("d3") == 19
    assert start.format_move(19) == "d3"
    assert start.format_move(PASS) == "pass"
    assert start.format_move(square("h8")) == "h8"
    with pytest.raises(IllegalMoveError):
        start.format_move(65)


def test_a_diagram_reads_back_its_own_drawing() -> None:
    position = RULES.replay(EARLY_END)
    assert Othello.from_board(str(position), turn=position.turn, ply=position.ply) == position
    assert Othello.from_board("\n".join(position.grid())).discs == position.discs
    with pytest.raises(ValueError, match="8 rows of 8 cells"):
        Othello.from_board("BW..")


def test_positions_are_values_that_cross_process_boundaries() -> None:
    position = RULES.replay(BLACK_MUST_PASS)
    position.legal_moves()  # fills the cached mobility, which must not affect equality
    copy = Othello(position.discs, position.turn, position.ply)
    assert copy == position and hash(copy) == hash(position)
    assert pickle.loads(pickle.dumps(position)) == position
    with pytest.raises(AttributeError):
        position.turn = 1  # type: ignore[misc]
