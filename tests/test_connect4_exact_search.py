"""The compiled exact search (bots/connect4_exact/) against the pure-Python one, the reference.

On random positions both must give the same exact scores, per-move scores, best-move sets, moves and weak
values, and, while the compiled table loses no bound, the same node counts: the C does what the Python
does, step for step. Every test here skips where the extension was not built (or with
``PLYARENA_NO_SPEEDUPS=1``); the tests of tests/test_connect4_solver.py run on whichever search the
process uses, and CI runs them both ways.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bots import connect4_solver
from bots.connect4_solver import (
    NO_SPEEDUPS_VARIABLE,
    PythonSearch,
    SearchFactory,
    SolverBudgetExceeded,
    analyze,
    solve,
)
from games.connect4 import CELLS, ConnectFour

FEWEST_STONES = 18
"""Random positions have at least this many stones (unless the game ended sooner), so that the
pure-Python search takes milliseconds."""
SEARCHES = settings(max_examples=150, deadline=None)
MIDDLE_GAME = "32432146551413715126325"
"""A line of Pons' Test_L2_R1 (score -3) whose solve visits some 5,000 positions."""


@pytest.fixture(scope="module")
def compiled() -> SearchFactory:
    """The compiled search; the module skips without it."""
    if connect4_solver.CompiledSearch is None:
        pytest.skip(f"the compiled exact search is not built, or {NO_SPEEDUPS_VARIABLE}=1")
    return connect4_solver.CompiledSearch


def random_game_position(seed: int, stones: int) -> ConnectFour:
    """The position after ``stones`` random moves, or where the random game ended before them."""
    rng = random.Random(seed)
    position = ConnectFour()
    while position.ply < stones and position.legal_moves():
        position = position.play(rng.choice(position.legal_moves()))
    return position


positions = st.builds(
    random_game_position, seed=st.integers(0, 2**32 - 1), stones=st.integers(FEWEST_STONES, CELLS)
)


@SEARCHES
@given(position=positions)
def test_exact_scores_moves_and_node_counts_agree(compiled: SearchFactory, position: ConnectFour) -> None:
    python, native = PythonSearch(), compiled(None, None)
    score = python.score(position)
    assert native.score(position) == score
    assert native.best_move(position, score) == python.best_move(position, score)
    if native.bounds_lost() == 0:
        assert native.nodes() == python.nodes()
        assert native.table_size() == python.table_size()


def test_node_counts_agree_wherever_the_table_lost_nothing_which_is_nearly_everywhere(
    compiled: SearchFactory,
) -> None:
    compared = 0
    for seed in range(200):
        position = random_game_position(seed, FEWEST_STONES + seed % 8)
        python, native = PythonSearch(), compiled(None, None)
        assert native.score(position) == python.score(position)
        if native.bounds_lost() == 0:
            assert native.nodes() == python.nodes(), position
            compared += 1
    # 2^23 slots lose a bound in about one search of 20 here: those that store 5,000 bounds or more.
    assert compared >= 180


@SEARCHES
@given(position=positions)
def test_per_move_scores_and_best_move_sets_agree(compiled: SearchFactory, position: ConnectFour) -> None:
    scores = analyze(position, search=PythonSearch)
    assert analyze(position, search=compiled) == scores
    python, native = solve(position, search=PythonSearch), solve(position, search=compiled)
    assert native.score == python.score
    if scores:
        best = {move for move, score in scores.items() if score == python.score}
        assert python.move in best and native.move in best
    else:
        assert python.move is native.move is None


@SEARCHES
@given(position=positions)
def test_weak_values_agree(compiled: SearchFactory, position: ConnectFour) -> None:
    python, native = PythonSearch(), compiled(None, None)
    value = python.value(position)
    assert native.value(position) == value
    if value >= 0:  # a move that keeps the win or the draw (in a lost position every move keeps the loss)
        assert native.best_move(position, value) == python.best_move(position, value)


def test_a_node_budget_stops_both_at_the_same_node(compiled: SearchFactory) -> None:
    moves = MIDDLE_GAME  # some 5,000 nodes: enough for a budget to bite
    needed = solve(moves, search=PythonSearch).nodes
    for search in (PythonSearch, compiled):
        assert solve(moves, max_nodes=needed, search=search).nodes == needed
        with pytest.raises(SolverBudgetExceeded, match=f"after {needed - 1} nodes"):
            solve(moves, max_nodes=needed - 1, search=search)


def test_each_search_starts_with_an_empty_table_and_a_kept_one_remembers(compiled: SearchFactory) -> None:
    position = ConnectFour.from_moves(MIDDLE_GAME)
    first, second = compiled(None, None), compiled(None, None)
    assert first.score(position) == second.score(position)
    assert first.nodes() == second.nodes()  # the second search took over the first's table, emptied
    again = first.nodes()
    first.score(position)
    assert first.nodes() - again < again  # the same search again: its table answers most of it


def test_a_small_table_starts_afresh_when_full_and_stays_right(compiled: SearchFactory) -> None:
    moves = MIDDLE_GAME
    small = compiled(None, 64)
    assert small.score(ConnectFour.from_moves(moves)) == solve(moves, search=PythonSearch).score
    assert 0 < small.table_size() <= 64
    assert small.bounds_lost() > 0


@pytest.mark.parametrize(
    ("current", "mask"),
    [
        (0, 1 << 1),  # a stone floating above an empty cell
        (1, 0),  # a stone of the side to move that is not on the board
        (0, 1 << 6),  # the spare bit above the first column
    ],
)
def test_an_impossible_board_is_refused(compiled: SearchFactory, current: int, mask: int) -> None:
    with pytest.raises(ValueError, match="not a Connect Four position"):
        compiled(None, None).score(ConnectFour(current, mask))


def test_a_score_out_of_range_is_refused(compiled: SearchFactory) -> None:
    with pytest.raises(ValueError, match="99 is no Connect Four score"):
        compiled(None, None).best_move(ConnectFour.from_moves(MIDDLE_GAME), 99)


def test_a_signal_stops_a_long_search(compiled: SearchFactory) -> None:
    """Ctrl-C (here a timer's exception) reaches a search that would otherwise run for minutes."""

    class TimeUp(Exception):
        pass

    def time_up(signum: int, frame: object) -> None:
        raise TimeUp

    previous = signal.signal(signal.SIGALRM, time_up)
    started = time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.05)
        with pytest.raises(TimeUp):
            compiled(None, None).score(ConnectFour())  # the empty board: hours
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("value", "expected"), [("1", "PythonSearch"), ("", "Search")])
def test_the_environment_can_turn_the_compiled_search_off(
    compiled: SearchFactory, value: str, expected: str
) -> None:
    environment = {**os.environ, NO_SPEEDUPS_VARIABLE: value}
    printed = subprocess.run(
        [sys.executable, "-c", "from bots.connect4_solver import Search; print(Search.__name__)"],
        env=environment, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert printed.strip() == expected
