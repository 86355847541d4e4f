"""The parent's handle on the load-generator processes: start them, command them all at once, stop them."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Self

from bench.loadgen.commands import Command, Failed, Quit, Reply
from bench.loadgen.worker import worker_main

QUIT_TIMEOUT_S = 30.0


class LoadGeneratorError(RuntimeError):
    """A load-generator process failed a command (the message carries its traceback) or died."""


def split(total: int, parts: int) -> list[int]:
    """``total`` shared as evenly as possible among ``parts``: ``split(5, 2) == [3, 2]``."""
    return [total // parts + (1 if index < total % parts else 0) for index in range(parts)]


class LoadGenerators:
    """``count`` worker processes (see :mod:`bench.loadgen.worker`), each ``niceness`` steps nicer than the
    server; use ``async with``."""

    def __init__(self, count: int, niceness: int = 0) -> None:
        if count < 1:
            raise ValueError(f"need at least one load-generator process, not {count}")
        self.count = count
        self.niceness = niceness
        self._processes: list[BaseProcess] = []
        self._pipes: list[Connection] = []

    @property
    def pids(self) -> list[int]:
        return [process.pid for process in self._processes if process.pid is not None]

    async def __aenter__(self) -> Self:
        # spawn: a clean interpreter, not a fork of this process's event loop and threads. Not daemonic:
        # in bots mode each worker starts a search pool of its own.
        context = multiprocessing.get_context("spawn")
        for index in range(self.count):
            ours, theirs = context.Pipe()
            process = context.Process(
                target=worker_main,
                args=(index, theirs, self.niceness),
                name=f"plyarena-loadgen-{index}",
                daemon=False,
            )
            process.start()
            theirs.close()
            self._processes.append(process)
            self._pipes.append(ours)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def ask(self, commands: Sequence[Command]) -> list[Reply]:
        """Send each process its command (one each, in order) and return their answers."""
        if len(commands) != self.count:
            raise ValueError(f"{len(commands)} commands for {self.count} load-generator processes")
        for pipe, command in zip(self._pipes, commands, strict=True):
            pipe.send(command)
        replies = await asyncio.gather(*(asyncio.to_thread(_receive, pipe) for pipe in self._pipes))
        failures = [reply for reply in replies if isinstance(reply, Failed)]
        if failures:
            failure = failures[0]
            raise LoadGeneratorError(f"{failure.command} failed in a load generator:\n{failure.error}")
        return replies

    async def ask_all(self, command_for: Callable[[int], Command]) -> list[Reply]:
        """Send process ``i`` the command ``command_for(i)``; their answers."""
        return await self.ask([command_for(index) for index in range(self.count)])

    async def close(self) -> None:
        """Ask every process to quit; end those that do not within :data:`QUIT_TIMEOUT_S`."""
        for pipe in self._pipes:
            with contextlib.suppress(OSError):
                pipe.send(Quit())
        for process in self._processes:
            await asyncio.to_thread(process.join, QUIT_TIMEOUT_S)
            if process.is_alive():
                process.terminate()
                await asyncio.to_thread(process.join, 5.0)
            if process.is_alive():
                process.kill()
                await asyncio.to_thread(process.join)
        for pipe in self._pipes:
            pipe.close()
        self._processes, self._pipes = [], []


def _receive(pipe: Connection) -> Reply:
    try:
        return pipe.recv()
    except EOFError:
        raise LoadGeneratorError("a load-generator process died") from None
