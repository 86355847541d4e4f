"""Expectimax: exact expectations, sound opponent models, and traps that minimax cannot see."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_positions import random_position

from bots.evaluation import Evaluator, evaluator_for
from bots.expectimax import EpsilonGreedyOpponent, Expectimax, UniformOpponent
from bots.negamax import AlphaBeta
from bots.result import DECISIVE, outcome_score
from games import GAMES, Position, get_game

TICTACTOE = evaluator_for("tictactoe")


def expected_against_uniform(
    position: Position, evaluator: Evaluator, depth: int, root_turn: int, ply: int
) -> float:
    """The textbook recursion: best of the root player's moves, mean of the opponent's."""
    outcome = position.outcome()
    if outcome is not None:
        return outcome_score(outcome, root_turn, ply)
    if depth == 0:
        score = evaluator.evaluate(position)
        return score if position.turn == root_turn else -score
    values = [
        expected_against_uniform(position.play(move), evaluator, depth - 1, root_turn, ply + 1)
        for move in position.legal_moves()
    ]
    return max(values) if position.turn == root_turn else sum(values) / len(values)


@pytest.mark.parametrize("name", sorted(GAMES))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 3))
def test_expectimax_against_a_uniform_opponent_computes_the_expectation(
    name: str, seed: int, depth: int
) -> None:
    position = random_position(name, seed)
    evaluator = evaluator_for(name)
    result = Expectimax(evaluator, UniformOpponent()).search(position, depth)
    expected = expected_against_uniform(position, evaluator, depth, position.turn, 0)
    assert abs(result.score - expected) <= 0.5 + 1e-6  # rounded to an integer, whatever the sum's order
    assert result.pv[0] == result.move
    best_child = expected_against_uniform(position.play(result.move), evaluator, depth - 1, position.turn, 1)
    assert best_child == pytest.approx(expected)


def test_expectimax_sets_a_trap_where_minimax_sees_only_a_draw() -> None:
    """O in the centre, X in a corner: every O move draws against perfect play, but not against a novice."""
    position = get_game("tictactoe").replay(["b2", "a1"])
    assert AlphaBeta(TICTACTOE).search(position, depth=9).score == 0
    result = Expectimax(TICTACTOE, UniformOpponent()).search(position, depth=9)
    assert result.score > 0
    after = position.play(result.move)
    # Sound: the move still draws against the best reply...
    assert AlphaBeta(TICTACTOE).search(after, depth=9).score == 0
    # ...and a trap: some of X's replies lose by force.
    losing = [
        move
        for move in after.legal_moves()
        if AlphaBeta(TICTACTOE).search(after.play(move), 9).score > DECISIVE
    ]
    assert losing


def test_a_wary_opponent_model_expects_less_than_a_random_one() -> None:
    position = get_game("tictactoe").replay(["b2", "a1"])
    against_random = Expectimax(TICTACTOE, UniformOpponent()).search(position, depth=9)
    against_casual = Expectimax(TICTACTOE, EpsilonGreedyOpponent(TICTACTOE, epsilon=0.2, depth=2)).search(
        position, 9
    )
    assert 0 <= against_casual.score < against_random.score


@pytest.mark.parametrize("epsilon", [0.0, 0.3, 1.0])
def test_epsilon_greedy_shares_probability_between_the_best_and_the_rest(epsilon: float) -> None:
    position = get_game("tictactoe").replay(["a1", "b2", "c3"])  # X to move: only edges hold the draw
    model = EpsilonGreedyOpponent(TICTACTOE, epsilon=epsilon, depth=4)
    replies, nodes = model.replies(position)
    probabilities = dict(replies)
    assert set(probabilities) == set(position.legal_moves())
    assert sum(probabilities.values()) == pytest.approx(1)
    assert nodes > 0
    scores = {move: result.score for move, result in AlphaBeta(TICTACTOE).analyze(position, 4).items()}
    best = {move for move, score in scores.items() if score == max(scores.values())}
    for move, probability in probabilities.items():
        share = epsilon / len(probabilities) + ((1 - epsilon) / len(best) if move in best else 0)
        assert probability == pytest.approx(share)


def test_uniform_opponent_is_uniform() -> None:
    position = get_game("tictactoe").start()
    replies, _ = UniformOpponent().replies(position)
    assert [move for move, _ in replies] == position.legal_moves()
    assert [probability for _, probability in replies] == pytest.approx([1 / 9] * 9)


@pytest.mark.parametrize("epsilon", [-0.1, 1.5])
def test_epsilon_must_be_a_probability(epsilon: float) -> None:
    with pytest.raises(ValueError, match="epsilon"):
        EpsilonGreedyOpponent(TICTACTOE, epsilon=epsilon)


def test_expectimax_with_a_time_budget_returns_a_completed_iteration() -> None:
    position = random_position("othello", seed=5)
    evaluator = evaluator_for("othello")
    result = Expectimax(evaluator, UniformOpponent()).search(position, time_ms=0)
    assert result.depth == 1
    assert result.move in position.legal_moves()
