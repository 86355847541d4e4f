"""Connect Four's level 8 move by move in whole games (part of ``plyarena bench engine``).

Level 8 plays from the empty board, as first and as second player, against a random mover and a
noisy-perfect one (level 8 for its own side, with a random move one time in four), as a bot would
(:func:`bots.levels.choose_move`); every one of its moves is timed, wall-clock, as its time budget is,
and counted by where it came from (the book, the exact solver, or a search). The targets: at most 1 s a
move, a median under 50 ms. That each move has the best exact score is what tests/test_perfect_level.py
checks.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bench.tables import TextTable
from bots.levels import LEVEL_COUNT, choose_move, level
from games.connect4 import ConnectFour

MAX_TARGET_MS = 1000.0
MEDIAN_TARGET_MS = 50.0
NOISE = 0.25
"""How often the noisy-perfect opponent plays a random move."""

Opponent = Callable[[ConnectFour, random.Random], int]


class Tracker(Protocol):
    def task(self, description: str, total: int) -> Callable[[], None]: ...


def random_mover(position: ConnectFour, rng: random.Random) -> int:
    return rng.choice(position.legal_moves())


def noisy_perfect(position: ConnectFour, rng: random.Random) -> int:
    if rng.random() < NOISE:
        return rng.choice(position.legal_moves())
    return choose_move(position, level("connect4", LEVEL_COUNT), rng)[0]


OPPONENTS: dict[str, Opponent] = {"random": random_mover, "noisy-perfect": noisy_perfect}


@dataclass(frozen=True, slots=True)
class PerfectRow:
    seat: int
    opponent: str
    games: int
    won_drawn_lost: tuple[int, int, int]
    sources: dict[str, int]
    """Level 8's moves by where they came from."""
    median_ms: float
    max_ms: float


def measure_perfect_level(tracker: Tracker, games_per_row: int, seed: int = 8) -> list[PerfectRow]:
    """Whole games of level 8 as each player against each opponent; its moves timed."""
    top = level("connect4", LEVEL_COUNT)
    rows = []
    for seat in (0, 1):
        for name, opponent in OPPONENTS.items():
            side = "first" if seat == 0 else "second"
            tick = tracker.task(f"Connect Four level 8, {side} player against {name}", games_per_row)
            rng = random.Random(seed)
            times: list[float] = []
            sources: Counter[str] = Counter()
            outcomes = [0, 0, 0]
            for _ in range(games_per_row):
                position = ConnectFour()
                while position.outcome() is None:
                    if position.turn == seat:
                        started = time.perf_counter()
                        move, result = choose_move(position, top, rng)
                        times.append((time.perf_counter() - started) * 1000)
                        sources[result.source] += 1
                    else:
                        move = opponent(position, rng)
                    position = position.play(move)
                winner = position.outcome().winner  # type: ignore[union-attr]  # the loop ends on an outcome
                outcomes[0 if winner == seat else 1 if winner is None else 2] += 1
                tick()
            won, drawn, lost = outcomes
            rows.append(PerfectRow(seat, name, games_per_row, (won, drawn, lost), dict(sources),
                                   statistics.median(times), max(times)))  # fmt: skip
    return rows


def perfect_level_table(rows: list[PerfectRow]) -> TextTable:
    return TextTable(
        "Connect Four level 8: perfect play, move by move",
        (
            "plays",
            "against",
            "games",
            "won / drawn / lost",
            "book",
            "solved",
            "searched",
            "median ms",
            "max ms",
            "target",
        ),
        [_cells(row) for row in rows],
        "Level 8 (`bots.levels.choose_move`, compiled solver) in whole games from the empty board; "
        f"noisy-perfect is level 8 for its own side with a random move {NOISE:.0%} of the time. Every "
        "level-8 move timed (wall-clock) and counted by its source: the opening book, the exact solver, or "
        "a search (the value search, then the 7-ply search, where the exact score is out of time). Targets: "
        "at most "
        f"{MAX_TARGET_MS / 1000:g} s a move, a median under {MEDIAN_TARGET_MS:g} ms.",
    )


def _cells(row: PerfectRow) -> tuple[str, ...]:
    met = row.max_ms <= MAX_TARGET_MS and row.median_ms < MEDIAN_TARGET_MS
    won, drawn, lost = row.won_drawn_lost
    counts = [str(row.sources.get(source, 0)) for source in ("book", "solved", "searched")]
    return ("first" if row.seat == 0 else "second", row.opponent, str(row.games), f"{won} / {drawn} / {lost}",
            *counts, f"{row.median_ms:.1f}", f"{row.max_ms:.1f}", "met" if met else "missed")  # fmt: skip
