"""Checkers: move generation against the published perft table, and each rule on a position made for it."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games import IllegalMoveError, Outcome, perft
from games.checkers import (
    JUMPS,
    KING_JUMPS,
    MAN_JUMPS,
    QUIET_PLY_LIMIT,
    RULES,
    STEPS,
    Checkers,
    bit,
    captured_squares,
    jumpers,
)

REPOSITORY = Path(__file__).resolve().parents[1]
PUBLISHED_PERFT = (7, 49, 302, 1469, 7361, 36768, 179740, 845931, 3963680)


def position(fen: str) -> Checkers:
    return Checkers.from_fen(fen)


def random_positions(seed: int, count: int) -> list[Checkers]:
    """``count`` positions spread along one random game (kings and captures appear as it goes on)."""
    rng = random.Random(seed)
    current, seen = Checkers(), []
    while current.outcome() is None and len(seen) < 300:
        seen.append(current)
        current = current.play(rng.choice(current.legal_moves()))
    seen.append(current)
    return rng.sample(seen, min(count, len(seen)))


# Move generation


@pytest.mark.parametrize("depth", range(1, 10))
def test_perft_matches_the_published_counts(depth: int) -> None:
    assert perft(Checkers(), depth) == PUBLISHED_PERFT[depth - 1]


def test_perft_command_prints_the_count() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "plyarena", "perft", "checkers", "5"],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stdout.strip() == "7361"


def test_the_start_has_the_seven_opening_moves() -> None:
    start = Checkers()
    assert sorted(start.format_move(move) for move in start.legal_moves()) == [
        "10-14", "10-15", "11-15", "11-16", "12-16", "9-13", "9-14",
    ]  # fmt: skip
    assert start.turn == 0 and RULES.sides == ("Black", "White")


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_whole_board_capture_detection_agrees_with_the_square_by_square_tables(seed: int) -> None:
    for here in random_positions(seed, 20):
        turn = here.turn
        men, kings = here.men[turn], here.kings[turn]
        opponents = here.men[1 - turn] | here.kings[1 - turn]
        empty = ~(men | kings | opponents) & 0xFFFFFFFF
        expected = 0
        for square in range(1, 33):
            if bit(square) & (men | kings):
                table = KING_JUMPS if bit(square) & kings else MAN_JUMPS[turn]
                if any(jumped & opponents and landing & empty for jumped, landing, _, _ in table[square - 1]):
                    expected |= bit(square)
        down, up = (men | kings, kings) if turn == 0 else (kings, men | kings)
        assert jumpers(down, up, opponents, empty) == expected


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_play_accepts_exactly_the_generated_moves(seed: int) -> None:
    """``play`` checks a move hop by hop without generating moves; both views of legality must agree."""
    for here in random_positions(seed, 8):
        legal = set(here.legal_moves())
        candidates = set(STEPS) | set(JUMPS) | legal
        for move in legal:
            candidates.add(move[:-1])  # an unfinished jump
            candidates.update((*move, landing) for square, landing in JUMPS if square == move[-1])
        for move in candidates:
            if move in legal:
                assert_moved(here, move, here.play(move))
            elif len(move) >= 2:
                with pytest.raises(IllegalMoveError) as caught:
                    here.play(move)
                assert caught.value.reason


def assert_moved(before: Checkers, move: tuple[int, ...], after: Checkers) -> None:
    """The piece went from the first square to the last, and exactly the jumped pieces left the board."""
    me, you = before.turn, 1 - before.turn
    mine, theirs = before.men[me] | before.kings[me], before.men[you] | before.kings[you]
    assert after.men[me] | after.kings[me] == (mine & ~bit(move[0])) | bit(move[-1])
    assert after.men[you] | after.kings[you] == theirs & ~captured_squares(move)
    assert after.kings[me] & bit(move[-1]) or not before.kings[me] & bit(move[0])
    assert (after.turn, after.ply) == (you, before.ply + 1)


# The rules, one position each


def test_a_capture_is_compulsory_but_need_not_be_the_longest() -> None:
    # Black can take one man with 16x23 or two with 6x13x22; either is legal, a step is not.
    here = position("B:W9,17,19:B6,16")
    assert sorted(here.legal_moves()) == [(6, 13, 22), (16, 23)]
    with pytest.raises(IllegalMoveError, match="a capture is compulsory"):
        here.parse_move("16-20")


def test_a_multi_jump_removes_every_jumped_piece_and_must_be_completed() -> None:
    here = position("B:W9,17:B6")
    with pytest.raises(IllegalMoveError, match="jump incomplete"):
        here.parse_move("6x13")
    after = here.play(here.parse_move("6x13x22"))
    assert after.men == (bit(22), 0)
    assert after.outcome() is not None and after.outcome().winner == 0


def test_a_man_crowned_by_a_jump_stops_there() -> None:
    # From 31 a king could jump 27 at once; a man crowned on 31 may not.
    here = position("B:W26,27:B22")
    assert here.legal_moves() == [(22, 31)]
    after = here.play((22, 31))
    assert after.kings[0] == bit(31) and after.men[0] == 0
    assert after.men[1] == bit(27)
    with pytest.raises(IllegalMoveError, match="crowned on 31"):
        here.play((22, 31, 24))


def test_a_step_to_the_far_row_crowns() -> None:
    after = position("W:W5:B20").play((5, 1))
    assert after.kings[1] == bit(1) and after.men[1] == 0


def test_kings_move_backwards_and_men_do_not() -> None:
    assert sorted(position("W:WK18:B1").legal_moves()) == [(18, 14), (18, 15), (18, 22), (18, 23)]
    assert sorted(position("W:W18:B1").legal_moves()) == [(18, 14), (18, 15)]
    with pytest.raises(IllegalMoveError, match="men move forward only"):
        position("W:W18:B1").parse_move("18-22")


def test_kings_capture_backwards_and_may_pass_their_starting_square() -> None:
    # The king's jumps go round a loop and end back on 22, the square it started from.
    here = position("B:W9,10,17,18:BK22")
    loops = [move for move in here.legal_moves() if len(move) == 5]
    assert sorted(here.legal_moves()) == sorted(loops) == [(22, 13, 6, 15, 22), (22, 15, 6, 13, 22)]
    after = here.play(loops[0])
    assert after.kings[0] == bit(22) and after.men[1] == 0


def test_a_side_with_no_legal_move_loses() -> None:
    blocked = position("B:W9,14:B5")
    assert blocked.legal_moves() == []
    assert blocked.outcome() == Outcome(1, "no legal move")
    wiped_out = position("W:W:B1")
    assert wiped_out.outcome() == Outcome(0, "no pieces left")


def test_eighty_plies_without_a_capture_or_a_mans_move_draw() -> None:
    kings_only = position("B:WK32:BK1,K10")
    assert kings_only.play((1, 5)).quiet_plies == 1
    assert kings_only.play((10, 15)).play((32, 28)).quiet_plies == 2
    nearly = msgspec.structs.replace(kings_only, quiet_plies=QUIET_PLY_LIMIT - 1)
    drawn = nearly.play((1, 5))
    assert drawn.outcome().is_draw
    assert drawn.outcome().reason == "80 plies without a capture or a man's move"
    assert drawn.legal_moves() == []
    with pytest.raises(IllegalMoveError, match="the game is over"):
        drawn.play((32, 28))


def test_a_mans_move_or_a_capture_restarts_the_count() -> None:
    nearly = msgspec.structs.replace(position("B:W26,K32:B10,K1"), quiet_plies=QUIET_PLY_LIMIT - 1)
    assert nearly.play((10, 14)).quiet_plies == 0
    capture = msgspec.structs.replace(position("B:W14,K32:BK10"), quiet_plies=QUIET_PLY_LIMIT - 1)
    assert capture.play((10, 17)).quiet_plies == 0


def test_the_third_occurrence_of_a_position_draws() -> None:
    here = position("B:WK32:BK1")
    shuffle = ["1-5", "32-27", "5-1", "27-32"]
    for text in shuffle + shuffle[:3]:
        here = here.play(here.parse_move(text))
        assert here.outcome() is None
    here = here.play(here.parse_move("27-32"))
    assert here.key() == position("B:WK32:BK1").key()
    assert here.outcome().is_draw and here.outcome().reason == "threefold repetition"
    assert here.legal_moves() == []


def test_an_irreversible_move_forgets_earlier_positions() -> None:
    here = position("B:W29,K32:B3,K1")
    for text in ["1-5", "32-27", "5-1", "27-32"]:
        here = here.play(here.parse_move(text))
    assert len(here.earlier_keys) == 4
    assert here.play((3, 7)).earlier_keys == ()


def test_the_key_tells_the_side_to_move_apart() -> None:
    assert position("B:W32:B1").key() != position("W:W32:B1").key()
    assert position("B:W32:B1").key() != position("B:WK32:B1").key()


# Notation


def test_a_short_capture_names_the_only_path_between_its_ends() -> None:
    here = position("B:W9,17:B6")
    assert here.parse_move("6x22") == (6, 13, 22)
    assert here.format_move(here.parse_move("6x22")) == "6x13x22"


def test_a_short_capture_with_two_paths_is_refused_listing_both() -> None:
    here = position("B:W9,10,17,18:B6")
    with pytest.raises(IllegalMoveError, match="ambiguous") as caught:
        here.parse_move("6x22")
    assert "6x13x22" in caught.value.reason and "6x15x22" in caught.value.reason
    assert here.parse_move("6x15x22") == (6, 15, 22)


@pytest.mark.parametrize(
    ("fen", "text", "reason"),
    [
        ("B:W21-32:B1-12", "eleven", "expected PDN square numbers"),
        ("B:W21-32:B1-12", "11-15-19", "expected PDN square numbers"),
        ("B:W21-32:B1-12", "\u0661\u0661-\u0661\u0665", "expected PDN square numbers"),  # Arabic-Indic 11-15
        ("B:W21-32:B1-12", "33-29", "there is no square 33"),
        ("B:W21-32:B1-12", "11-18", "not a diagonal step"),
        ("B:W21-32:B1-12", "11x15", "is a step, not a capture: write 11-15"),
        ("B:W21-32:B1-12", "22-18", "holds a White piece"),
        ("B:W21-32:B1-12", "13-17", "square 13 is empty"),
        ("B:W21-32:B1-12", "8-11", "square 11 is occupied"),
        ("B:W9,17:B6", "6-13", "captures are written with x"),
        ("B:W9,17:B6", "6x15", "no White piece to capture on 10"),
        ("B:W9,17:B6", "6x13x6", "men capture forward only"),
        ("B:W9,17:B6", "6x13x22x29", "no White piece to capture on 25"),
        ("B:W9,17:B6", "6x13x20", "13 to 20 is not a jump"),
        ("B:W9,17:B6", "6x29", "no legal capture goes from 6 to 29"),
        ("B:W6:BK1", "6x13", "square 6 holds a White piece, not one of Black's"),
        ("W:W9,14:B5", "9-5", "square 5 is occupied"),
        ("B:W9,14:B5", "5-9", "the game is over (no legal move)"),
    ],
)
def test_refusals_name_the_move_and_the_reason(fen: str, text: str, reason: str) -> None:
    with pytest.raises(IllegalMoveError) as caught:
        position(fen).parse_move(text)
    assert caught.value.move == text
    assert reason in caught.value.reason


@pytest.mark.parametrize(
    ("fen", "move", "reason"),
    [
        # a step: the piece, its direction, the square it goes to, then the captures on the board
        ("B:W21-32:B1-12", (13, 17), "square 13 is empty"),
        ("B:W21-32:B1-12", (22, 18), "square 22 holds a White piece, not one of Black's"),
        ("W:W18:B1", (18, 22), "men move forward only"),
        ("B:W21-32:B1-12", (8, 11), "square 11 is occupied"),
        ("B:W9,17,19:B6,16", (16, 20), "a capture is compulsory"),
        # a capture: the piece, then each hop in turn, then whether it had to go on
        ("W:W6:BK1", (1, 10), "square 1 holds a Black piece, not one of White's"),
        ("B:W9,17:B6", (6, 13, 20), "13 to 20 is not a jump"),
        ("B:W26,27:B22", (22, 31, 24), "the man is crowned on 31 and the move ends there"),
        ("B:W9,17:B6", (6, 13, 6), "men capture forward only"),
        ("B:W10:BK6", (6, 15, 6), "the piece on 10 cannot be captured twice"),
        ("B:W9,17:B6", (6, 15), "no White piece to capture on 10"),
        ("B:W9,13:B6", (6, 13), "square 13 is occupied"),
        ("B:W9,17:B6", (6, 13), "jump incomplete: the piece must go on capturing from 13"),
        # once the game is over, that is what is wrong with any move
        ("B:W9,14:B5", (20, 24), "the game is over (no legal move)"),
    ],
)
def test_play_refuses_a_step_or_a_capture_naming_the_move_and_what_is_wrong(
    fen: str, move: tuple[int, ...], reason: str
) -> None:
    with pytest.raises(IllegalMoveError) as caught:
        position(fen).play(move)
    assert (caught.value.move, caught.value.reason) == (move, reason)


def test_play_refuses_values_that_are_not_moves() -> None:
    for move in [None, 11, "11-15", (11,), (0, 4), (11, "15"), ([11], 15)]:
        with pytest.raises(IllegalMoveError, match="not a move"):
            Checkers().play(move)  # type: ignore[arg-type]


def test_format_writes_steps_with_a_dash_and_captures_with_every_landing() -> None:
    start = Checkers()
    assert start.format_move((11, 15)) == "11-15"
    assert start.format_move((22, 15, 8)) == "22x15x8"
    assert start.format_move((22, 15)) == "22x15"
    with pytest.raises(IllegalMoveError):
        start.format_move((11, 12))


# Setting up and showing positions


def test_the_board_is_drawn_with_square_1_top_left() -> None:
    assert str(position("W:W21,K29:B1,K12")).splitlines() == [
        " b . . .",
        ". . . .",
        " . . . B",
        ". . . .",
        " . . . .",
        "w . . .",
        " . . . .",
        "W . . .",
    ]
    rows = Checkers().grid()
    assert rows[0] == " x x x x" and rows[7] == "o o o o " and len(rows) == 8


def test_fen_round_trips_and_names_bad_input() -> None:
    here = position("W:W18,24,27,28,K10,K15:B12,16,20,K22,K25,K29")
    assert position(here.fen()) == here
    assert Checkers.from_fen("B:W21-32:B1-12") == Checkers()
    for bad in ["", "B:W1", "X:W1:B2", "B:W1:B1", "B:W33:B1", "B:W1:B29", "B:W5:W6", "B:W:W6"]:
        with pytest.raises(ValueError, match="bad FEN"):
            Checkers.from_fen(bad)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_grid_shows_the_pieces_the_fen_lists(seed: int) -> None:
    """Every square of the board clients draw, against the FEN: ``x``/``X`` Black, ``o``/``O`` White."""
    rng = random.Random(seed)
    game = Checkers()
    for _ in range(rng.randrange(120)):
        if game.outcome() is not None:
            break
        game = game.play(rng.choice(game.legal_moves()))
    _, white, black = game.fen().split(":")
    expected = {}
    for side, (man, king) in ((white, ("o", "O")), (black, ("x", "X"))):
        for item in filter(None, side[1:].split(",")):
            expected[int(item.removeprefix("K"))] = king if item.startswith("K") else man
    rows = game.grid()
    dark = [(row, column) for row in range(8) for column in range(8) if (row + column) % 2 == 1]
    assert [rows[row][column] for row, column in dark] == [
        expected.get(square, ".") for square in range(1, 33)
    ]
    assert all(rows[row][column] == " " for row in range(8) for column in range(8) if (row + column) % 2 == 0)
