"""Alpha-beta against its oracle, plain minimax, on random positions of every game; what a search returns."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_positions import random_line, random_position

from bots.evaluation import Evaluator, NoEvaluationError, evaluator_for
from bots.minimax import minimax
from bots.negamax import AlphaBeta
from bots.quiescence import Quiescence
from bots.result import DECISIVE, INFINITY, WIN, SearchResult, is_decisive
from bots.transposition import TranspositionTable
from games import GAMES, Position, get_game

ALL_GAMES = sorted(GAMES)
ORACLE_GAMES = sorted(set(GAMES) - {"chess"})
"""Games cheap enough for minimax on many random positions; chess (python-chess, with a quiescence search
at every leaf) has the same checks on fewer positions, in tests/test_chess_search.py."""


def score_after(score: int) -> int:
    """A child's score (its side to move) seen from its parent, one ply nearer the root."""
    if score > DECISIVE:
        return -score + 1
    if score < -DECISIVE:
        return -score - 1
    return -score


def final_value(evaluator: Evaluator, position: Position, pv: tuple, root_turn: int) -> int:
    """The score at the end of ``pv`` from ``position``, for the root's side: what the line claims."""
    for move in pv:
        position = position.play(move)
    outcome = position.outcome()
    if outcome is not None:
        if outcome.winner is None:
            return 0
        return (WIN - len(pv)) * (1 if outcome.winner == root_turn else -1)
    score = horizon_value(evaluator, position)
    return score if position.turn == root_turn else -score


def horizon_value(evaluator: Evaluator, position: Position) -> int:
    """What a search scores ``position`` at its horizon, for its side to move: the evaluation, after the
    captures are played out where the game names them (a window that cuts nothing leaves it exact)."""
    if evaluator.captures is None:
        return evaluator.evaluate(position)
    return Quiescence(evaluator).search(position, -INFINITY, INFINITY)[0]


@pytest.mark.parametrize("name", ALL_GAMES)
def test_every_game_has_an_evaluation(name: str) -> None:
    evaluator = evaluator_for(name)
    assert abs(evaluator.evaluate(get_game(name).start())) < 10_000


def test_a_game_without_evaluation_is_named_in_the_error() -> None:
    with pytest.raises(NoEvaluationError, match=r"'no_such_game'.*bots/evaluation/no_such_game\.py"):
        evaluator_for("no_such_game")


@pytest.mark.parametrize("name", ORACLE_GAMES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), max_depth=st.integers(1, 2))
def test_alphabeta_equals_minimax_along_random_games(name: str, seed: int, max_depth: int) -> None:
    """Every position of a random game, one searcher for all: its table holds entries of every depth."""
    evaluator = evaluator_for(name)
    searcher = AlphaBeta(evaluator, TranspositionTable(size_log2=12))
    depths = random.Random(seed)
    for position in random_line(name, seed):
        depth = depths.randint(1, max_depth)
        expected = minimax(position, evaluator, depth)
        found = searcher.search(position, depth)
        assert found.score == expected.score, (position.ply, depth, str(position))


def test_alphabeta_equals_minimax_on_every_tictactoe_position() -> None:
    """All 4,520 positions with a move left, one warm searcher, depths mixed: 1 or 2."""
    evaluator = evaluator_for("tictactoe")
    searcher = AlphaBeta(evaluator, TranspositionTable(size_log2=10))
    depths = random.Random(0)
    seen = {get_game("tictactoe").start().key()}
    frontier = [get_game("tictactoe").start()]
    checked = 0
    while frontier:
        position = frontier.pop()
        depth = depths.randint(1, 2)
        expected = minimax(position, evaluator, depth).score
        assert searcher.search(position, depth).score == expected, str(position)
        checked += 1
        for move in position.legal_moves():
            child = position.play(move)
            if child.key() not in seen and child.legal_moves():
                seen.add(child.key())
                frontier.append(child)
    assert checked == 4_520


@pytest.mark.parametrize("name", ORACLE_GAMES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_alphabeta_equals_minimax_three_plies_deep(name: str, seed: int) -> None:
    position = random_position(name, seed)
    evaluator = evaluator_for(name)
    assert AlphaBeta(evaluator).search(position, 3).score == minimax(position, evaluator, 3).score


@pytest.mark.parametrize("name", ORACLE_GAMES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_analysis_scores_every_move_as_minimax_does(name: str, seed: int) -> None:
    position = random_position(name, seed)
    evaluator = evaluator_for(name)
    analysis = AlphaBeta(evaluator).analyze(position, 2)
    assert set(analysis) == set(position.legal_moves())
    for move, result in analysis.items():
        child = position.play(move)
        if child.legal_moves():
            expected = score_after(minimax(child, evaluator, 1).score)
        else:
            expected = score_after(final_value(evaluator, child, (), child.turn))
        assert result.score == expected, position.format_move(move)
    assert next(iter(analysis.values())).score == max(result.score for result in analysis.values())


@pytest.mark.parametrize("name", ORACLE_GAMES)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 3))
def test_a_search_with_an_rng_plays_one_of_the_best_moves_and_can_play_each(
    name: str, seed: int, depth: int
) -> None:
    """Its score is the search's without an rng, its move one that the analysis scores best; over seeds,
    every such move comes up (the root proves ties exact rather than cutting them off)."""
    position = random_position(name, seed)
    evaluator = evaluator_for(name)
    analysis = AlphaBeta(evaluator).analyze(position, depth)
    best_score = max(result.score for result in analysis.values())
    best_moves = {move for move, result in analysis.items() if result.score == best_score}
    played = set()
    for rng_seed in range(12 * len(best_moves)):
        found = AlphaBeta(evaluator).search(position, depth, rng=random.Random(rng_seed))
        assert found.score == best_score and found.move in best_moves
        played.add(found.move)
    assert played == best_moves


