"""The compiled kernel beside the pure-Python code it speeds up, each figure against its target (issue 40).

Part of ``plyarena bench engine``, measured in the same run and on the same positions for both codes:

- perft at the depths the targets name, compiled and in Python, and the compiled time over a small C
  bitboard program's time measured on this machine (target: within 3x);
- alpha-beta on mid-game positions: the same searches both ways (their node counts must be equal, as
  the kernel reproduces the Python search node for node), and the speed-up;
- easyAI's Negamax against ours at depth 8 on the first 12 positions of Pons' Test_L2_R1 (target: 1000
  times easyAI, with equal values);
- the top levels of Othello and checkers (target: at least 10 plies in about a second);
- Othello's exact endgame on positions from the bots' games (:mod:`bench.endgame`; target: the top
  level's 14 empty squares within about a second);
- Connect Four's level 8 move by move in whole games (:mod:`bench.perfect_level`; target: at most 1 s a
  move, a median under 50 ms).

Every search and perft here names its code explicitly (``AlphaBeta(..., compiled=...)``, the kernel's
own ``perft``), so that the figures do not depend on which one the rest of the process uses.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bench.endgame import EndgameRow, endgame_table, measure_endgame
from bench.perfect_level import PerfectRow, measure_perfect_level, perfect_level_table
from bench.pons import pons_lines
from bench.tables import TextTable, ratio_text
from bots import speedups
from bots.connect4_solver import CompiledSearch
from bots.evaluation import Evaluator, evaluator_for
from bots.levels import LEVEL_COUNT, choose_move, level
from bots.negamax import MAX_DEPTH, AlphaBeta
from bots.result import DECISIVE, SearchResult
from games import Position, get_game, perft

PERFT_TARGET_RATIO = 3.0
PERFT_REFERENCES = {
    # game: (depth, milliseconds, the C program), measured on this machine for issue 40
    "connect4": (7, 2.3, "a small C bitboard perft"),
    "othello": (8, 2.7, "ellxor/othello"),
    "checkers": (9, 76.0, "WoojtekP/checkers-move-generator"),
}
EASYAI_TARGET = 1000.0
EASYAI_DEPTH = 8
EASYAI_SET = "Test_L2_R1"
COMPILED_ENGINE = "Ply Arena alpha-beta, compiled"
TOP_LEVEL_TARGET_DEPTH = 10
TOP_LEVEL_GAMES = ("othello", "checkers")


class Tracker(Protocol):
    def task(self, description: str, total: int) -> Callable[[], None]: ...


@dataclass(frozen=True, slots=True)
class KernelPlan:
    """How much to measure: the full run, or a quick one that proves the tables come out."""

    perft_runs: int = 15
    """Compiled runs of each perft (the median counts); Python's runs once."""
    perft_depth_cut: int = 0
    """Plies below each target's depth (the quick run's Python perft would otherwise take seconds)."""
    search_positions: int = 6
    search_cpu_seconds: float = 0.5
    """Each position is searched to the first depth whose Python search takes this long."""
    easyai_positions: int = 12
    level_positions: int = 20
    endgame_positions: int = 40
    endgame_empties: tuple[int, ...] = (14, 18)
    """The top level's reach, and a step past it for the headroom."""
    perfect_games: int = 6
    """Games of Connect Four's level 8 for each player and opponent."""

    @classmethod
    def quick(cls) -> KernelPlan:
        return cls(perft_runs=3, perft_depth_cut=3, search_positions=2, search_cpu_seconds=0.02,
                   easyai_positions=2, level_positions=2, endgame_positions=2,
                   endgame_empties=(8,), perfect_games=1)  # fmt: skip


@dataclass(frozen=True, slots=True)
class PerftRow:
    game: str
    depth: int
    count: int
    compiled_ms: float
    python_ms: float
    reference_ms: float | None
    """The C program's time at this depth, where the target names it."""
    reference: str


@dataclass(frozen=True, slots=True)
class SearchRow:
    game: str
    positions: int
    mean_depth: float
    nodes: int
    same_nodes: bool
    """Every search counted the same nodes and found the same move and score both ways."""
    python_seconds: float
    compiled_seconds: float


@dataclass(frozen=True, slots=True)
class EasyAIRow:
    engine: str
    positions: int
    seconds: float
    agree: int
    """Positions whose value (win, loss, or neither within the depth) equals easyAI's."""


@dataclass(frozen=True, slots=True)
class LevelRow:
    game: str
    level: int
    depth: int
    time_ms: int | None
    positions: int
    min_depth: int
    median_depth: float
    median_ms: float
    max_ms: float
    median_cpu_ms: float
    max_cpu_ms: float


