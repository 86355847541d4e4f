"""The commands that start bots: ``plyarena run`` (server and fleet together) and ``plyarena bench bots``."""

from __future__ import annotations

import asyncio
import json
import socket
import stat
import sys
import urllib.request
from pathlib import Path
from typing import Any

from support.fixtures import Connect

from bench.bots import BotsPlan, render_markdown, run_bots_benchmark
from bots.client import BotSpec
from bots.fleet_state import FleetState
from bots.levels import LEVEL_COUNT, level_table
from plyarena.cli import build_parser, main
from plyarena.commands.bots import fleet_config
from plyarena.commands.run import run_arena
from server.config import ServerConfig


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


async def test_plyarena_run_serves_with_a_fleet_that_offers_every_level_and_seats_bots(
    tmp_path: Path, connect: Connect
) -> None:
    port = free_port()
    database = f"sqlite+aiosqlite:///{tmp_path / 'run.sqlite3'}"
    config = ServerConfig(port=port, db_url=database, instance_id="run")
    args = build_parser().parse_args(
        ["run", "--port", str(port), "--workers", "1", "--idle-wait", "-1", "--max-games", "1"]
    )
    stop = asyncio.Event()
    arena = asyncio.create_task(run_arena(config, args, stop))
    try:
        listing: dict[str, Any] = {}
        for _ in range(100):
            await asyncio.sleep(0.1)
            try:
                listing = await asyncio.to_thread(get_json, f"http://127.0.0.1:{port}/api/bots")
            except OSError:
                continue
            if listing["games"]:
                break
        # Every level of every game but those an outside engine plays (chess's level 8: no --engine here).
        assert {game: len(bots) for game, bots in listing["games"].items()} == {
            game: sum(row.engine is None for row in rows) for game, rows in level_table().items()
        }
        assert len(listing["games"]["chess"]) == LEVEL_COUNT - 1

        alice = await connect.player(f"ws://127.0.0.1:{port}/ws", "Alice")
        state = await alice.request("match.create", game="othello", seat=0, bot={"level": 2})
        seated = await alice.expect(type_="seated", match_id=state["match_id"], seat=1)
        assert seated["player"]["name"] == BotSpec.of("othello", 2).name
        waiting = await alice.request("match.create", game="othello", seat=0, bot={"level": 2})
        note = await alice.expect(type_="bot.status", match_id=waiting["match_id"], timeout=10)
        assert note["bot_status"]["state"] == "queued", "the server takes the notes of the fleet it started"

        # The bot's token is kept beside the database, for the fleet of the next start.
        kept = tmp_path / "run.fleet.json"
        assert stat.S_IMODE(kept.stat().st_mode) == 0o600
        token = FleetState.load(kept).token(f"ws://127.0.0.1:{port}/ws", BotSpec.of("othello", 2).name)
        assert token is not None
        assert (await connect.player(f"ws://127.0.0.1:{port}/ws", token=token)).player_id == seated["player"][
            "id"
        ]
    finally:
        stop.set()
        assert await asyncio.wait_for(arena, 30) == 0


async def test_the_bots_benchmark_plays_its_games_and_reports_both_worker_counts() -> None:
    plan = BotsPlan(game="tictactoe", level=2, games=2)
    runs = await run_bots_benchmark(plan)
    assert [run.workers for run in runs] == [1, 2]
    assert all(run.moves >= 5 * plan.games and run.moves_per_s > 0 for run in runs)
    markdown = render_markdown(plan, runs, "plyarena bench bots --test")
    assert "`plyarena bench bots --test`" in markdown and "| 2 | 2 |" in markdown


def test_bench_bots_quick_runs_from_the_command_line(tmp_path: Path) -> None:
    output = tmp_path / "benchmarks.md"
    assert main(["bench", "bots", "--quick", "--game", "tictactoe", "--output", str(output)]) == 0
    text = output.read_text()
    assert "<!-- plyarena bench bots: start -->" in text and "Speed-up from 1 to 2 workers" in text


async def test_a_fleet_says_which_broker_it_follows_without_its_password() -> None:
    """The startup line goes to logs (``docker logs``): it names the broker, not the credentials."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "plyarena", "bots", "--mqtt", "mqtt://fleet-7:s3cret-word@127.0.0.1:9",
        "--workers", "1", "--levels", "connect4:1", "--max-games", "1",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
    finally:
        process.terminate()
        await process.wait()
    assert line.startswith("Bot fleet ") and "mqtt://127.0.0.1:9" in line, line
    assert "s3cret" not in line


def test_a_fleet_that_logs_in_to_a_broker_is_named_after_its_user(capsys: Any) -> None:
    """A broker that binds client ids to users (docker-compose.yml's) lets a fleet write only the offer
    named after its user; without a login a fleet makes up a new id each run."""
    named = fleet_config(build_parser().parse_args(["bots", "--mqtt", "mqtt://fleet-7:pw@broker:1883"]))
    assert named.fleet_id == "fleet-7"
    first, second = (
        fleet_config(build_parser().parse_args(["bots", "--mqtt", "mqtt://broker:1883"])) for _ in "ab"
    )
    assert first.fleet_id != second.fleet_id
    assert main(["bots", "--mqtt", "mqtt://a%2Fb:pw@broker:1883"]) != 0
    assert "MQTT user 'a/b' cannot name a fleet" in capsys.readouterr().err
