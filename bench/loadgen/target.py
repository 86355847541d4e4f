"""The processes under test, seen from outside: ``plyarena serve`` and the echo server.

Each runs in a process of its own. The bench reads their memory (resident set
size) and CPU time from ``/proc``, and the game server's own figures from its
``/metrics`` page over HTTP, as a monitoring system would.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import multiprocessing
import os
import signal
import socket
import sys
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import IO, Self

from bench.loadgen.echo import ECHO_HOST, serve_echo

HOST = "127.0.0.1"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    """The resident set size of process ``pid``, from ``/proc/{pid}/status``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise ValueError(f"/proc/{pid}/status has no VmRSS line")


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` so far, from ``/proc/{pid}/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # the command name may hold spaces; skip past it
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def waiting_seconds(pid: int) -> float | None:
    """How long the main thread of process ``pid`` (a server's event loop) has been ready to run but
    waited for a core, from ``/proc/{pid}/schedstat``; ``None`` where the kernel keeps no such count."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return None


def with_descendants(pids: Iterable[int]) -> list[int]:
    """``pids`` and every process started under them (a load generator's search workers, say)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            text = stat.read_text()
            parents[int(stat.parent.name)] = int(text[text.rindex(")") + 2 :].split()[1])
    found, frontier = list(pids), list(pids)
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine has spent busy so far (all processes, interrupts included)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(value) for value in fields[:8])
    return (user + nice + system + irq + softirq + steal) / _CLOCK_TICKS


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True, slots=True)
class Scrape:
    """One reading of ``/metrics``: every sample by its name with labels, e.g. ``x_bucket{le="0.5"}``."""

    at: float
    """``time.monotonic()`` when it was read."""
    values: dict[str, float]

    def get(self, name: str) -> float:
        return self.values.get(name, 0.0)

    def buckets(self, histogram: str) -> list[tuple[float, float]]:
        """``(upper bound, cumulative count)`` of a histogram, in order, the last bound infinite."""
        prefix = f'{histogram}_bucket{{le="'
        found = [
            (math.inf if key[len(prefix) : -2] == "+Inf" else float(key[len(prefix) : -2]), value)
            for key, value in self.values.items()
            if key.startswith(prefix)
        ]
        return sorted(found)


def parse_metrics(text: str, at: float) -> Scrape:
    """Prometheus' text format, samples only (comments and types are skipped)."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return Scrape(at, values)


class TargetStartError(RuntimeError):
    """The server under test did not start; the message ends with the last line it printed, which says
    why (a database it cannot open, say)."""


class ServerUnderTest:
    """``plyarena serve`` on a free local port, in its own process, logging to ``workdir/server.log``."""

    def __init__(
        self, db_url: str, workdir: Path, instance_id: str = "bench-server", extra_args: tuple[str, ...] = ()
    ) -> None:
        self.db_url = db_url
        self.workdir = workdir
        self.instance_id = instance_id
        self.extra_args = extra_args
        """More options of ``plyarena serve`` (``--mqtt URL``, ``--lease S``)."""
        self.port = free_port()
        self.log_path = workdir / ("server.log" if instance_id == "bench-server" else f"{instance_id}.log")
        self._process: asyncio.subprocess.Process | None = None
        self._log: IO[bytes] | None = None

    @property
    def http_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{HOST}:{self.port}/ws"

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError("the server is not running")
        return self._process.pid

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def start(self) -> None:
        """Start the server and wait until ``/healthz`` says it is up."""
        self._log = self.log_path.open("wb")
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "plyarena", "serve", "--host", HOST, "--port", str(self.port),
            "--db", self.db_url, "--instance-id", self.instance_id, *self.extra_args,
            cwd=self.workdir, stdout=self._log, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # as a daemon: its own session, not the terminal's (nor its Ctrl-C)
        )  # fmt: skip
        loop = asyncio.get_running_loop()
        deadline = loop.time() + START_TIMEOUT_S
        while loop.time() < deadline:
            if self._process.returncode is not None:
                break
            with contextlib.suppress(OSError):
                if (await asyncio.to_thread(_get, f"{self.http_url}/healthz"))[0] == 200:
                    return
            await asyncio.sleep(0.1)
        await self.stop()
        raise TargetStartError(f"the server under test did not start: {self.log_tail(1) or '(no output)'}")

    async def metrics(self) -> Scrape:
        status, body = await asyncio.to_thread(_get, f"{self.http_url}/metrics")
        if status != 200:
            raise RuntimeError(f"/metrics answered {status}")
        return parse_metrics(body.decode(), asyncio.get_running_loop().time())

    async def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a crash or a power cut."""
        if self._process is not None and self._process.returncode is None:
            self._process.kill()
            await self._process.wait()

    async def stop(self) -> None:
        """SIGTERM (a clean shutdown), SIGKILL if it takes too long."""
        process = self._process
        if process is not None and process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
            except TimeoutError:
                process.kill()
                await process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


class EchoServer:
    """The echo server of :mod:`bench.loadgen.echo` in its own process; use ``async with``."""

    def __init__(self) -> None:
        self.port = 0
        self._process: BaseProcess | None = None

    @property
    def ws_url(self) -> str:
        return f"ws://{ECHO_HOST}:{self.port}/"

    @property
    def pid(self) -> int:
        if self._process is None or self._process.pid is None:
            raise RuntimeError("the echo server is not running")
        return self._process.pid

    async def __aenter__(self) -> Self:
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe(duplex=False)
        self._process = context.Process(target=serve_echo, args=(theirs,), name="plyarena-echo", daemon=True)
        self._process.start()
        theirs.close()
        try:
            if not await asyncio.to_thread(ours.poll, START_TIMEOUT_S):
                raise RuntimeError(f"the echo server did not listen within {START_TIMEOUT_S:g} s")
            try:
                self.port = ours.recv()
            except EOFError:
                raise RuntimeError("the echo server exited before it listened") from None
        except BaseException:
            await self.__aexit__()
            raise
        finally:
            ours.close()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        process = self._process
        if process is not None and process.is_alive():
            process.terminate()
            await asyncio.to_thread(process.join, STOP_TIMEOUT_S)
            if process.is_alive():
                process.kill()
                await asyncio.to_thread(process.join)


_local_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""Straight to the local server, whatever proxy the environment names."""


def _get(url: str) -> tuple[int, bytes]:
    try:
        with _local_opener.open(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
