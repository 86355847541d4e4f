"""The compiled kernel against the pure-Python code it speeds up, on random positions of every game it has.

Python is the reference: the kernel must give the same perft counts, evaluations and move-ordering keys,
and its search the same scores, moves, principal variations and node counts, cold or with a warm table
that positions collide in. Every test skips where the kernel was not built (or ``PLYARENA_NO_SPEEDUPS=1``).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from random_positions import random_line, random_position

from bots import speedups
from bots.evaluation import evaluator_for
from bots.negamax import AlphaBeta
from bots.result import SearchResult
from bots.transposition import TranspositionTable
from games import Position, get_game, perft
from games.checkers import Checkers

KERNEL_GAMES = ("connect4", "othello", "checkers")
MAX_DEPTH = {"connect4": 5, "othello": 4, "checkers": 5}
"""The deepest search of the random tests: deep enough for cut-offs, killers and table hits."""
EXAMPLES = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def kernel_of(game: str) -> Any:
    """The game's type in the kernel; the test skips without it."""
    if game not in speedups.compiled_games():
        pytest.skip(f"no kernel for {game} in this process (not built, or {speedups.NO_SPEEDUPS_VARIABLE}=1)")
    return speedups.kernel_type(game)


def searchers(game: str, size_log2: int = 18) -> tuple[AlphaBeta, AlphaBeta]:
    """A compiled and a pure-Python searcher of ``game``, with tables of the same size."""
    kernel_of(game)
    evaluator = evaluator_for(game)
    compiled = AlphaBeta(evaluator, TranspositionTable(size_log2))
    python = AlphaBeta(evaluator, TranspositionTable(size_log2), compiled=False)
    assert compiled.kernel is not None and python.kernel is None
    return compiled, python


def same_search(found: SearchResult, expected: SearchResult) -> None:
    assert (found.move, found.score, found.depth, found.pv, found.nodes) == (
        expected.move,
        expected.score,
        expected.depth,
        expected.pv,
        expected.nodes,
    )


@pytest.mark.parametrize("game", KERNEL_GAMES)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(0, 3))
def test_perft_counts_as_the_rules_do(game: str, seed: int, depth: int) -> None:
    kernel = kernel_of(game)
    position = random_position(game, seed)
    assert kernel.perft(speedups.state_of(position), depth) == perft(position, depth)


@pytest.mark.parametrize("game", KERNEL_GAMES)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1))
def test_evaluation_ordering_and_table_slot_as_in_python(game: str, seed: int) -> None:
    """Every position of a random game, its end included: its evaluation, its moves in the rules' order
    with each one's order_key, and the hash that picks its table slot."""
    kernel = kernel_of(game)
    evaluator = evaluator_for(game)
    assert evaluator.order_key is not None
    line = random_line(game, seed)
    last = line[-1]
    for position in [*line, *(last.play(move) for move in last.legal_moves())]:
        state = speedups.state_of(position)
        assert kernel.evaluate(state) == evaluator.evaluate(position), str(position)
        expected_keys = [(move, evaluator.order_key(position, move)) for move in position.legal_moves()]
        assert kernel.order_keys(state) == expected_keys, str(position)
        assert kernel.key_hash(state) == hash(position.key()) % 2**64


@pytest.mark.parametrize("game", KERNEL_GAMES)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 5))
def test_a_search_is_the_same_compiled_or_not(game: str, seed: int, depth: int) -> None:
    compiled, python = searchers(game)
    position = random_position(game, seed)
    depth = min(depth, MAX_DEPTH[game])
    same_search(compiled.search(position, depth), python.search(position, depth))


@pytest.mark.parametrize("game", KERNEL_GAMES)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 5))
def test_a_search_with_an_rng_is_the_same_compiled_or_not(game: str, seed: int, depth: int) -> None:
    """Given equally seeded rngs, both prove the same ties for the best and choose the same of them: the
    same move, line and node count."""
    compiled, python = searchers(game)
    position = random_position(game, seed)
    depth = min(depth, MAX_DEPTH[game])
    found = compiled.search(position, depth, rng=random.Random(seed))
    same_search(found, python.search(position, depth, rng=random.Random(seed)))


