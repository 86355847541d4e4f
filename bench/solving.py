"""Exact Connect Four solving on Pascal Pons' test sets: our compiled search, our pure-Python search and
Pons' own C++ solver, side by side on the same lines in the same run (part of ``plyarena bench engine``).

Each of our searches solves every line with :func:`bots.connect4_solver.solve` (the exact score and a move
that keeps it), its transposition table empty at every position as the solver starts each top-level
call; its times are CPU time of the benchmark process. Pons' solver, when given, runs as
:mod:`bench.pons` describes (his table reset before each line too; his own wall-clock time, the fastest of
a few runs). Means and medians are both shown: a set's mean is dominated by its few hardest lines, its
median by the many easy ones, where the cost of calling a solver from Python shows most.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bench.pons import PONS_SETS, pons_lines, run_reference
from bench.tables import TextTable, ratio_text
from bots.connect4_solver import CompiledSearch, PythonSearch, SearchFactory, solve
from games.connect4 import ConnectFour

COMPILED = "compiled (C)"
PURE_PYTHON = "pure Python"
PONS = "Pons C++"
TARGET_RATIO = 3.0
"""Issue 40's target: the compiled search within 3 times Pons' time on every set."""
WARM_UP_LINE = "445566"
"""Solved once, untimed, before each of our searches' sets (a win at once: nothing to search): the first
search of a process allocates the compiled search's 64 MB table, which Pons' solver also does before its
clock starts."""


class Tracker(Protocol):
    def task(self, description: str, total: int) -> Callable[[], None]: ...


@dataclass(frozen=True, slots=True)
class SolvingRow:
    """One solver on one set: how many scores were right, time and nodes per position."""

    set_name: str
    solver: str
    positions: int
    correct: int
    mean_ms: float
    median_ms: float
    max_ms: float
    mean_nodes: float

    @property
    def wrong(self) -> int:
        return self.positions - self.correct


def our_searches() -> dict[str, SearchFactory]:
    """Our searches by their name in the table: the compiled one first, where it was built."""
    searches: dict[str, SearchFactory] = {} if CompiledSearch is None else {COMPILED: CompiledSearch}
    searches[PURE_PYTHON] = PythonSearch
    return searches


def measure_solving(
    lines_per_set: int | None,
    reference_runs: int,
    tracker: Tracker,
    directory: Path,
    reference_solver: Path | None = None,
) -> list[SolvingRow]:
    """Every solver on the first ``lines_per_set`` lines of each of Pons' sets (all of them: ``None``)."""
    rows = []
    for name in PONS_SETS:
        lines = pons_lines(name, lines_per_set, directory)
        for label, search in our_searches().items():
            tick = tracker.task(f"{label}: {name}", len(lines))
            rows.append(_measure_ours(name, label, search, lines, tick))
        if reference_solver is not None:
            tick = tracker.task(f"{PONS}: {name}", reference_runs)
            reference = run_reference(reference_solver, lines, reference_runs, tick)
            rows.append(
                SolvingRow(
                    name, PONS, reference.positions, reference.correct, reference.mean_ms,
                    reference.median_ms, reference.max_ms, reference.mean_nodes,
                )
            )  # fmt: skip
    return rows


def _measure_ours(
    name: str, label: str, search: SearchFactory, lines: list[tuple[str, int]], tick: Callable[[], None]
) -> SolvingRow:
    positions = [(ConnectFour.from_moves(moves), expected) for moves, expected in lines]
    solve(WARM_UP_LINE, search=search)
    correct = nodes = 0
    times = []
    for position, expected in positions:
        started = time.process_time()
        solution = solve(position, search=search)
        times.append((time.process_time() - started) * 1000)
        correct += solution.score == expected
        nodes += solution.nodes
        tick()
    return SolvingRow(
        name, label, len(times), correct, statistics.mean(times), statistics.median(times), max(times),
        nodes / len(times),
    )  # fmt: skip


def solving_table(rows: list[SolvingRow], reference: str) -> TextTable:
    """The rows set by set, each of ours with its mean and median time over Pons' when he was measured.

    ``reference`` says how Pons' solver ran, or is empty when it did not.
    """
    pons = {row.set_name: row for row in rows if row.solver == PONS}
    table_rows = []
    for row in rows:
        his = pons.get(row.set_name)
        if row.solver == PONS or his is None:
            ratios = ("-", "-")
        else:
            ratios = (_ratio(row.mean_ms, his.mean_ms), _ratio(row.median_ms, his.median_ms))
        table_rows.append(
            (
                row.set_name, row.solver, str(row.positions), str(row.correct), str(row.wrong),
                f"{row.mean_ms:.4f}", f"{row.median_ms:.4f}", f"{row.max_ms:.1f}", f"{row.mean_nodes:,.0f}",
                *ratios,
            )
        )  # fmt: skip
    caption = (
        "`bots.connect4_solver.solve` (the exact score and a move that keeps it) on each line with each of "
        "our searches, its transposition table empty at every position (the compiled search's holds 2^23 "
        "entries); our times are CPU time, after one untimed solve that allocates the table. "
    )
    if reference:
        caption += (
            f"*{PONS}*: {reference}. *vs Pons*: our mean (median) time over his on the same set; "
            f"the target for the compiled search is {TARGET_RATIO:g}x or less on every set."
        )
    else:
        caption += (
            f"*{PONS}*: not measured in this run; `--pons-solver PATH` runs Pascal Pons' C++ solver on the "
            "same lines for the ratios (see `bench/pons.py`)."
        )
    header = ("set", "solver", "positions", "correct", "wrong", "mean ms", "median ms", "max ms",
              "mean nodes", "mean vs Pons", "median vs Pons")  # fmt: skip
    return TextTable("Connect Four: exact solving on Pascal Pons' test sets", header, table_rows, caption)


def _ratio(ours: float, his: float) -> str:
    return ratio_text(ours / his) if his else "-"
