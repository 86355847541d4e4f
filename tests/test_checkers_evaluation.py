"""Checkers evaluation: symmetric, bounded, and it values what decides games: material, kings, captures."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from bots.evaluation import EVALUATION_LIMIT, evaluator_for
from bots.evaluation.checkers import evaluate, order_key
from bots.search import search
from games.checkers import Checkers, bit, squares_of


def random_positions(seed: int) -> list[Checkers]:
    """Every position of one random game, the final one included."""
    rng = random.Random(seed)
    positions = [Checkers()]
    while positions[-1].outcome() is None:
        positions.append(positions[-1].play(rng.choice(positions[-1].legal_moves())))
    return positions


def turned_round(position: Checkers) -> Checkers:
    """The board turned half a turn with the colours swapped: square n becomes 33 - n."""

    def turned(board: int) -> int:
        return sum(bit(33 - square) for square in squares_of(board))

    return Checkers(
        (turned(position.men[1]), turned(position.men[0])),
        (turned(position.kings[1]), turned(position.kings[0])),
        1 - position.turn,
    )


def test_the_game_finds_this_evaluation() -> None:
    evaluator = evaluator_for("checkers")
    assert evaluator.evaluate is evaluate and evaluator.order_key is order_key


def test_the_start_is_even() -> None:
    assert evaluate(Checkers()) == 0


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_swapping_sides_changes_nothing_and_scores_stay_bounded(seed: int) -> None:
    for position in random_positions(seed):
        assert evaluate(turned_round(position)) == evaluate(position)
        assert abs(evaluate(position)) < EVALUATION_LIMIT


def test_the_most_lopsided_board_stays_within_the_limit() -> None:
    twelve_kings = Checkers.from_fen("B:W32:BK1-12")
    assert 0 < evaluate(twelve_kings) < EVALUATION_LIMIT
    assert -EVALUATION_LIMIT < evaluate(Checkers.from_fen("W:W32:BK1-12")) < 0


def test_an_extra_man_is_good_for_its_owner_and_a_king_is_better() -> None:
    even = evaluate(Checkers.from_fen("B:W28:B5"))
    extra_man = evaluate(Checkers.from_fen("B:W28:B5,6"))
    extra_king = evaluate(Checkers.from_fen("B:W28:B5,K6"))
    assert even < extra_man < extra_king
    assert evaluate(Checkers.from_fen("W:W28:B5,6")) < 0


def test_the_side_ahead_likes_trading_down() -> None:
    four_against_three = evaluate(Checkers.from_fen("B:WK29,K30,K31:BK1,K2,K3,K4"))
    two_against_one = evaluate(Checkers.from_fen("B:WK29:BK1,K2"))
    assert two_against_one > four_against_three > 0


def test_bigger_captures_and_crowning_are_tried_first() -> None:
    choice = Checkers.from_fen("B:W9,17,19:B6,16")
    assert order_key(choice, (6, 13, 22)) > order_key(choice, (16, 23)) > 0
    king_or_man = Checkers.from_fen("B:WK9,10:B6")
    assert order_key(king_or_man, (6, 13)) > order_key(king_or_man, (6, 15))
    crowning = Checkers.from_fen("B:WK1:B27,18")
    assert order_key(crowning, (27, 32)) > order_key(crowning, (18, 22))


def test_the_search_takes_the_bigger_capture() -> None:
    result = search("checkers", Checkers.from_fen("B:W9,17,19:B6,16"), depth=3)
    assert result.move == (6, 13, 22)
    assert abs(result.score) < EVALUATION_LIMIT