@pytest.mark.parametrize("game", KERNEL_GAMES)
@EXAMPLES
@given(seed=st.integers(0, 2**32 - 1), depth=st.integers(1, 4))
def test_an_analysis_is_the_same_compiled_or_not(game: str, seed: int, depth: int) -> None:
    """Every root move's score and line, in the same order: the best-move set and its ties too."""
    compiled, python = searchers(game)
    position = random_position(game, seed)
    depth = min(depth, MAX_DEPTH[game] - 1)
    found, expected = compiled.analyze(position, depth), python.analyze(position, depth)
    assert list(found) == list(expected)
    for move, result in found.items():
        same_search(result, expected[move])


@pytest.mark.parametrize("game", KERNEL_GAMES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_warm_searchers_with_a_small_table_stay_the_same(game: str, seed: int) -> None:
    """One searcher of each kind along a whole random game, depths mixed, 2**8 slots: the tables fill,
    positions share slots and replace each other, and entries of earlier searches are reused."""
    compiled, python = searchers(game, size_log2=8)
    depths = random.Random(seed)
    for position in random_line(game, seed, max_plies=60):
        depth = depths.randint(1, MAX_DEPTH[game] - 1)
        same_search(compiled.search(position, depth), python.search(position, depth))


@pytest.mark.parametrize("quiet_plies", [70, 76, 79])
@pytest.mark.parametrize("fen", ["W:WK10,K14:BK27", "B:WK18,K23:BK1,K3", "W:WK2,K7,11:BK30,22,K19"])
def test_the_draw_rules_inside_a_compiled_search(fen: str, quiet_plies: int) -> None:
    """Kings that shuffle: the 80-ply rule and threefold repetition end lines inside the tree, reached
    from a history of quiet plies in which the position already occurred once."""
    compiled, python = searchers("checkers")
    start = Checkers.from_fen(fen)
    earlier = (start.key(), *range(1, quiet_plies % 10))  # the start once; other (made-up) positions
    position = msgspec.structs.replace(start, quiet_plies=quiet_plies, earlier_keys=earlier)
    state = speedups.state_of(position)
    for depth in range(1, 8):
        assert kernel_of("checkers").perft(state, depth) == perft(position, depth)
        same_search(compiled.search(position, depth), python.search(position, depth))


@pytest.mark.parametrize("game", KERNEL_GAMES)
def test_a_timed_compiled_search_stops_in_time_and_counts_its_nodes(game: str) -> None:
    compiled, _ = searchers(game)
    position = get_game(game).start()
    result = compiled.search(position, time_ms=20)
    assert result.depth >= 1 and result.time_ms < 500
    assert compiled.kernel is not None
    assert result.nodes == compiled.nodes == compiled.kernel.searcher.nodes  # the stopped iteration's too
    assert compiled.search(position, result.depth).score == result.score


@pytest.mark.parametrize(
    ("game", "state"),
    [
        ("connect4", (1, 0)),  # a stone of the side to move outside the mask
        ("connect4", (0, 1 << 6)),  # a stone on a column's spare bit
        ("othello", (1, 1, 0)),  # two discs on one square
        ("othello", (0, 0, 2)),
        ("checkers", (1, 1, 0, 0, 0, 0, ())),  # two pieces on one square
        ("checkers", (1 << 32, 0, 0, 0, 0, 0, ())),  # off the board
        ("checkers", (1, 0, 0, 0, 0, 0, (-1,))),  # not a key
        ("checkers", (1, 0, 0, 0, 0, 0)),
    ],
)
def test_a_state_that_is_no_position_is_refused(game: str, state: tuple[int, ...]) -> None:
    kernel = kernel_of(game)
    with pytest.raises(ValueError):
        kernel.perft(state, 1)
    with pytest.raises(TypeError, match="state tuple"):
        kernel.evaluate(list(state))


@pytest.mark.parametrize("game", KERNEL_GAMES)
def test_another_evaluator_searches_in_python(game: str) -> None:
    kernel_of(game)
    custom = evaluator_for(game).__class__(game, evaluate=lambda position: 0)
    assert AlphaBeta(custom).kernel is None


def test_the_environment_can_keep_the_kernel_out() -> None:
    code = "from bots import speedups; print(speedups.KERNEL, speedups.compiled_games())"
    environment = {**os.environ, speedups.NO_SPEEDUPS_VARIABLE: "1"}
    shown = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True)
    assert shown.stdout.split() == ["None", "[]"], shown.stderr


def test_perft_without_a_kernel_is_the_rules_own() -> None:
    position: Position = get_game("tictactoe").start()
    assert speedups.state_of(position) is None
    assert speedups.perft(position, 2) == perft(position, 2) == 72
