"""The commands that start a server: ``plyarena run`` and ``plyarena serve``, as separate processes."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from support.process import free_port

from plyarena.commands.serve import started_server
from plyarena.options import CommandError
from server.config import ServerConfig


async def test_run_serves_with_sqlite_in_the_working_directory_and_prints_the_url(tmp_path: Path) -> None:
    port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "plyarena", "run", "--port", str(port),
        cwd=tmp_path, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        banner = await asyncio.wait_for(process.stdout.readline(), 60)
        assert banner.decode().strip() == f"Ply Arena is running at http://127.0.0.1:{port}/"
        health = await asyncio.to_thread(_get_json, f"http://127.0.0.1:{port}/healthz")
        assert health["status"] == "ok"
        assert (tmp_path / "plyarena.sqlite3").exists()
    finally:
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), 30) == 0, "SIGTERM shuts the server down cleanly"


def test_serve_finds_its_port_taken_before_it_touches_the_database(tmp_path: Path) -> None:
    """A port in use is said in one line, and found first: no database file created, no migration run."""
    database = tmp_path / "arena.sqlite3"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "plyarena", "serve", "--port", str(port), "--db", f"sqlite+aiosqlite:///{database}"],
            cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith(f"plyarena serve: error: cannot listen on 127.0.0.1:{port}: "), done.stderr
    assert "address already in use" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == [], "the migrations did not run"


def _get_json(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


async def test_a_server_whose_instance_another_server_took_stops_and_says_so(tmp_path: Path) -> None:
    """Two servers must not host the same matches: the one cut off from its claim stops, and fails so that
    a supervisor restarting it sees it refused while the other runs (see docs/storage.md)."""
    stop = asyncio.Event()
    database = f"sqlite+aiosqlite:///{tmp_path / 'arena.sqlite3'}"
    config = ServerConfig(port=0, db_url=database, instance_id="took")
    with pytest.raises(CommandError, match=r"^stopped: another server took instance 'took'"):
        async with started_server(config, stop, tune_gc=False) as server:
            server.store.claim_lost.set()  # (as the store sets it: see test_server_restart.py)
            await asyncio.wait_for(stop.wait(), 5)
