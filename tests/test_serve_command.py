"""The commands that start a server: ``plyarena run`` and ``plyarena serve``, as separate processes."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import urllib.request
from pathlib import Path

from support.process import free_port


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


def _get_json(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())
