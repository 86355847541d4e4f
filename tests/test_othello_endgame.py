"""Othello's exact endgame: right against plain minimax to the end, the same compiled and in Python, and
played by the top level from its number of empty squares on."""

from __future__ import annotations

import dataclasses
import random
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_positions import random_line

from bots import othello_endgame, speedups
from bots.deadline import Deadline, OutOfTime
from bots.levels import LEVEL_COUNT, choose_move, level
from bots.othello_endgame import Endgame, decisive_score, empties, endgame_move, solve
from bots.result import WIN, is_decisive
from games.othello import PASS, Othello

EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def late_position(seed: int, most_empties: int) -> Othello:
    """A position of a random game with at most ``most_empties`` empty squares and a move to play."""
    line = random_line("othello", seed)
    late = [position for position in line if empties(position) <= most_empties]
    return random.Random(seed).choice(late or line[-1:])


def minimax_difference(position: Othello) -> int:
    """The final disc difference for the side to move with best play, by plain minimax over the rules."""
    moves = position.legal_moves()
    if not moves:
        black, white = position.disc_counts()
        return black - white if position.turn == 0 else white - black
    return max(-minimax_difference(position.play(move)) for move in moves)


def minimax_solution(position: Othello) -> tuple[int, tuple[int, ...]]:
    """The difference and every move that keeps it, by plain minimax."""
    scores = {move: -minimax_difference(position.play(move)) for move in position.legal_moves()}
    best = max(scores.values())
    return best, tuple(sorted(move for move, score in scores.items() if score == best))


@cache
def passing_position() -> Othello:
    """A position of a random game, few squares from the end, whose side to move must pass."""
    for seed in range(1000):
        for position in random_line("othello", seed):
            if position.legal_moves() == [PASS] and empties(position) <= 8:
                return position
    raise AssertionError("no random game passes near its end")


def require_kernel() -> None:
    if othello_endgame.GAME not in speedups.compiled_games():
        pytest.skip(f"no Othello kernel in this process (not built, or {speedups.NO_SPEEDUPS_VARIABLE}=1)")


def compiled_solve(position: Othello) -> Endgame:
    require_kernel()
    return solve(position)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_the_reference_is_plain_minimax_to_the_end(seed: int) -> None:
    position = late_position(seed, most_empties=6)
    found = solve(position, compiled=False)
    assert (found.difference, found.best_moves) == minimax_solution(position)


@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), most_empties=st.integers(1, 10))
def test_compiled_and_python_agree_on_score_and_best_moves(seed: int, most_empties: int) -> None:
    position = late_position(seed, most_empties)
    expected = solve(position, compiled=False)
    found = compiled_solve(position)
    assert (found.difference, found.best_moves) == (expected.difference, expected.best_moves)
    for compiled in (True, False):
        one = solve(position, all_best=False, compiled=compiled)
        assert one.difference == expected.difference and len(one.best_moves) == 1
        assert one.best_moves[0] in expected.best_moves


def test_a_side_that_must_pass_passes_and_the_score_counts_on() -> None:
    position = passing_position()
    expected = Endgame(-minimax_difference(position.play(PASS)), (PASS,), 0)
    for found in (solve(position, compiled=False), compiled_solve(position)):
        assert (found.difference, found.best_moves) == (expected.difference, expected.best_moves)


def test_a_won_ending_is_decisive_and_a_wider_margin_scores_more() -> None:
    assert decisive_score(0) == 0
    assert all(is_decisive(decisive_score(margin)) for margin in (-64, -1, 1, 64))
    assert decisive_score(64) == WIN and decisive_score(-64) == -WIN
    assert decisive_score(2) > decisive_score(1) > 0 > decisive_score(-1) > decisive_score(-2)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_solve_stops_at_its_deadline(compiled: bool) -> None:
    """18 empty squares: too many for either code to finish before its first look at the clock."""
    position = next(position for position in random_line("othello", 5) if empties(position) == 18)
    if compiled:
        require_kernel()
    with pytest.raises(OutOfTime):
        solve(position, deadline=Deadline(0), compiled=compiled)
    assert endgame_move(position, random.Random(0), time_ms=0) is None


def test_a_finished_game_has_nothing_to_solve() -> None:
    line = random_line("othello", 0)
    last = line[-1]
    finished = last.play(last.legal_moves()[0])
    while finished.legal_moves():
        finished = finished.play(finished.legal_moves()[0])
    for compiled in (True, False):
        with pytest.raises(ValueError, match="the game is over"):
            solve(finished, compiled=compiled)


def test_the_top_level_solves_the_last_fourteen_empty_squares() -> None:
    assert level("othello", LEVEL_COUNT).solve_empties == 14


def test_a_level_plays_a_best_move_from_its_empties_on_and_searches_before() -> None:
    """The top level with a reach of 8 empty squares, which the Python reference too solves at once."""
    reach = 8
    top = dataclasses.replace(level("othello", LEVEL_COUNT), solve_empties=reach)
    line = random_line("othello", 2)
    at_reach = next(position for position in line if empties(position) == reach)
    before = line[line.index(at_reach) - 1]
    expected = solve(at_reach)
    move, result = choose_move(at_reach, top, random.Random(0))
    assert move == result.move and move in expected.best_moves
    assert (result.score, result.pv, result.source) == (
        decisive_score(expected.difference),
        (move,),
        "solved",
    )
    assert result.depth is None  # solved to the end of the game
    _, searched = choose_move(before, top, random.Random(0), time_budget_ms=100)
    assert searched.pv != (searched.move,) and not is_decisive(searched.score)


def test_a_solve_that_overruns_half_the_budget_leaves_the_move_to_the_search() -> None:
    position = next(position for position in random_line("othello", 5) if empties(position) == 18)
    top = dataclasses.replace(level("othello", LEVEL_COUNT), solve_empties=18)
    move, result = choose_move(position, top, random.Random(0), time_budget_ms=2)
    assert move in position.legal_moves() and 1 <= result.depth <= top.depth
    assert not is_decisive(result.score)


def test_equal_best_moves_are_chosen_between_at_random() -> None:
    position = next(
        position
        for seed in range(100)
        for position in random_line("othello", seed)
        if empties(position) <= 8 and len(solve(position).best_moves) > 1
    )
    best = solve(position).best_moves
    chosen = {endgame_move(position, random.Random(seed)).move for seed in range(40)}  # type: ignore[union-attr]
    assert chosen == set(best)


def test_the_kernel_refuses_a_state_that_is_no_position() -> None:
    require_kernel()
    kernel = speedups.kernel_type(othello_endgame.GAME)
    with pytest.raises(ValueError):
        kernel.solve_endgame((1, 1, 0), True, None)
