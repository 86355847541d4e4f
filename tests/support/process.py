"""A server in its own process (``python -m plyarena serve``), for tests that kill it; and whether a process
has ended."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sys
import time
from pathlib import Path

READY_LINE = "Ply Arena is serving at "
START_TIMEOUT_S = 60.0


def has_ended(pid: int) -> bool:
    """Whether process ``pid`` is gone (or a zombie that nobody has reaped yet: it runs no more)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # (gone before, or while, it was read)
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def wait_until_ended(pid: int, timeout_s: float = 10.0) -> bool:
    """Whether process ``pid`` ends within ``timeout_s`` (Linux: read from /proc)."""
    deadline = time.monotonic() + timeout_s
    while not has_ended(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServerProcess:
    """``plyarena serve`` with fixed options, to be killed and started again as the same instance."""

    def __init__(self, db_url: str, instance_id: str, workdir: Path, *extra_args: str) -> None:
        self.port = free_port()
        self.args = [
            "-m", "plyarena", "serve", "--port", str(self.port), "--db", db_url, "--instance-id", instance_id,
            *extra_args,
        ]  # fmt: skip
        self.workdir = workdir
        self.output: list[str] = []
        self.process: asyncio.subprocess.Process | None = None
        self._drain: asyncio.Task[None] | None = None

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/ws"

    async def start(self) -> None:
        """Start the process and wait until it says it serves."""
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            *self.args,
            cwd=self.workdir,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        ready = asyncio.get_running_loop().create_future()
        self._drain = asyncio.create_task(self._read_output(ready))
        try:
            await asyncio.wait_for(ready, START_TIMEOUT_S)
        except (TimeoutError, EOFError):
            await self.kill()
            raise AssertionError("the server did not start:\n" + "".join(self.output)) from None

    async def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a crash or a power cut."""
        await self._end(signal.SIGKILL)

    async def stop(self) -> None:
        """SIGTERM: a clean shutdown."""
        await self._end(signal.SIGTERM)

    async def _end(self, signum: int) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signum)
            await self.process.wait()
        if self._drain is not None:
            with contextlib.suppress(Exception):
                await self._drain

    async def _read_output(self, ready: asyncio.Future[None]) -> None:
        assert self.process is not None and self.process.stdout is not None
        async for raw in self.process.stdout:
            line = raw.decode(errors="replace")
            self.output.append(line)
            if line.startswith(READY_LINE) and not ready.done():
                ready.set_result(None)
        if not ready.done():
            ready.set_exception(EOFError("the server exited"))
