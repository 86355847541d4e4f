"""The instruction counts' driver (bench/flat_out.py): scripted pairs that play as fast as answered."""

from __future__ import annotations

import pytest

from bench.flat_out import USAGE, drive, main
from server.app import Server


async def test_the_driver_plays_moves_that_the_server_commits(arena: Server) -> None:
    await drive(arena.ws_url, pairs=3, seconds=1.0)
    assert arena.metrics.moves_total > 3 * 10  # each pair moves many times a second, not once a beat


def test_the_driver_says_how_it_is_called(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ws://127.0.0.1:1/ws"]) == 2
    assert capsys.readouterr().err.strip() == USAGE
