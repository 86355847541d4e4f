"""``plyarena bench moves``: the server's CPU per move without the network, and what the GC takes of it.

``plyarena bench server`` measures the whole server over real sockets, on a
machine it shares with its load generators, so its figures move with the
machine. This bench runs the same move path in one process, without sockets:
each player is a connection whose outgoing frames are only kept, requests go
through :meth:`Server._receive` as if just read from a socket, and every move is
committed to a real SQLite store (group commit included: every match moves at
once, as under load). It reports the process's CPU per durable move, and the
time and longest pause of the garbage collector, for each set of GC thresholds
asked for. Each measurement runs in a fresh process (the server freezes what
exists at start into the GC's permanent generation), and the sets take turns,
so that the machine's drift spreads over all of them.
"""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from types import SimpleNamespace

import msgspec

from bench.machine import machine_description
from server.app import Server
from server.bus import InProcessBus
from server.config import ServerConfig
from server.connection import Connection
from server.eventloop import loop_factory
from server.limits import GC_THRESHOLDS, tune_garbage_collector
from server.storage import Store

Thresholds = tuple[int, int, int]
PYTHON_DEFAULT_THRESHOLDS: Thresholds = (700, 10, 10)


@dataclass(frozen=True, slots=True)
class MovesPlan:
    matches: int = 1_000
    rounds: int = 20
    """Every match moves once a round (until it ends), all at once."""
    game: str = "connect4"
    thresholds: tuple[Thresholds, ...] = (PYTHON_DEFAULT_THRESHOLDS, GC_THRESHOLDS)
    repeats: int = 3

    @classmethod
    def quick(cls) -> MovesPlan:
        return cls(matches=20, rounds=4, repeats=1)


@dataclass(frozen=True, slots=True)
class MovesRun:
    thresholds: Thresholds
    moves: int
    cpu_s: float
    gc_s: float
    gc_max_pause_s: float
    collections: tuple[int, int, int]
    gc_s_by_generation: tuple[float, float, float]
    """The collector's time by generation: young, middle, full."""

    @property
    def cpu_us_per_move(self) -> float:
        return 1e6 * self.cpu_s / self.moves

    @property
    def gc_us_per_move(self) -> float:
        return 1e6 * self.gc_s / self.moves

    @property
    def gc_us_per_move_by_generation(self) -> tuple[float, ...]:
        return tuple(1e6 * seconds / self.moves for seconds in self.gc_s_by_generation)


class _KeptFrames(Connection):
    """A player's connection without a socket: what the server sends it is kept, not written."""

    __slots__ = ("frames",)

    def __init__(self) -> None:
        settings = SimpleNamespace(
            max_size=None, logger=None, rate_per_s=1e9, rate_burst=10**9, max_buffer=1 << 30
        )
        super().__init__(settings)  # type: ignore[arg-type]
        self.frames: list[bytes] = []

    def push(self, data: bytes) -> None:
        self.frames.append(data)

    def last(self) -> dict[str, object]:
        return msgspec.json.decode(self.frames[-1])


@dataclass(slots=True)
class _GcTimer:
    """Every collection's duration, from ``gc.callbacks``."""

    pauses: list[float] = field(default_factory=list)
    counts: list[int] = field(default_factory=lambda: [0, 0, 0])
    seconds: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    _started: float = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            pause = time.perf_counter() - self._started
            self.pauses.append(pause)
            self.counts[info["generation"]] += 1
            self.seconds[info["generation"]] += pause


