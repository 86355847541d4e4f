"""The search pool: small tasks in, moves in notation out; dead workers replaced; budgets kept."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.process import has_ended, wait_until_ended

from bots.levels import level
from bots.pool import SearchError, SearchPool, ThinkRequest, think
from bots.speedups import compiled_games
from bots.timing import MIN_BUDGET_MS, SAFETY_MS, Clock, think_budget_ms
from games import get_game


@pytest.fixture(scope="module")
def pool() -> Iterator[SearchPool]:
    shared = SearchPool(2)
    yield shared
    shared.close()


@pytest.mark.parametrize(
    ("game", "moves"),
    [
        ("tictactoe", ()),
        ("connect4", ("4", "4", "3")),
        ("othello", ("d3", "c5")),
        ("checkers", ("11-15", "23-19")),
    ],
)
@pytest.mark.parametrize("number", [1, 3])
def test_think_answers_in_notation_with_a_legal_principal_variation(
    game: str, moves: tuple[str, ...], number: int
) -> None:
    result = think(ThinkRequest(game, moves, number, seed=7))
    position = get_game(game).replay(moves)
    assert result.move == result.pv[0]
    for step in result.pv:  # every move of the line is legal where it is played
        position = position.play(position.parse_move(step))
    assert result.depth >= 1 and result.nodes >= 1 and result.think_ms >= 0


def test_a_tight_budget_searches_shallower_and_queueing_time_counts_against_it() -> None:
    deep = level("othello", 8).depth
    assert deep is not None
    full = think(ThinkRequest("othello", ("d3",), 8))
    # The level's own time cap binds only where the search runs in Python, short of its depth.
    assert full.depth == deep or "othello" not in compiled_games()
    tight = think(ThinkRequest("othello", ("d3",), 8, budget_ms=MIN_BUDGET_MS))
    assert tight.depth < full.depth
    # A generous budget that was spent waiting in the queue leaves only the minimum.
    queued = think(ThinkRequest("othello", ("d3",), 8, budget_ms=2000, submitted_at=time.time() - 10))
    assert queued.depth < full.depth


def test_an_exact_solver_level_on_a_clock_searches_within_its_budget_instead() -> None:
    # From here Connect Four's solver needs about 400 000 nodes; a 20 ms budget allows a few thousand.
    moves = ("4", "4", "3", "5", "4", "3", "5", "2")
    assert level("connect4", 8).solver
    result = think(ThinkRequest("connect4", moves, 8, budget_ms=20))
    position = get_game("connect4").replay(moves)
    assert position.parse_move(result.move) in position.legal_moves()
    assert result.nodes < 50_000


async def test_a_failed_search_raises_search_error_without_breaking_the_pool(pool: SearchPool) -> None:
    replacements = pool.replacements
    with pytest.raises(SearchError, match="no-such-game"):
        await pool.think(ThinkRequest("no-such-game", (), 1))
    assert pool.replacements == replacements
    assert (await pool.think(ThinkRequest("tictactoe", (), 1))).move


async def test_many_searches_share_the_workers(pool: SearchPool) -> None:
    requests = [ThinkRequest("connect4", (str(column),), 3, seed=column) for column in range(1, 8)] * 2
    results = await asyncio.gather(*(pool.think(request) for request in requests))
    for request, result in zip(requests, results, strict=True):
        position = get_game("connect4").replay(request.moves)
        assert position.parse_move(result.move) in position.legal_moves()


async def test_a_worker_killed_mid_search_is_replaced_and_every_search_in_flight_still_answers(
    pool: SearchPool,
) -> None:
    await pool.warm_up()
    replacements = pool.replacements
    # Othello's top level after each of its twelve two-ply openings: many more searches than workers, so
    # that whatever the engine's speed (compiled or not) most are running or queued when a worker dies.
    start = get_game("othello").start()
    openings = [
        (start.format_move(first), after.format_move(second))
        for first in start.legal_moves()
        for after in [start.play(first)]
        for second in after.legal_moves()
    ]
    slow = [ThinkRequest("othello", moves, 8, budget_ms=300, submitted_at=time.time()) for moves in openings]
    searches = [asyncio.create_task(pool.think(request)) for request in slow]
    await asyncio.sleep(0.02)
    assert not all(search.done() for search in searches)
    os.kill(multiprocessing.active_children()[0].pid, signal.SIGKILL)

    results = await asyncio.gather(*searches)
    assert pool.replacements == replacements + 1
    for request, result in zip(slow, results, strict=True):
        position = get_game("othello").replay(request.moves)
        assert position.parse_move(result.move) in position.legal_moves()
    assert (await pool.think(ThinkRequest("tictactoe", (), 1))).move  # the new workers serve on


OWNER = """
import asyncio, multiprocessing, time
from bots.pool import SearchPool

if __name__ == "__main__":
    pool = SearchPool(2)
    asyncio.run(pool.warm_up())
    print(*(child.pid for child in multiprocessing.active_children()), flush=True)
    time.sleep(60)
"""
"""A process that owns a pool of two started workers, says their pids, and waits to be killed."""


@pytest.mark.skipif(sys.platform != "linux", reason="processes are watched through Linux's /proc")
def test_the_workers_end_when_the_process_that_owns_the_pool_is_killed(tmp_path: Path) -> None:
    """Killed, the owner cannot close the executor; its workers (and so the forkserver, which lives as
    long as they do) must not stay behind."""
    script = tmp_path / "owner.py"
    script.write_text(OWNER)
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        children = [int(pid) for pid in owner.stdout.readline().split()]
        assert len(children) >= 2 and not any(has_ended(pid) for pid in children)
    finally:
        owner.kill()
        owner.wait()
    assert all(wait_until_ended(pid) for pid in children)


def test_the_budget_shares_out_the_clock_and_keeps_a_margin() -> None:
    assert think_budget_ms(2000, None) == 2000  # untimed: the level's own budget
    assert think_budget_ms(None, None) is None  # ... or none at all (depth only)
    # 5+3: 300 s / 30 + 80 % of 3 s, less the margin, capped by the level
    assert think_budget_ms(None, Clock(300_000, 3_000)) == 10_000 + 2_400 - SAFETY_MS
    assert think_budget_ms(4000, Clock(300_000, 3_000)) == 4000
    # A huge increment never plans more than half of what is left.
    assert think_budget_ms(None, Clock(10_000, 60_000)) == 5_000 - SAFETY_MS
    # Nearly flagged: the least budget, a shallow search, but still a move.
    assert think_budget_ms(None, Clock(100, 0)) == MIN_BUDGET_MS
    with pytest.raises(ValueError, match="clock times"):
        think_budget_ms(None, Clock(-1, 0))
    with pytest.raises(ValueError, match="level budget"):
        think_budget_ms(-5, None)
