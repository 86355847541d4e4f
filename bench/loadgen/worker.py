"""One load-generator process: its own event loop, thousands of connections, commands from the parent.

The parent (:class:`bench.loadgen.driver.LoadGenerators`) sends one command at
a time through a pipe and waits for its answer; between commands the
connections stay open. Scripted players park their moves while no window is
running, so matches are set up first and play only when every process starts
the same window at the same moment.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import signal
import time
import traceback
from collections.abc import Awaitable
from multiprocessing.connection import Connection
from typing import Any

from websockets.asyncio.client import connect

from bench.loadgen.bot_pairs import BotPair
from bench.loadgen.commands import (
    CloseAll,
    Command,
    Connect,
    Done,
    Echo,
    Failed,
    Opened,
    Play,
    Played,
    Quit,
    Reply,
    StartBots,
    Started,
    StartMatches,
    Window,
)
from bench.loadgen.dephasing import opening_plies
from bench.loadgen.direct import DirectClient
from bench.loadgen.echo import EchoPinger
from bench.loadgen.limits import lower_priority, raise_open_files_limit
from bench.loadgen.recording import Pacing, Recorder
from bench.loadgen.scripted import ScriptedPair
from bots.client import BotSpec
from bots.pool import SearchPool
from server import eventloop

log = logging.getLogger(__name__)

OPENING_AT_ONCE = 64
"""Handshakes in flight per process: enough to open thousands in seconds, few enough for the listen queue."""
STARTING_AT_ONCE = 256
"""Matches being opened at once per process."""
START_TIMEOUT_S = 120.0
IN_FLIGHT_GRACE_S = 1.0
"""After the last window, how long answers to moves sent before its end may still arrive."""
SEARCH_WORKERS = 1
"""Search processes per load generator in bots mode: level 1 thinks in well under a millisecond."""


def worker_main(index: int, control: Connection, niceness: int = 0) -> None:
    """The body of a load-generator process: obey ``control`` until :class:`Quit`, ``niceness`` steps
    nicer than the server it measures."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's; it tells us to quit
    os.setsid()  # a session of its own, like a client on another machine: the scheduler weighs it alone
    lower_priority(niceness)
    raise_open_files_limit()
    logging.basicConfig(level=logging.WARNING, format=f"loadgen {index}: %(levelname)s %(name)s: %(message)s")
    eventloop.run(Worker(index, control).serve())


