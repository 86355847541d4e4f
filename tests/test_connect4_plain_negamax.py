"""The exact Connect Four solver against a deliberately plain negamax, on late positions of random games.

The reference shares nothing with the solver or with games.connect4: its own board (a list of
columns), its own four-in-a-row check, and negamax over every line of play to the end of the game,
with no pruning, no table and no move ordering, so that it is plainly right. It needs nothing beyond
the repository, so every checkout tests the solver for real, with or without Pascal Pons' sets; a
few hundred positions with few empty cells keep it to seconds.
"""

from __future__ import annotations

import random

from bots.connect4_solver import analyze, solve

WIDTH, HEIGHT = 7, 6
CELLS = WIDTH * HEIGHT
WIN_BASE = 22
"""In Pons' convention a win with the winner's n-th stone scores 22 - n, the loss its negative."""
POSITIONS = 300
EMPTY_CELLS = (2, 11)
"""The fewest and most empty cells of a position checked (inclusive): plain negamax's tree stays small."""
DIRECTIONS = ((1, 0), (0, 1), (1, 1), (1, -1))

Columns = list[list[int]]
"""Each column's stones from the bottom up, 0 for the first player and 1 for the second."""


def columns_of(moves: str) -> Columns:
    """The board after ``moves``, column digits 1-7 as in Pons' sets."""
    columns: Columns = [[] for _ in range(WIDTH)]
    for ply, digit in enumerate(moves):
        columns[int(digit) - 1].append(ply % 2)
    return columns


def makes_four(columns: Columns, column: int) -> bool:
    """Whether the top stone of ``column`` lies in a line of four or more stones of its colour."""
    row = len(columns[column]) - 1
    colour = columns[column][row]
    for step_column, step_row in DIRECTIONS:
        length = 1
        for sign in (1, -1):
            c, r = column + sign * step_column, row + sign * step_row
            while 0 <= c < WIDTH and 0 <= r < len(columns[c]) and columns[c][r] == colour:
                length += 1
                c, r = c + sign * step_column, r + sign * step_row
        if length >= 4:
            return True
    return False


def move_scores(columns: Columns, ply: int) -> dict[int, int]:
    """Pons' score of every legal move (0-based column) for the side to move, each line played out."""
    scores = {}
    for column in range(WIDTH):
        if len(columns[column]) == HEIGHT:
            continue
        columns[column].append(ply % 2)
        if makes_four(columns, column):
            scores[column] = WIN_BASE - (ply // 2 + 1)  # the mover's stones, this one included
        elif ply + 1 == CELLS:
            scores[column] = 0  # the last cell filled, and no four
        else:
            scores[column] = -max(move_scores(columns, ply + 1).values())
        columns[column].pop()
    return scores


def late_position(rng: random.Random) -> str:
    """The moves of a random game up to a random number of empty cells in :data:`EMPTY_CELLS`, with
    nobody having won yet; a game that cannot get there without a win is played again."""
    empty_cells = rng.randint(*EMPTY_CELLS)
    while True:
        columns: Columns = [[] for _ in range(WIDTH)]
        moves = ""
        while len(moves) < CELLS - empty_cells:
            open_columns = [column for column in range(WIDTH) if len(columns[column]) < HEIGHT]
            column = rng.choice(open_columns)
            columns[column].append(len(moves) % 2)
            moves += str(column + 1)
            if makes_four(columns, column):
                break
        else:
            return moves


def test_a_four_in_a_row_is_seen_in_every_direction_and_only_with_four() -> None:
    assert makes_four(columns_of("1213141"), 0)  # a column
    assert makes_four(columns_of("1122334"), 3)  # a row
    assert makes_four(columns_of("12233434474"), 3)  # a rising diagonal
    assert makes_four(columns_of("76655454414"), 3)  # a falling diagonal
    assert not makes_four(columns_of("112233"), 2)  # three in a row


def test_plain_negamax_scores_a_win_now_and_a_full_board_as_pons_does() -> None:
    three_left = "651725743461413675664226212433433211777"  # Yellow to move completes a four in column 5
    scores = move_scores(columns_of(three_left), len(three_left))
    assert scores[4] == max(scores.values()) == 2  # with its twentieth stone: 22 - 20
    drawn = "441365675334466335442232661515577771217122"  # the board full, and no four
    assert move_scores(columns_of(drawn[:-1]), CELLS - 1) == {1: 0}


def test_the_solver_scores_every_move_of_hundreds_of_late_positions_as_plain_negamax_does() -> None:
    rng = random.Random(20240914)
    checked = set()
    while len(checked) < POSITIONS:
        moves = late_position(rng)
        if moves in checked:
            continue
        checked.add(moves)
        expected = move_scores(columns_of(moves), len(moves))
        assert analyze(moves) == expected, moves
        solution = solve(moves)
        assert solution.score == max(expected.values()), moves
        assert expected[solution.move] == solution.score, f"{moves}: column {solution.move + 1} is not best"
    empties = {CELLS - len(moves) for moves in checked}
    assert empties == set(range(EMPTY_CELLS[0], EMPTY_CELLS[1] + 1))  # every depth of the range is met
