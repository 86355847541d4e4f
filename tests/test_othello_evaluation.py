"""Othello evaluation: symmetric, bounded, and it knows what corners and X-squares are worth."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bots.evaluation import EVALUATION_LIMIT, evaluator_for
from bots.evaluation.othello import evaluate, order_key
from games.othello import CORNERS, MOVE_NAMES, MOVES_BY_NAME, PASS, RULES, Othello, squares

MIDDLE_GAME = """
    ........
    ..BWW...
    ..WBBW..
    .WWBWB..
    ..BWBB..
    ..BWW...
    ........
    ........
"""
"""A middle-game position with every corner and its neighbours empty."""

Chooser = Callable[[Othello], int]


def random_positions(seed: int) -> list[Othello]:
    """Every position of one random game, the final one included."""
    rng = random.Random(seed)
    positions = [RULES.start()]
    while positions[-1].outcome() is None:
        positions.append(positions[-1].play(rng.choice(positions[-1].legal_moves())))
    return positions


def with_disc(diagram: str, name: str, cell: str) -> str:
    rows = [row.strip() for row in diagram.strip().splitlines()]
    row, column = int(name[1]) - 1, "abcdefgh".index(name[0])
    rows[row] = rows[row][:column] + cell + rows[row][column + 1 :]
    return "\n".join(rows)


def transformed(position: Othello, transform: Callable[[int, int], tuple[int, int]]) -> Othello:
    def move_bits(bits: int) -> int:
        return sum(1 << 8 * row + column for row, column in (transform(*divmod(s, 8)) for s in squares(bits)))

    return Othello((move_bits(position.discs[0]), move_bits(position.discs[1])), position.turn, position.ply)


SYMMETRIES = {
    "mirror left-right": lambda row, column: (row, 7 - column),
    "mirror top-bottom": lambda row, column: (7 - row, column),
    "transpose": lambda row, column: (column, row),
    "rotate a quarter turn": lambda row, column: (column, 7 - row),
    "rotate half a turn": lambda row, column: (7 - row, 7 - column),
    "rotate three quarters": lambda row, column: (7 - column, row),
    "anti-transpose": lambda row, column: (7 - column, 7 - row),
}


def test_the_game_finds_this_evaluation() -> None:
    evaluator = evaluator_for("othello")
    assert evaluator.evaluate is evaluate and evaluator.order_key is order_key


def test_the_start_is_even() -> None:
    assert evaluate(RULES.start()) == 0


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_swapping_colours_and_turn_changes_nothing_and_scores_stay_bounded(seed: int) -> None:
    for position in random_positions(seed):
        swapped = Othello((position.discs[1], position.discs[0]), 1 - position.turn, position.ply)
        assert evaluate(swapped) == evaluate(position)
        assert abs(evaluate(position)) < EVALUATION_LIMIT


@pytest.mark.parametrize("symmetry", SYMMETRIES)
def test_the_board_symmetries_change_nothing(symmetry: str) -> None:
    for position in random_positions(seed=5):
        assert evaluate(transformed(position, SYMMETRIES[symmetry])) == evaluate(position)


@pytest.mark.parametrize("turn", [0, 1])
@pytest.mark.parametrize("corner", ["a1", "h1", "a8", "h8"])
def test_a_corner_is_good_for_its_owner(turn: int, corner: str) -> None:
    mine, theirs = ("B", "W") if turn == 0 else ("W", "B")
    before = evaluate(Othello.from_board(MIDDLE_GAME, turn))
    assert evaluate(Othello.from_board(with_disc(MIDDLE_GAME, corner, mine), turn)) > before
    assert evaluate(Othello.from_board(with_disc(MIDDLE_GAME, corner, theirs), turn)) < before


@pytest.mark.parametrize("turn", [0, 1])
@pytest.mark.parametrize("x_square", ["b2", "g2", "b7", "g7"])
def test_an_x_square_next_to_an_empty_corner_is_bad_for_its_owner(turn: int, x_square: str) -> None:
    mine, theirs = ("B", "W") if turn == 0 else ("W", "B")
    before = evaluate(Othello.from_board(MIDDLE_GAME, turn))
    assert evaluate(Othello.from_board(with_disc(MIDDLE_GAME, x_square, mine), turn)) < before
    assert evaluate(Othello.from_board(with_disc(MIDDLE_GAME, x_square, theirs), turn)) > before


def test_discs_count_near_the_end() -> None:
    fewer = Othello.from_board("\n".join(["BBBBBBBB"] * 4 + ["WWWWWWWW"] * 3 + ["WWWWW..."]))
    more = Othello.from_board("\n".join(["BBBBBBBB"] * 5 + ["WWWWWWWW"] * 2 + ["WWWWW..."]))
    assert evaluate(more) > evaluate(fewer)
    assert evaluate(Othello(more.discs, turn=1)) < evaluate(Othello(fewer.discs, turn=1))


def test_moves_are_ordered_corners_first_and_x_squares_last() -> None:
    position = Othello.from_board(MIDDLE_GAME)
    ranked = sorted(range(64), key=lambda square: order_key(position, square), reverse=True)
    assert set(ranked[:4]) == set(squares(CORNERS))
    assert {MOVE_NAMES[square] for square in ranked[-4:]} == {"b2", "g2", "b7", "g7"}
    assert order_key(position, PASS) == 0


def test_a_neighbour_of_a_taken_corner_is_no_longer_avoided() -> None:
    taken = Othello.from_board(with_disc(MIDDLE_GAME, "a1", "W"))
    assert order_key(taken, MOVES_BY_NAME["b2"]) > order_key(taken, MOVES_BY_NAME["g7"])
    assert order_key(taken, MOVES_BY_NAME["b1"]) > order_key(taken, MOVES_BY_NAME["g1"])


def one_ply(choose_by: Callable[[Othello, int], int]) -> Chooser:
    """A player that takes the move whose result ``choose_by`` likes best."""
    return lambda position: max(position.legal_moves(), key=lambda move: choose_by(position, move))


def play_match(
    seed: int, players: tuple[Chooser | None, Chooser | None], random_opening_plies: int
) -> int | None:
    """The winning seat of one game; the first plies are random so that games differ."""
    rng = random.Random(seed)
    position = RULES.start()
    while position.outcome() is None:
        player = players[position.turn]
        if player is None or position.ply < random_opening_plies:
            position = position.play(rng.choice(position.legal_moves()))
        else:
            position = position.play(player(position))
    return position.outcome().winner


def wins(player: Chooser, opponent: Chooser | None, games: int, random_opening_plies: int = 0) -> int:
    """Games that ``player`` wins against ``opponent`` (``None``: random moves), seats alternating."""
    total = 0
    for seed in range(games):
        seat = seed % 2
        players = (player, opponent) if seat == 0 else (opponent, player)
        total += play_match(seed, players, random_opening_plies) == seat
    return total


LOOK_AHEAD = one_ply(lambda position, move: -evaluate(position.play(move)))
GREEDY_FOR_DISCS = one_ply(lambda position, move: position.play(move).discs[position.turn].bit_count())


def test_one_ply_of_evaluation_beats_random_moves() -> None:
    assert wins(LOOK_AHEAD, None, games=40) >= 36


def test_one_ply_of_evaluation_beats_grabbing_discs() -> None:
    assert wins(LOOK_AHEAD, GREEDY_FOR_DISCS, games=40, random_opening_plies=4) >= 30
