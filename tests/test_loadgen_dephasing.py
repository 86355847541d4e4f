"""The load generator's openings (bench/loadgen/dephasing.py): matches spread over their games' plies."""

from __future__ import annotations

import asyncio
import random
import statistics

import pytest
from websockets.asyncio.client import connect

from bench.loadgen.dephasing import opening_plies, random_game_length
from bench.loadgen.direct import DirectClient
from bench.loadgen.recording import Pacing, Recorder
from bench.loadgen.scripted import ScriptedPair
from server.app import Server


def test_openings_spread_over_a_games_plies_as_a_random_moment_falls_in_a_random_game() -> None:
    rng = random.Random(7)
    lengths = [random_game_length("connect4", rng) for _ in range(500)]
    openings = opening_plies("connect4", 5_000, rng)
    assert all(0 <= plies < 42 for plies in openings), "within one game of at most 42 plies"
    assert len(set(openings)) > 25, "at every ply, not a few"
    # A moment's game is picked by its length, so its age averages E[L^2] / 2E[L], past half a mean game.
    expected = statistics.fmean(length**2 for length in lengths) / (2 * statistics.fmean(lengths))
    assert statistics.fmean(openings) == pytest.approx(expected, rel=0.1)
    assert expected > statistics.fmean(lengths) / 2


async def _player(server: Server, name: str) -> DirectClient:
    websocket = await connect(
        server.ws_url, compression=None, ping_interval=None, create_connection=DirectClient
    )
    assert isinstance(websocket, DirectClient)
    await websocket.send(f'{{"type":"hello","name":"{name}"}}')
    assert '"type":"welcome"' in await websocket.recv()
    return websocket


@pytest.mark.parametrize("arena_db_url", ["sqlite"], indirect=True)
async def test_a_pair_plays_a_checkers_opening_longer_than_the_servers_burst_allowance(arena: Server) -> None:
    """100 plies, some 50 requests a player: more than a connection's burst of 40 requests if sent at once
    (the server would refuse the rest as rate_limited); the opening's pace keeps within the allowance."""
    host, guest = await _player(arena, "Host"), await _player(arena, "Guest")
    pair = ScriptedPair(
        host, guest, game="checkers", time_control="5+3", pacing=Pacing(), recorder=Recorder(),
        rng=random.Random(3), opening_plies=100,
    )  # fmt: skip
    try:
        await asyncio.wait_for(pair.start(), 30)
        assert pair.opening_plies == 0
        assert arena.metrics.errors_total.get("rate_limited", 0) == 0
        assert arena.metrics.moves_total >= 100
    finally:
        pair.stop()
        await host.close()
        await guest.close()
