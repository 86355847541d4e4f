"""Connect Four evaluation: bounded, mirror-symmetric, centre-first, and right more often than not."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from support.pons import pons_set

from bots.evaluation import EVALUATION_LIMIT, evaluator_for
from bots.evaluation.connect4 import LOST_NOW, WIN_NOW, evaluate, order_key
from bots.search import search
from games.connect4 import COLUMN_BITS, COLUMN_MASKS, WIDTH, ConnectFour


def random_game(seed: int) -> list[ConnectFour]:
    rng = random.Random(seed)
    positions = [ConnectFour()]
    while positions[-1].outcome() is None:
        positions.append(positions[-1].play(rng.choice(positions[-1].legal_moves())))
    return positions


def mirrored(position: ConnectFour) -> ConnectFour:
    """The position with the columns in reverse order."""

    def flip(board: int) -> int:
        column_cells = (1 << COLUMN_BITS) - 1
        return sum(
            (board >> column * COLUMN_BITS & column_cells) << (WIDTH - 1 - column) * COLUMN_BITS
            for column in range(WIDTH)
        )

    return ConnectFour(flip(position.current), flip(position.mask))


def test_the_search_finds_this_evaluation() -> None:
    evaluator = evaluator_for("connect4")
    assert evaluator.evaluate is evaluate and evaluator.order_key is order_key


def test_the_start_is_even_and_a_central_first_stone_is_worth_more() -> None:
    assert evaluate(ConnectFour()) == 0
    # Scores are from the side to move, so Red's first stone shows from Yellow's side.
    assert evaluate(ConnectFour.from_moves("4")) < evaluate(ConnectFour.from_moves("3")) < 0
    assert evaluate(ConnectFour.from_moves("3")) < evaluate(ConnectFour.from_moves("1"))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_scores_are_bounded_and_blind_to_mirroring(seed: int) -> None:
    for position in random_game(seed):
        score = evaluate(position)
        assert abs(score) < EVALUATION_LIMIT
        assert evaluate(mirrored(position)) == score
        for move in position.legal_moves():
            assert order_key(mirrored(position), WIDTH - 1 - move) == order_key(position, move)


def test_a_win_on_the_next_stone_and_an_unstoppable_double_threat_dominate() -> None:
    assert evaluate(ConnectFour.from_moves("445566")) == WIN_NOW  # Red plays 3 or 7
    # Red has played 1 instead: Yellow can block only one of Red's two bottom-row threats.
    assert evaluate(ConnectFour.from_moves("4455661")) == LOST_NOW


def test_order_key_is_centre_first_on_an_empty_board() -> None:
    keys = [order_key(ConnectFour(), move) for move in range(WIDTH)]
    assert keys[3] > keys[2] > keys[1] > keys[0] and keys[3] > keys[4] > keys[5] > keys[6]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_order_key_puts_a_win_first_then_a_block_and_a_gift_last(seed: int) -> None:
    for position in random_game(seed)[:-1]:
        keys = {move: order_key(position, move) for move in position.legal_moves()}
        first = max(keys.values())
        wins = {move for move in keys if position.is_winning_move(move)}
        blocks = {
            move
            for move in keys
            if position.opponent_winning_cells() & position.possible() & COLUMN_MASKS[move]
        }
        # A gift fills the cell just below one where the opponent would complete a four.
        gifts = {
            move
            for move in keys
            if position.opponent_winning_cells() & position.possible() << 1 & COLUMN_MASKS[move]
        }
        if wins:
            assert {move for move in keys if keys[move] == first} <= wins
        elif blocks:
            assert {move for move in keys if keys[move] == first} <= blocks
        elif gifts and len(gifts) < len(keys):
            assert max(keys[move] for move in gifts) < min(keys[move] for move in keys if move not in gifts)


def test_the_sign_agrees_with_the_exact_score_on_most_decided_positions() -> None:
    agree = decided = 0
    for moves, score in pons_set("Test_L2_R1"):
        if score == 0:
            continue
        decided += 1
        agree += (evaluate(ConnectFour.from_moves(moves)) > 0) == (score > 0)
    assert agree / decided > 0.65  # 0.5 would be a coin; this evaluation measures about 0.74


def test_a_shallow_search_with_it_beats_a_random_player() -> None:
    for seed in range(6):
        rng = random.Random(seed)
        bot = seed % 2  # the bot plays either side
        position = ConnectFour()
        while position.outcome() is None:
            if position.turn == bot:
                move = search("connect4", position, depth=2).move
            else:
                move = rng.choice(position.legal_moves())
            position = position.play(move)
        assert position.outcome().winner == bot, (seed, str(position))  # type: ignore[union-attr]