async def _play(plan: MovesPlan, thresholds: Thresholds, directory: Path) -> MovesRun:
    store = await Store.open(f"sqlite+aiosqlite:///{directory}/moves.sqlite3")
    bus = InProcessBus()
    await bus.start()
    server = Server(ServerConfig(port=0), store, bus, rng=random.Random(1))
    rng = random.Random(2)

    async def say(connection: _KeptFrames, request: dict[str, object]) -> None:
        await server._receive(connection, msgspec.json.encode(request).decode())

    pairs: list[tuple[str, _KeptFrames, _KeptFrames]] = []
    for index in range(plan.matches):
        host, guest = _KeptFrames(), _KeptFrames()
        await say(host, {"type": "hello", "name": f"host {index}"})
        await say(guest, {"type": "hello", "name": f"guest {index}"})
        await say(host, {"type": "match.create", "game": plan.game, "time_control": "5+3", "seat": 0})
        match_id = str(host.last()["match_id"])
        await say(guest, {"type": "match.join", "match_id": match_id})
        pairs.append((match_id, host, guest))

    async def move(match_id: str, host: _KeptFrames, guest: _KeptFrames) -> int:
        match = server.host.matches[match_id].match  # the bench reads the state rather than parse frames
        if match.is_over:
            return 0
        position = match.position
        legal = [position.format_move(move) for move in position.legal_moves()]
        mover = host if position.turn == 0 else guest
        await say(mover, {"type": "move", "match_id": match_id, "ply": match.ply, "move": rng.choice(legal)})
        return 1

    tune_garbage_collector(thresholds)
    timer = _GcTimer()
    gc.callbacks.append(timer)
    moves, started = 0, time.process_time()
    for _ in range(plan.rounds):
        moves += sum(await asyncio.gather(*(move(*pair) for pair in pairs)))
    cpu_s = time.process_time() - started
    gc.callbacks.remove(timer)
    durable = store.stats.moves
    await server.host.close()
    await store.close()
    await bus.close()
    if durable != moves:
        raise RuntimeError(f"{moves} moves played but {durable} committed")
    return MovesRun(
        thresholds,
        moves,
        cpu_s,
        sum(timer.pauses),
        max(timer.pauses, default=0.0),
        (timer.counts[0], timer.counts[1], timer.counts[2]),
        (timer.seconds[0], timer.seconds[1], timer.seconds[2]),
    )


def _measure(plan: MovesPlan, thresholds: Thresholds) -> MovesRun:
    """One measurement, in the fresh process it runs in."""
    with (
        tempfile.TemporaryDirectory(prefix="plyarena-bench-moves-") as scratch,
        asyncio.Runner(loop_factory=loop_factory()) as runner,
    ):
        return runner.run(_play(plan, thresholds, Path(scratch)))


def run_moves_benchmark(plan: MovesPlan, progress: Callable[[], None] = lambda: None) -> list[MovesRun]:
    """Every threshold set ``plan.repeats`` times, in turns, each run in a process of its own."""
    runs = []
    context = get_context("spawn")
    for _ in range(plan.repeats):
        for thresholds in plan.thresholds:
            with ProcessPoolExecutor(max_workers=1, mp_context=context) as fresh:
                runs.append(fresh.submit(_measure, plan, thresholds).result())
            progress()
    return runs


@dataclass(frozen=True, slots=True)
class MovesSummary:
    """One threshold set's medians over its runs."""

    thresholds: Thresholds
    cpu_us: float
    gc_us: float
    gc_us_by_generation: tuple[float, ...]
    """Young, middle, full."""
    longest_pause_ms: float
    moves: int


def summarize(runs: Sequence[MovesRun]) -> list[MovesSummary]:
    """Per threshold set, in the order they first ran: medians per move, and the longest pause of any run."""
    rows = []
    for thresholds in dict.fromkeys(run.thresholds for run in runs):
        mine = [run for run in runs if run.thresholds == thresholds]
        rows.append(
            MovesSummary(
                thresholds,
                statistics.median(run.cpu_us_per_move for run in mine),
                statistics.median(run.gc_us_per_move for run in mine),
                tuple(
                    statistics.median(run.gc_us_per_move_by_generation[generation] for run in mine)
                    for generation in range(3)
                ),
                1000 * max(run.gc_max_pause_s for run in mine),
                mine[0].moves,
            )
        )
    return rows


def render_markdown(plan: MovesPlan, runs: Sequence[MovesRun], command: str) -> str:
    machine = machine_description()
    lines = [
        "## Moves: the server's CPU per move without the network",
        "",
        f"`{command}` on {machine}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. One process "
        f"runs the server's request path (`Server._receive` to a committed move and its events) for "
        f"{plan.matches:,} {plan.game} matches that all move at once, {plan.rounds} rounds, into SQLite; "
        "the connections keep their frames instead of writing them, so no socket or websockets work is "
        f"counted. Medians of {plan.repeats} runs per row, each in a fresh process, the rows taking turns.",
        "",
        "| GC thresholds | moves per run | CPU per move, us | GC per move, us "
        "| of which young / middle / full, us | longest GC pause, ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in summarize(runs):
        name = ", ".join(f"{value:,}" for value in row.thresholds)
        if row.thresholds == GC_THRESHOLDS:
            name += " (the server's)"
        elif row.thresholds == PYTHON_DEFAULT_THRESHOLDS:
            name += " (Python's default)"
        split = " / ".join(f"{us:.1f}" for us in row.gc_us_by_generation)
        lines.append(
            f"| {name} | {row.moves:,} | {row.cpu_us:.1f} | {row.gc_us:.1f} | {split} "
            f"| {row.longest_pause_ms:.1f} |"
        )
    return "\n".join(lines) + "\n"