@dataclass(slots=True)
class KernelReport:
    compiled: list[str]
    """The games the kernel has in this process."""
    perft: list[PerftRow] = field(default_factory=list)
    search: list[SearchRow] = field(default_factory=list)
    easyai: list[EasyAIRow] = field(default_factory=list)
    levels: list[LevelRow] = field(default_factory=list)
    endgame: list[EndgameRow] = field(default_factory=list)
    perfect: list[PerfectRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def mismatches(self) -> int:
        """Searches that differed between the two codes, and depth-8 values that differed from easyAI's."""
        differed = sum(not row.same_nodes for row in self.search)
        return differed + sum(row.positions - row.agree for row in self.easyai)


def measure_kernel(plan: KernelPlan, tracker: Tracker, pons_sets: Path) -> KernelReport:
    """Every kernel measurement; without the kernel, a note says so and nothing is measured."""
    report = KernelReport(speedups.compiled_games())
    if not report.compiled:
        report.notes.append(
            "The compiled kernel is not loaded (not built, or PLYARENA_NO_SPEEDUPS=1): no kernel figures."
        )
        return report
    report.perft = measure_perft(plan, tracker, report.compiled)
    report.search = measure_search(plan, tracker, report.compiled)
    try:
        report.easyai = measure_easyai_depth(plan, tracker, pons_sets)
    except ImportError as error:
        report.notes.append(f"easyAI at depth {EASYAI_DEPTH} skipped: {error} (pip install -e '.[bench]')")
    top_level_games = [game for game in TOP_LEVEL_GAMES if game in report.compiled]
    report.levels = measure_top_levels(plan, tracker, top_level_games)
    if "othello" in report.compiled:
        report.endgame = measure_endgame(tracker, plan.endgame_positions, plan.endgame_empties)
    if CompiledSearch is not None:
        report.perfect = measure_perfect_level(tracker, plan.perfect_games)
    return report


def measure_perft(plan: KernelPlan, tracker: Tracker, games: list[str]) -> list[PerftRow]:
    """Each game's perft from the start at its target's depth, compiled (median) and in Python (once)."""
    rows = []
    tick = tracker.task("kernel: perft", len(games))
    for game in games:
        target_depth, reference_ms, reference = PERFT_REFERENCES[game]
        depth = target_depth - plan.perft_depth_cut
        position = get_game(game).start()
        state = speedups.state_of(position)
        kernel_type = speedups.kernel_type(game)
        times = []
        for _ in range(plan.perft_runs):
            started = time.perf_counter()
            count = kernel_type.perft(state, depth)
            times.append(time.perf_counter() - started)
        started = time.perf_counter()
        python_count = perft(position, depth)
        python_ms = (time.perf_counter() - started) * 1000
        if python_count != count:
            raise AssertionError(f"{game} perft {depth}: compiled {count}, Python {python_count}")
        rows.append(PerftRow(game, depth, count, statistics.median(times) * 1000, python_ms,
                             reference_ms if depth == target_depth else None, reference))  # fmt: skip
        tick()
    return rows


def measure_search(plan: KernelPlan, tracker: Tracker, games: list[str]) -> list[SearchRow]:
    """The same searches in both codes: each position to the first depth whose Python search takes the
    plan's CPU time, then compiled to that depth (the best of three)."""
    rows = []
    for game in games:
        evaluator = evaluator_for(game)
        positions = _mid_game_positions(game, plan.search_positions)
        tick = tracker.task(f"kernel: search {game}", len(positions))
        python_seconds = compiled_seconds = 0.0
        nodes = depths = 0
        same = True
        for position in positions:
            for depth in range(1, MAX_DEPTH + 1):
                spent, expected = _timed_search(position, evaluator, depth, compiled=False)
                if spent >= plan.search_cpu_seconds or expected.depth < depth:
                    break
            runs = [_timed_search(position, evaluator, depth, compiled=True) for _ in range(3)]
            found = runs[0][1]
            same &= (found.nodes, found.move, found.score) == (expected.nodes, expected.move, expected.score)
            python_seconds += spent
            compiled_seconds += min(run[0] for run in runs)
            nodes += expected.nodes
            depths += expected.depth
            tick()
        rows.append(SearchRow(game, len(positions), depths / len(positions), nodes, same, python_seconds,
                              compiled_seconds))  # fmt: skip
    return rows


def _mid_game_positions(game: str, count: int, seed: int = 2024) -> list[Position]:
    """The engine benchmark's mid-game positions (imported here, as bench.engine imports this module)."""
    from bench.engine import sample_positions

    return sample_positions(game, count, seed)


def _timed_search(
    position: Position, evaluator: Evaluator, depth: int, compiled: bool
) -> tuple[float, SearchResult]:
    """A fresh search of ``position`` to ``depth`` in the code named, and its CPU time in seconds."""
    started = time.process_time()
    result = AlphaBeta(evaluator, compiled=compiled).search(position, depth)
    return time.process_time() - started, result


def _value(score: float, decisive: float) -> int:
    """A search's value as easyAI can tell it: a win found (1), a loss (-1), or neither (0)."""
    return (score > decisive) - (score < -decisive)


def measure_easyai_depth(plan: KernelPlan, tracker: Tracker, pons_sets: Path) -> list[EasyAIRow]:
    """easyAI's Negamax and ours, compiled and in Python, each to depth 8 on the same positions.

    easyAI scores a lost game -100 and everything else 0, so its value says whether a win or a loss is
    forced within the depth; ours must say the same, its heuristic scores below its win scores.
    """
    from bench import easyai_adapter  # easyAI is an optional dependency: imported only when asked for

    lines = pons_lines(EASYAI_SET, plan.easyai_positions, pons_sets)
    evaluator = evaluator_for("connect4")
    game = get_game("connect4")
    tick = tracker.task(f"kernel: easyAI depth {EASYAI_DEPTH}", len(lines))
    seconds = {"easyAI": 0.0, "compiled": 0.0, "python": 0.0}
    agree = {"compiled": 0, "python": 0}
    for moves, _ in lines:
        started = time.process_time()
        easyai_value, _ = easyai_adapter.solve_with_easyai_board(moves, EASYAI_DEPTH)
        seconds["easyAI"] += time.process_time() - started
        position = game.replay(list(moves))
        for code in ("compiled", "python"):
            spent, result = _timed_search(position, evaluator, EASYAI_DEPTH, compiled=code == "compiled")
            seconds[code] += spent
            agree[code] += _value(result.score, DECISIVE) == easyai_value
        tick()
    return [
        EasyAIRow("easyAI 2.0.12 Negamax, its ConnectFour", len(lines), seconds["easyAI"], len(lines)),
        EasyAIRow(COMPILED_ENGINE, len(lines), seconds["compiled"], agree["compiled"]),
        EasyAIRow("Ply Arena alpha-beta, Python", len(lines), seconds["python"], agree["python"]),
    ]


def measure_top_levels(plan: KernelPlan, tracker: Tracker, games: list[str]) -> list[LevelRow]:
    """Each game's level 8 choosing a move on mid-game positions, as a bot would (compiled)."""
    rows = []
    for game in games:
        top = level(game, LEVEL_COUNT)
        positions = _mid_game_positions(game, plan.level_positions, seed=11)
        tick = tracker.task(f"kernel: {game} level {LEVEL_COUNT}", len(positions))
        times, cpu_times, depths = [], [], []
        for position in positions:
            started, cpu_started = time.perf_counter(), time.process_time()
            _, result = choose_move(position, top, random.Random(0))
            times.append((time.perf_counter() - started) * 1000)
            cpu_times.append((time.process_time() - cpu_started) * 1000)
            depths.append(result.depth)
            tick()
        rows.append(LevelRow(game, LEVEL_COUNT, top.depth or 0, top.time_ms, len(positions), min(depths),
                             statistics.median(depths), statistics.median(times), max(times),
                             statistics.median(cpu_times), max(cpu_times)))  # fmt: skip
    return rows


def kernel_tables(report: KernelReport) -> list[TextTable]:
    """The kernel's tables, each with its target, in the order they are measured."""
    tables = []
    if report.perft:
        tables.append(_perft_table(report.perft))
    if report.search:
        tables.append(_search_table(report.search))
    if report.easyai:
        tables.append(_easyai_table(report.easyai))
    if report.levels:
        tables.append(_levels_table(report.levels))
    if report.endgame:
        tables.append(endgame_table(report.endgame))
    if report.perfect:
        tables.append(perfect_level_table(report.perfect))
    return tables


def _perft_table(rows: list[PerftRow]) -> TextTable:
    return TextTable(
        "Compiled kernel: perft beside small C bitboard programs",
        ("game", "depth", "count", "compiled ms", "Python ms", "speed-up", "C ms", "compiled / C", "C code"),
        [_perft_cells(row) for row in rows],
        "Perft from the start (bulk counting: the last ply counted, not played) by `bots._kernel` and by "
        "`games.perft`, the same count both ways; wall-clock times, compiled the median of several runs, "
        "Python one. *C ms*: the C program's time at that depth on this machine (issue 40); target: within "
        f"{PERFT_TARGET_RATIO:g}x of it.",
    )


def _perft_cells(row: PerftRow) -> tuple[str, ...]:
    reference = ("-", "-")
    if row.reference_ms is not None:
        ratio = row.compiled_ms / row.reference_ms
        verdict = "met" if ratio <= PERFT_TARGET_RATIO else "missed"
        reference = (f"{row.reference_ms:g}", f"{ratio_text(ratio)} ({verdict})")
    speed_up = ratio_text(row.python_ms / row.compiled_ms)
    counts = (row.game, str(row.depth), f"{row.count:,}", f"{row.compiled_ms:.2f}", f"{row.python_ms:,.0f}")
    return (*counts, speed_up, *reference, row.reference)


def _search_table(rows: list[SearchRow]) -> TextTable:
    header = ("game", "positions", "mean depth", "nodes", "same nodes, moves, scores", "Python s",
              "compiled s", "speed-up", "compiled nodes/s")  # fmt: skip
    return TextTable(
        "Compiled kernel: the same searches in C and in Python",
        header,
        [_search_cells(row) for row in rows if row.compiled_seconds > 0],
        "`AlphaBeta` with and without the kernel on the same mid-game positions, each searched to the first "
        "depth whose Python search takes the plan's CPU time; the kernel reproduces the Python search node "
        "for node, so the node counts must be equal. CPU seconds; compiled: the best of three.",
    )


def _search_cells(row: SearchRow) -> tuple[str, ...]:
    same = "yes" if row.same_nodes else "NO"
    speed_up = ratio_text(row.python_seconds / row.compiled_seconds)
    counts = (row.game, str(row.positions), f"{row.mean_depth:.1f}", f"{row.nodes:,}", same)
    times = (f"{row.python_seconds:.2f}", f"{row.compiled_seconds:.4f}", speed_up)
    return (*counts, *times, f"{row.nodes / row.compiled_seconds:,.0f}")


def _easyai_table(rows: list[EasyAIRow]) -> TextTable:
    return TextTable(
        f"Compiled kernel: easyAI's Negamax at depth {EASYAI_DEPTH}",
        ("engine", "positions", "same value as easyAI", "CPU seconds", "easyAI's time over this"),
        [_easyai_cells(row, rows[0].seconds) for row in rows],
        f"The first {rows[0].positions} positions of Pons' {EASYAI_SET}, each searched to depth "
        f"{EASYAI_DEPTH} by every engine, every search fresh. easyAI scores a lost game -100 and the rest "
        "0, so its value says whether a win or a loss is forced within the depth; *same value* counts the "
        f"positions where ours says the same. Target: {EASYAI_TARGET:,.0f}x easyAI, compiled.",
    )


def _easyai_cells(row: EasyAIRow, easyai_seconds: float) -> tuple[str, ...]:
    ratio = easyai_seconds / row.seconds if row.seconds else 0.0
    verdict = ""
    if row.engine == COMPILED_ENGINE:
        verdict = " (met)" if ratio >= EASYAI_TARGET else " (missed)"
    return (row.engine, str(row.positions), str(row.agree), f"{row.seconds:.4f}", ratio_text(ratio) + verdict)


def _levels_table(rows: list[LevelRow]) -> TextTable:
    header = ("game", "level", "depth", "time_ms", "positions", "least depth reached", "median depth reached",
              "median ms", "max ms", "median CPU ms", "max CPU ms")  # fmt: skip
    return TextTable(
        "Compiled kernel: the top levels",
        header,
        [_level_cells(row) for row in rows],
        "The level choosing a move (`bots.levels.choose_move`, as a bot does, compiled) on mid-game "
        "positions; wall-clock, as its time cap is, and the process's CPU time beside it (they differ where "
        "other work shares the machine). A depth reached is below the level's only where a game ends sooner "
        "or the level's time_ms, a wall-clock budget, stops the deepening. Target: at least "
        f"{TOP_LEVEL_TARGET_DEPTH} plies in about a second.",
    )


def _level_cells(row: LevelRow) -> tuple[str, ...]:
    time_ms = "-" if row.time_ms is None else str(row.time_ms)
    budget = (row.game, str(row.level), str(row.depth), time_ms, str(row.positions))
    depths = (str(row.min_depth), f"{row.median_depth:g}")
    times = (f"{row.median_ms:.0f}", f"{row.max_ms:.0f}", f"{row.median_cpu_ms:.0f}", f"{row.max_cpu_ms:.0f}")
    return (*budget, *depths, *times)
