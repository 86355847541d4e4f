"""Othello's exact endgame on positions from games the bots play (part of ``plyarena bench engine``).

Each game opens with a few random plies, so that no two are alike, then level 7 plays both sides (as two
bots would, through :func:`bots.levels.choose_move`) until the number of empty squares measured; there the
compiled solve runs as level 8 runs it (:func:`bots.othello_endgame.endgame_move`: every best move, one of
them picked). The target: the top level's 14 empty squares within about a second.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bench.tables import TextTable
from bots.levels import LEVEL_COUNT, choose_move, level
from bots.othello_endgame import empties, endgame_move
from games.othello import Othello

OPENING_PLIES = 6
"""Random plies at the start of each game."""
PLAYING_LEVEL = LEVEL_COUNT - 1
"""The level that plays both sides up to the position measured: a few milliseconds a move."""
TARGET_MS = 1000.0


class Tracker(Protocol):
    def task(self, description: str, total: int) -> Callable[[], None]: ...


@dataclass(frozen=True, slots=True)
class EndgameRow:
    empties: int
    positions: int
    median_ms: float
    max_ms: float
    median_nodes: int
    max_nodes: int
    wins_draws_losses: tuple[int, int, int]
    """The solved outcomes for the side to move."""


def game_positions(count: int, empty_squares: int, seed: int = 40) -> list[Othello]:
    """``count`` positions with ``empty_squares`` empty squares and a move to play, each from its own game
    (a game that ends or skips past that number is replaced by the next one)."""
    rng = random.Random(seed)
    player = level("othello", PLAYING_LEVEL)
    found: list[Othello] = []
    while len(found) < count:
        position = Othello()
        while empties(position) > empty_squares and position.legal_moves():
            if position.ply < OPENING_PLIES:
                move = rng.choice(position.legal_moves())
            else:
                move, _ = choose_move(position, player, rng)
            position = position.play(move)
        if empties(position) == empty_squares and position.legal_moves():
            found.append(position)
    return found


def measure_endgame(
    tracker: Tracker, positions_per_row: int, empty_counts: tuple[int, ...]
) -> list[EndgameRow]:
    """The compiled solve on fresh game positions with each number of empty squares; CPU times."""
    rows = []
    for empty_squares in empty_counts:
        positions = game_positions(positions_per_row, empty_squares)
        tick = tracker.task(f"kernel: Othello endgame, {empty_squares} empty", len(positions))
        times, nodes, outcomes = [], [], [0, 0, 0]
        for position in positions:
            started = time.process_time()
            result = endgame_move(position, random.Random(0))
            times.append((time.process_time() - started) * 1000)
            assert result is not None  # no deadline: the solve finishes
            nodes.append(result.nodes)
            outcomes[0 if result.score > 0 else 1 if result.score == 0 else 2] += 1
            tick()
        won, drawn, lost = outcomes
        rows.append(EndgameRow(empty_squares, len(positions), statistics.median(times), max(times),
                               int(statistics.median(nodes)), max(nodes), (won, drawn, lost)))  # fmt: skip
    return rows


def endgame_table(rows: list[EndgameRow]) -> TextTable:
    return TextTable(
        "Compiled kernel: Othello's exact endgame",
        (
            "empty squares",
            "positions",
            "median ms",
            "max ms",
            "median nodes",
            "max nodes",
            "won / drawn / lost",
            "target",
        ),
        [_endgame_cells(row) for row in rows],
        "`bots.othello_endgame.endgame_move` (the exact final disc difference and every move that keeps "
        f"it, as level 8 solves from {level('othello', LEVEL_COUNT).solve_empties} empty squares on) on "
        f"positions of games that level {PLAYING_LEVEL} plays against itself after {OPENING_PLIES} random "
        "plies, one position a game; CPU time. Target: the top level's empty squares within about "
        f"{TARGET_MS / 1000:g} s.",
    )


def _endgame_cells(row: EndgameRow) -> tuple[str, ...]:
    reach = level("othello", LEVEL_COUNT).solve_empties
    target = "-"
    if row.empties == reach:
        target = "met" if row.max_ms <= TARGET_MS else "missed"
    won, drawn, lost = row.wins_draws_losses
    counts = (str(row.empties), str(row.positions), f"{row.median_ms:.1f}", f"{row.max_ms:.1f}")
    return (*counts, f"{row.median_nodes:,}", f"{row.max_nodes:,}", f"{won} / {drawn} / {lost}", target)