def test_a_perfect_search_with_an_rng_opens_anywhere_at_tictactoe() -> None:
    """All nine first moves draw: given an rng, a full search plays each, where it once always chose the
    centre."""
    position = get_game("tictactoe").start()
    searcher = AlphaBeta(evaluator_for("tictactoe"))
    played = {searcher.search(position, 9, rng=random.Random(seed)).move for seed in range(60)}
    assert played == set(position.legal_moves())


@pytest.mark.parametrize("name", ORACLE_GAMES)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 4))
def test_principal_variation_is_legal_starts_with_the_move_and_earns_the_score(
    name: str, seed: int, depth: int
) -> None:
    position = random_position(name, seed)
    evaluator = evaluator_for(name)
    result = AlphaBeta(evaluator).search(position, depth)
    assert result.pv[0] == result.move
    assert 1 <= len(result.pv) <= result.depth
    notation = result.as_dict(position)  # plays every move of the line: raises if one is illegal
    assert notation["move"] == notation["pv"][0] == position.format_move(result.move)
    line_ends = position
    for move in result.pv:
        line_ends = line_ends.play(move)
    if len(result.pv) == result.depth or line_ends.outcome() is not None:
        assert final_value(evaluator, position, result.pv, position.turn) == result.score


def test_tictactoe_is_a_draw_under_full_search() -> None:
    result = AlphaBeta(evaluator_for("tictactoe")).search(get_game("tictactoe").start(), depth=9)
    assert result.score == 0
    assert result.depth <= 9


def test_o_wins_after_o_takes_a_corner_and_x_the_edge_beside_it() -> None:
    game = get_game("tictactoe")
    position = game.replay(["a1", "b1"])  # O top-left, X top-middle; O to move
    result = AlphaBeta(evaluator_for("tictactoe")).search(position, depth=9)
    assert position.turn == 0
    assert result.score > DECISIVE
    assert result.score == minimax(position, evaluator_for("tictactoe"), 7).score
    # Playing the line out ends in O's win, as the score says.
    end = position
    for move in result.pv:
        end = end.play(move)
    assert end.outcome() is not None and end.outcome().winner == 0
    assert WIN - result.score == len(result.pv)


def test_a_quicker_win_scores_more() -> None:
    position = get_game("tictactoe").replay(["a1", "a2", "b2", "a3"])  # O can win at once with c3
    result = AlphaBeta(evaluator_for("tictactoe")).search(position, depth=9)
    assert position.format_move(result.move) == "c3"
    assert result.score == WIN - 1


@pytest.mark.parametrize("name", ALL_GAMES)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_a_time_budget_returns_a_completed_iteration(name: str, seed: int) -> None:
    """Whatever the clock says, the result is exactly a completed depth's result."""
    position = random_position(name, seed)
    evaluator = evaluator_for(name)
    timed = AlphaBeta(evaluator).search(position, time_ms=30)
    assert timed.depth >= 1
    assert timed.move in position.legal_moves()
    assert timed.score == AlphaBeta(evaluator).search(position, timed.depth).score


@pytest.mark.parametrize("name", ALL_GAMES)
def test_a_budget_too_small_for_anything_still_completes_the_first_iteration(name: str) -> None:
    position = random_position(name, seed=11)
    result = AlphaBeta(evaluator_for(name)).search(position, time_ms=0)
    assert result.depth == 1
    assert result.move in position.legal_moves()


def test_iterative_deepening_stops_once_the_game_is_seen_to_the_end() -> None:
    result = AlphaBeta(evaluator_for("tictactoe")).search(get_game("tictactoe").start(), depth=50)
    assert result.depth == 9  # no line of tic-tac-toe is longer


def test_a_reused_searcher_gives_the_same_values_as_a_fresh_one() -> None:
    evaluator = evaluator_for("tictactoe")
    warm = AlphaBeta(evaluator)
    warm.search(get_game("tictactoe").start(), depth=9)
    for seed in range(30):
        position = random_position("tictactoe", seed)
        for depth in (1, 2, 3):
            assert warm.search(position, depth).score == AlphaBeta(evaluator).search(position, depth).score


def test_a_finished_game_has_nothing_to_search() -> None:
    position = get_game("tictactoe").replay(["a1", "a2", "b1", "b2", "c1"])
    with pytest.raises(ValueError, match="game is over"):
        AlphaBeta(evaluator_for("tictactoe")).search(position, depth=3)


@pytest.mark.parametrize("budget", [{}, {"depth": 0}])
def test_a_search_needs_a_positive_depth_or_a_time_budget(budget: dict) -> None:
    with pytest.raises(ValueError, match="depth"):
        AlphaBeta(evaluator_for("tictactoe")).search(get_game("tictactoe").start(), **budget)


def test_search_result_renders_in_notation() -> None:
    position = get_game("tictactoe").start()
    result = SearchResult(move=4, score=3, depth=2, nodes=10, pv=(4, 0), time_ms=1.23456)
    assert result.as_dict(position) == {
        "move": "b2",
        "score": 3,
        "depth": 2,
        "nodes": 10,
        "pv": ["b2", "a1"],
        "time_ms": 1.235,
        "source": "searched",
    }
    assert not is_decisive(result.score)
    looked_up = SearchResult(move=4, score=0, depth=None, nodes=None, pv=(4,), time_ms=0.01, source="book")
    assert looked_up.as_dict(position) | {"time_ms": 0} == {
        "move": "b2",
        "score": 0,
        "depth": None,
        "nodes": None,
        "pv": ["b2"],
        "time_ms": 0,
        "source": "book",
    }
