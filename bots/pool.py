"""One process pool that thinks for every bot of a fleet.

Searching is CPU-bound and would block an event loop for seconds, so each
search is one task in a :class:`concurrent.futures.ProcessPoolExecutor`. What
crosses the process boundary is small and plain (:class:`ThinkRequest`: the
game's name, the moves so far in notation, the level number, the time budget);
the worker rebuilds the position with :mod:`games` and answers with a
:class:`ThinkResult` in notation.

A worker that dies (killed, out of memory) breaks the whole executor: every
search in flight fails with ``BrokenProcessPool``. :class:`SearchPool` then
replaces the executor once and retries each of those searches on the new one,
so the bots still move; only the time already spent is lost, and it is taken
off the retried search's budget.

Workers run at a lower scheduling priority (``nice``), so on a machine shared
with a server the event loops get the CPU first and searches take what is
left. A worker ends with the process that owns the pool: killed (SIGKILL), that
one cannot tell them, and the executor's queues never close under them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import random
import select
import signal
import threading
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from bots.levels import choose_move, level
from bots.result import Source
from bots.timing import MIN_BUDGET_MS
from games import get_game

log = logging.getLogger(__name__)

DEFAULT_NICE = 5
"""How much lower than the fleet's process the workers run (see the module docstring)."""

MAX_ATTEMPTS = 3
"""Executors a search may try before the pool gives up: a search that keeps killing workers is a bug."""

OWNER_POLL_S = 1.0
"""Where the kernel cannot say when a process ends (no ``pidfd_open``): how often a worker looks."""


@dataclass(frozen=True, slots=True)
class ThinkRequest:
    """One search to run in a worker: everything it needs, in plain values.

    ``budget_ms`` is the time the search may take, counted from ``submitted_at``
    (wall-clock seconds, :func:`time.time`), so time spent queueing for a free
    worker is taken off the search, not off the bot's clock. ``None`` means the
    level's own budget. ``seed`` makes a noisy level's choice reproducible.
    """

    game: str
    moves: tuple[str, ...]
    level: int
    budget_ms: int | None = None
    seed: int | None = None
    submitted_at: float | None = None


@dataclass(frozen=True, slots=True)
class ThinkResult:
    """What a search chose and why, in notation, ready to go on the wire.

    As in :class:`bots.result.SearchResult`, ``source`` says where the move came from
    and ``depth`` or ``nodes`` is ``None`` where that source has none.
    """

    move: str
    score: int | None
    depth: int | None
    nodes: int | None
    pv: tuple[str, ...]
    think_ms: int
    """Time the search itself took in the worker."""
    source: Source = "searched"


class SearchError(RuntimeError):
    """A search failed in a worker; the message carries the worker's traceback.

    Worker exceptions are turned into this plain one because an exception that
    cannot be unpickled in the parent (any with a custom ``__init__``) would
    otherwise break the whole executor, and be mistaken for a dead worker.
    """


def think(request: ThinkRequest) -> ThinkResult:
    """Run one search (in a worker process): the move ``request.level`` plays after ``request.moves``."""
    try:
        return _think(request)
    except Exception as error:
        raise SearchError(
            f"search of {request.game} at level {request.level} after moves "
            f"{' '.join(request.moves) or '(none)'} failed: {error!r}\n{traceback.format_exc()}"
        ) from None


def _think(request: ThinkRequest) -> ThinkResult:
    game = get_game(request.game)
    position = game.replay(request.moves)
    budget = request.budget_ms
    if budget is not None and request.submitted_at is not None:
        waited_ms = max(0.0, (time.time() - request.submitted_at) * 1000)
        budget = max(MIN_BUDGET_MS, budget - waited_ms)
    chosen = level(request.game, request.level)
    _, result = choose_move(position, chosen, random.Random(request.seed), budget)  # result.move is the move
    found = result.as_dict(position)
    return ThinkResult(
        move=found["move"],
        score=result.score,
        depth=result.depth,
        nodes=result.nodes,
        pv=tuple(found["pv"]),
        think_ms=round(result.time_ms),
        source=result.source,
    )


def _start_worker(nice: int, owner: int) -> None:
    """Worker initializer: leave Ctrl-C to the parent, yield the CPU to event loops, and end with the
    process ``owner`` that owns the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice:
        os.nice(nice)
    threading.Thread(target=_exit_with, args=(owner,), name="plyarena-pool-owner", daemon=True).start()


def _exit_with(owner: int) -> None:
    """Wait for process ``owner`` to end, then end this one. (Its parent is the forkserver, which lives
    as long as its children do, so the owner is watched by its pid.)"""
    try:
        ended = os.pidfd_open(owner)  # Linux: readable once the process has ended
    except (AttributeError, OSError):  # elsewhere, or too old a kernel: look once a second
        with contextlib.suppress(OSError):
            while True:
                os.kill(owner, 0)
                time.sleep(OWNER_POLL_S)
    else:
        select.select([ended], [], [])
    os._exit(0)


def _worker_pid() -> int:
    """A no-op task that makes a worker start (and import the search) now."""
    return os.getpid()


class PoolFailedError(RuntimeError):
    """A search broke :data:`MAX_ATTEMPTS` executors in a row."""


class SearchPool:
    """The process pool of a fleet, with an asyncio face; see the module docstring.

    Use as ``async with SearchPool(workers) as pool: result = await pool.think(request)``.
    """

    def __init__(self, workers: int | None = None, *, nice: int = DEFAULT_NICE) -> None:
        if workers is not None and workers < 1:
            raise ValueError(f"a pool needs at least 1 worker, got {workers}")
        self.workers = workers or os.cpu_count() or 1
        self.nice = nice
        self.replacements = 0
        """How many times a broken executor was replaced, for logs, metrics and tests."""
        # forkserver: workers start from a clean single-threaded process, not a fork of an
        # event loop with threads, and a replacement executor starts quickly.
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload([__name__])
        self._executor: ProcessPoolExecutor | None = self._new_executor()

    def _new_executor(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            self.workers,
            mp_context=self._context,
            initializer=_start_worker,
            initargs=(self.nice, os.getpid()),
        )

    async def think(self, request: ThinkRequest) -> ThinkResult:
        """Run ``request`` in a worker; survives workers dying (see the module docstring)."""
        loop = asyncio.get_running_loop()
        for attempt in range(1, MAX_ATTEMPTS + 1):
            executor = self._executor
            if executor is None:
                raise RuntimeError("the search pool is closed")
            try:
                return await loop.run_in_executor(executor, think, request)
            except BrokenProcessPool:
                log.warning(
                    "a search worker died during %s after %d moves (attempt %d of %d); replacing the pool",
                    request.game, len(request.moves), attempt, MAX_ATTEMPTS,
                )  # fmt: skip
                self._replace(executor)
        raise PoolFailedError(
            f"searching {request.game} after {len(request.moves)} moves at level {request.level} "
            f"broke {MAX_ATTEMPTS} worker pools in a row"
        )

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        """Swap in a new executor, once however many searches saw ``broken`` fail."""
        if self._executor is not broken:
            return
        self._executor = self._new_executor()
        self.replacements += 1
        broken.shutdown(wait=False, cancel_futures=True)

    async def warm_up(self) -> None:
        """Start every worker now rather than on the first moves (imports take a moment)."""
        loop = asyncio.get_running_loop()
        executor = self._executor
        if executor is not None:
            await asyncio.gather(*(loop.run_in_executor(executor, _worker_pid) for _ in range(self.workers)))

    def close(self) -> None:
        """Stop the workers; searches in flight are abandoned."""
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)

    async def __aenter__(self) -> SearchPool:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)