class Worker:
    def __init__(self, index: int, control: Connection) -> None:
        self.index = index
        self.control = control
        self.rng = random.Random(index)
        self.pacing = Pacing()
        self.recorder = Recorder()
        self.connections: list[DirectClient] = []
        self.pairs: list[ScriptedPair] = []
        self.pingers: list[EchoPinger] = []
        self.bot_pairs: list[BotPair] = []
        self.pool: SearchPool | None = None

    async def serve(self) -> None:
        probe = asyncio.create_task(self.recorder.probe_loop_lag())
        try:
            while True:
                command: Command = await asyncio.to_thread(self.control.recv)
                if isinstance(command, Quit):
                    break
                try:
                    reply = await self.handle(command)
                except Exception:
                    reply = Failed(type(command).__name__, traceback.format_exc())
                self.control.send(reply)
        finally:
            probe.cancel()
            await self.close_all()

    async def handle(self, command: Command) -> Reply:
        match command:
            case Connect():
                return await self.connect(command)
            case Echo():
                return await self.echo(command)
            case StartMatches():
                return await self.start_matches(command)
            case StartBots():
                return await self.start_bots(command)
            case Play():
                return await self.play(command.windows)
            case CloseAll():
                await self.close_all()
                return Done()
        raise TypeError(f"unknown command {command!r}")

    async def connect(self, command: Connect) -> Opened:
        started = time.monotonic()
        gate = asyncio.Semaphore(OPENING_AT_ONCE)

        async def open_one(number: int) -> DirectClient:
            async with gate:
                websocket = await connect(
                    command.url,
                    compression=None,
                    ping_interval=None,
                    open_timeout=60,
                    proxy=None,
                    create_connection=DirectClient,
                )
                assert isinstance(websocket, DirectClient)
                if command.hello:
                    name = f"{command.name_prefix}-{self.index}-{number}"
                    await websocket.send(f'{{"type":"hello","name":"{name}"}}')
                    welcome = await websocket.recv()
                    if '"type":"welcome"' not in welcome:
                        await websocket.close()
                        raise ConnectionError(f"hello refused: {welcome[:200]}")
                return websocket

        base = len(self.connections)
        results = await asyncio.gather(
            *(open_one(base + number) for number in range(command.count)), return_exceptions=True
        )
        return Opened(*self._keep(results), seconds=time.monotonic() - started)

    def _keep(self, results: list[Any]) -> tuple[int, int, str | None]:
        opened = [result for result in results if isinstance(result, DirectClient)]
        errors = [result for result in results if isinstance(result, BaseException)]
        self.connections.extend(opened)
        first_error = f"{type(errors[0]).__name__}: {errors[0]}" if errors else None
        return len(opened), len(errors), first_error

    async def echo(self, command: Echo) -> Played:
        self.recorder.reset((command.window,))
        self.pingers = [
            EchoPinger(websocket, command.payload, self.pacing, self.recorder)
            for websocket in self.connections[: command.active]
        ]
        try:
            return await self.play((command.window,))
        finally:
            for pinger in self.pingers:
                pinger.stop()
            self.pingers = []
            self.pacing = Pacing()

    async def start_matches(self, command: StartMatches) -> Started:
        if 2 * command.pairs > len(self.connections):
            raise ValueError(f"{command.pairs} matches need {2 * command.pairs} connections; "
                             f"this process holds {len(self.connections)}")  # fmt: skip
        started = time.monotonic()
        rng = random.Random(command.seed)
        openings = opening_plies(command.game, command.pairs, rng)
        self.pairs = [
            ScriptedPair(
                self.connections[2 * number],
                self.connections[2 * number + 1],
                game=command.game,
                time_control=command.time_control,
                pacing=self.pacing,
                recorder=self.recorder,
                rng=rng,
                opening_plies=openings[number],
            )
            for number in range(command.pairs)
        ]
        results = await self._bounded([pair.start() for pair in self.pairs], STARTING_AT_ONCE)
        errors = [result for result in results if isinstance(result, BaseException)]
        first_error = f"{type(errors[0]).__name__}: {errors[0]}" if errors else None
        return Started(len(results) - len(errors), len(errors), first_error, time.monotonic() - started)

    async def start_bots(self, command: StartBots) -> Opened:
        started = time.monotonic()
        if self.pool is None:
            self.pool = SearchPool(SEARCH_WORKERS)
            await self.pool.warm_up()
        spec = BotSpec.of(command.game, command.level)
        pairs = [
            BotPair(command.url, spec, self.pool, self.recorder, command.time_control, command.seed + 2 * n)
            for n in range(command.pairs)
        ]
        self.bot_pairs.extend(pairs)
        results = await self._bounded([pair.connect() for pair in pairs], OPENING_AT_ONCE // 2)
        errors = [result for result in results if isinstance(result, BaseException)]
        first_error = f"{type(errors[0]).__name__}: {errors[0]}" if errors else None
        seconds = time.monotonic() - started
        return Opened(2 * (len(pairs) - len(errors)), 2 * len(errors), first_error, seconds)

    @staticmethod
    async def _bounded(jobs: list[Awaitable[None]], at_once: int) -> list[Any]:
        gate = asyncio.Semaphore(at_once)

        async def run(job: Awaitable[None]) -> None:
            async with gate, asyncio.timeout(START_TIMEOUT_S):
                await job

        return await asyncio.gather(*(run(job) for job in jobs), return_exceptions=True)

    async def play(self, windows: tuple[Window, ...]) -> Played:
        """Move at each window's pace from its start, stop at the last one's end; the samples of each."""
        loop = asyncio.get_running_loop()
        self.recorder.reset(windows)
        bot_games: list[asyncio.Task[None]] = []
        try:
            for window in windows:
                await asyncio.sleep(max(0.0, window.start - loop.time()))
                self.pacing.set_interval(window.interval_s, self.rng)
                bot_games += [asyncio.create_task(pair.play_until(window.end)) for pair in self.bot_pairs]
            await asyncio.sleep(max(0.0, windows[-1].end - loop.time()))
            self.pacing.set_interval(None, self.rng)
            await asyncio.sleep(IN_FLIGHT_GRACE_S)
        finally:
            for game in bot_games:
                game.cancel()
            await asyncio.gather(*bot_games, return_exceptions=True)
        return Played(tuple(self.recorder.samples))

    async def close_all(self) -> None:
        """Drop every connection at once (no closing handshakes: the server sees them go as in a crash)."""
        for pair in self.pairs:
            pair.stop()
        for pinger in self.pingers:
            pinger.stop()
        await asyncio.gather(*(pair.close() for pair in self.bot_pairs), return_exceptions=True)
        for websocket in self.connections:
            if websocket.transport is not None:
                websocket.transport.abort()
        self.pairs, self.pingers, self.bot_pairs, self.connections = [], [], [], []
        self.pacing = Pacing()
        if self.pool is not None:
            pool, self.pool = self.pool, None
            with contextlib.suppress(Exception):
                await asyncio.get_running_loop().run_in_executor(None, pool.close)
