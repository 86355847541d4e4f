"""Connect Four rules: perft against the published counts, every way to win, the bit helpers a solver uses."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from games import IllegalMoveError, perft
from games.connect4 import (
    BOARD,
    COLUMN_BITS,
    HEIGHT,
    RULES,
    WIDTH,
    ConnectFour,
    has_four,
    winning_cells,
)
from plyarena.cli import main

DRAWN_GAME = "441365675334466335442232661515577771217122"
"""A game that fills the board without a four (found by a seeded random search)."""


def cell(column: int, row: int) -> int:
    """The bit of (column, row), both 0-based, row 0 at the bottom."""
    return 1 << column * COLUMN_BITS + row


def random_position(seed: int, max_plies: int = 42) -> ConnectFour:
    """A position from a random game of at most ``max_plies`` plies (it may be over)."""
    rng = random.Random(seed)
    position = ConnectFour()
    for _ in range(rng.randint(0, max_plies)):
        if position.outcome() is not None:
            break
        position = position.play(rng.choice(position.legal_moves()))
    return position


def threats_by_windows(stones: int, mask: int) -> int:
    """Empty cells completing a four, found window by window: the oracle for ``winning_cells``."""
    found = 0
    for column in range(WIDTH):
        for row in range(HEIGHT):
            for step_column, step_row in ((1, 0), (0, 1), (1, 1), (1, -1)):
                cells = [(column + k * step_column, row + k * step_row) for k in range(4)]
                if not all(0 <= c < WIDTH and 0 <= r < HEIGHT for c, r in cells):
                    continue
                bits = [cell(c, r) for c, r in cells]
                missing = [bit for bit in bits if not stones & bit]
                if len(missing) == 1 and not mask & missing[0]:
                    found |= missing[0]
    return found


def test_perft_matches_the_published_counts() -> None:
    assert [perft(ConnectFour(), depth) for depth in range(1, 7)] == [7, 49, 343, 2401, 16807, 117649]


def test_perft_depth_7_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["perft", "connect4", "7"]) == 0
    assert capsys.readouterr().out.strip() == "823536"


@pytest.mark.parametrize(
    ("moves", "direction"),
    [
        ("1213141", "vertical"),
        ("1122334", "horizontal"),
        ("12233434474", "diagonal rising to the right"),
        ("76655454414", "diagonal falling to the right"),
    ],
)
def test_red_wins_with_four_in_each_direction(moves: str, direction: str) -> None:
    before = ConnectFour.from_moves(moves[:-1])
    assert before.outcome() is None, direction
    assert before.is_winning_move(int(moves[-1]) - 1)
    after = before.play(int(moves[-1]) - 1)
    outcome = after.outcome()
    assert outcome is not None and outcome.winner == 0 and outcome.reason == "four in a row"
    assert has_four(after.stones(0)) and not has_four(after.stones(1))
    assert after.legal_moves() == []


def test_yellow_wins_too() -> None:
    outcome = ConnectFour.from_moves("12123232").outcome()
    assert outcome is not None and outcome.winner == 1 and outcome.reason == "four in a row"


def test_three_in_a_row_and_a_broken_four_do_not_win() -> None:
    assert ConnectFour.from_moves("112233").outcome() is None
    assert ConnectFour.from_moves("1122445").outcome() is None  # 1, 2, 4, 5: a gap at 3


def test_every_run_of_four_board_bits_is_a_line_on_the_board() -> None:
    """The spare bit on top of each column stops the shifts from wrapping into the next column."""
    lines = 0
    for start in range(WIDTH * COLUMN_BITS):
        for step, (step_column, step_row) in ((1, (0, 1)), (7, (1, 0)), (8, (1, 1)), (6, (1, -1))):
            bits = [start + k * step for k in range(4)]
            if not all(bit < WIDTH * COLUMN_BITS and bit % COLUMN_BITS < HEIGHT for bit in bits):
                continue  # touches a spare bit or runs off the board
            column, row = divmod(start, COLUMN_BITS)
            assert 0 <= column + 3 * step_column < WIDTH and 0 <= row + 3 * step_row < HEIGHT, (start, step)
            stones = sum(1 << bit for bit in bits)
            assert has_four(stones)
            assert not has_four(stones ^ 1 << bits[1])
            lines += 1
    assert lines == 69


def test_a_full_board_without_a_four_is_a_draw() -> None:
    position = ConnectFour.from_moves(DRAWN_GAME)
    outcome = position.outcome()
    assert outcome is not None and outcome.is_draw and outcome.reason == "board full"
    assert position.mask == BOARD and position.ply == 42
    assert position.legal_moves() == []


def test_a_full_column_is_refused_with_its_name() -> None:
    position = ConnectFour.from_moves("333333")
    assert 2 not in position.legal_moves()
    assert not position.can_play(2)
    with pytest.raises(IllegalMoveError, match="column 3 is full") as caught:
        position.parse_move("3")
    assert caught.value.move == "3"
    with pytest.raises(IllegalMoveError, match="column 3 is full"):
        position.play(2)


def test_moves_after_a_win_are_refused() -> None:
    position = ConnectFour.from_moves("1213141")
    with pytest.raises(IllegalMoveError, match="the game is over"):
        position.parse_move("5")
    with pytest.raises(IllegalMoveError, match="the game is over"):
        position.play(4)


def test_from_moves_names_the_bad_move_and_where_it_is() -> None:
    with pytest.raises(IllegalMoveError, match=r"move 7 \('1'\): column 1 is full") as caught:
        ConnectFour.from_moves("1111111")
    assert caught.value.move == "1111111"
    with pytest.raises(IllegalMoveError, match=r"move 8 \('2'\): the game is over"):
        ConnectFour.from_moves("12131412")
    with pytest.raises(IllegalMoveError, match=r"move 2 \('8'\): expected a column digit"):
        ConnectFour.from_moves("48")


@pytest.mark.parametrize("move", [-1, 7, "3", None, True, 2.0])
def test_play_refuses_what_is_not_a_column(move: object) -> None:
    with pytest.raises(IllegalMoveError, match="not a column"):
        ConnectFour().play(move)  # type: ignore[arg-type]


def test_columns_are_digits_from_the_left_and_red_moves_first() -> None:
    position = RULES.replay(["4", "4", "5", "3"])
    assert str(position) == "\n".join([".......", ".......", ".......", ".......", "...Y...", "..YRR.."])
    assert position.turn == 0 and position.ply == 4
    assert [position.format_move(move) for move in position.legal_moves()] == list("1234567")
    assert RULES.sides == ("Red", "Yellow")


def test_the_key_tells_every_position_apart() -> None:
    seen: dict[int, tuple[int, int]] = {}
    frontier = [ConnectFour()]
    for _ in range(5):
        following = []
        for position in frontier:
            for move in position.legal_moves():
                child = position.play(move)
                board = (child.current, child.mask)
                assert seen.setdefault(child.key(), board) == board
                following.append(child)
        frontier = following
    assert len(seen) > 1000  # transpositions meet under one key; distinct boards never do


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_winning_cells_match_a_window_by_window_count(seed: int) -> None:
    position = random_position(seed)
    for stones in (position.current, position.opponent):
        assert winning_cells(stones, position.mask) == threats_by_windows(stones, position.mask)


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_move_helpers_agree_with_playing_the_moves(seed: int) -> None:
    position = random_position(seed)
    if position.outcome() is not None:
        return
    moves = position.legal_moves()
    assert position.possible() == sum((position.play(move).mask ^ position.mask) for move in moves), (
        "one playable cell per open column"
    )
    winning = {move for move in moves if position.play(move).outcome() is not None}
    winning -= {move for move in winning if position.play(move).outcome().is_draw}  # type: ignore[union-attr]
    assert {move for move in moves if position.is_winning_move(move)} == winning
    assert position.can_win_next() == bool(winning)
    if not winning:
        # Exactly the moves after which the opponent cannot win at once.
        safe = {move for move in moves if not position.play(move).can_win_next()}
        non_losing = position.non_losing_moves()
        assert {move for move in moves if non_losing & position.possible() & _column(move)} == safe


@given(seed=st.integers(0, 2**32 - 1))
def test_a_played_position_knows_what_its_bitboards_would_say(seed: int) -> None:
    """``play`` works out whether the mover won once; a position made from bare bitboards asks again."""
    played = random_position(seed)
    bare = ConnectFour(played.current, played.mask)
    assert bare.won is None and (played.won is None) == (played.mask == 0)
    assert played == bare and hash(played) == hash(bare)
    assert played.outcome() == bare.outcome()
    assert played.legal_moves() == bare.legal_moves()
    assert played.mirrored().outcome() == bare.mirrored().outcome()


def _column(move: int) -> int:
    return ((1 << HEIGHT) - 1) << move * COLUMN_BITS


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_the_grid_shows_each_stone_where_it_fell(seed: int) -> None:
    """The board clients draw, against stones dropped into columns by the move list alone."""
    rng = random.Random(seed)
    position, columns = ConnectFour(), [[] for _ in range(WIDTH)]
    while True:
        rows = position.grid()
        assert rows == tuple(
            "".join(columns[column][row] if row < len(columns[column]) else "." for column in range(WIDTH))
            for row in reversed(range(HEIGHT))
        )
        if position.outcome() is not None:
            break
        column = rng.choice(position.legal_moves())
        columns[column].append("xo"[position.turn])
        position = position.play(column)
