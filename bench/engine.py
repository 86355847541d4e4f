"""The engine benchmark: how fast and how right the search is, in figures for docs/benchmarks.md.

Four measurements, each a function that returns plain rows (the command line
shows them with rich and writes them as Markdown):

- search speed: nodes per second of alpha-beta in every game, on mid-game
  positions, under a fixed time budget;
- exact solving: the Connect Four solver on Pascal Pons' three test sets,
  compiled and in pure Python, checked against their scores and, when given
  his C++ solver, timed against it on the same lines in the same run
  (:mod:`bench.solving`, :mod:`bench.pons`);
- pruning: plain minimax and alpha-beta node counts by depth on the same
  positions, and how close alpha-beta comes to the ideal of perfect ordering,
  which searches twice as deep for the same work (an effective branching factor
  of the square root of minimax's);
- easyAI: its Negamax searching the same Connect Four endgames to the same
  depth, deep enough for both values to be exact, so they must agree;
- the compiled kernel beside the pure-Python code, each against its target
  (:mod:`bench.kernel`: perft, the same searches both ways, easyAI at depth 8,
  the top levels).

Everywhere else a search runs compiled where the kernel has the game
(:mod:`bots.speedups`), as the bots' do.

Pons' sets are not ours to ship: they are found where ``PLYARENA_PONS_SETS``
points (``--pons-sets DIR`` on the command line), as the tests find them.

Times are the benchmark process's CPU time (``time.process_time``), so that
other work on a shared machine does not inflate them; on an idle machine they
equal wall-clock time. Nothing here prints; a :class:`Tracker` hears of the
progress.
"""

from __future__ import annotations

import gc
import math
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from bench.kernel import KernelPlan, KernelReport, kernel_tables, measure_kernel
from bench.machine import machine_description
from bench.pons import describe_reference, pons_lines
from bench.solving import PONS, SolvingRow, measure_solving, solving_table
from bench.tables import TextTable, ratio_text
from bots.evaluation import evaluator_for
from bots.minimax import minimax
from bots.negamax import MAX_DEPTH, AlphaBeta
from games import GAMES, Position, get_game
from games.connect4 import CELLS

ENDING_TREE_BRANCHING = 2.0
"""Below this minimax branching factor the tree is running out (lines end), not branching."""


class Tracker(Protocol):
    """Hears of a benchmark's progress: one task per measurement, advanced item by item."""

    def task(self, description: str, total: int) -> Callable[[], None]:
        """Start a task of ``total`` items; the callable advances it by one."""
        ...


@dataclass(frozen=True, slots=True)
class Plan:
    """How much to measure: the full run for the docs, or a quick one that only proves the command works."""

    speed_positions: int = 8
    speed_cpu_seconds: float = 0.5
    """Each position is searched to the first depth whose search takes this long."""
    pons_lines: int | None = None
    """Lines of each Pons set (``None``: all of them)."""
    reference_runs: int = 3
    """Runs of Pons' solver over each set; each position keeps its fastest (its times are wall-clock)."""
    pruning_positions: int = 4
    pruning_node_budget: int = 1_000_000
    """No depth whose minimax is expected to cost more nodes than this (over all positions)."""
    easyai_positions: int = 30
    easyai_empties: tuple[int, int] = (10, 12)
    """Connect Four endgames with this many empty cells (inclusive): deep enough to tell engines apart."""
    kernel: KernelPlan = field(default_factory=KernelPlan)

    @classmethod
    def quick(cls) -> Plan:
        return cls(
            speed_positions=2,
            speed_cpu_seconds=0.05,
            pons_lines=5,
            reference_runs=1,
            pruning_positions=2,
            pruning_node_budget=5_000,
            easyai_positions=3,
            easyai_empties=(4, 6),
            kernel=KernelPlan.quick(),
        )


@dataclass(frozen=True, slots=True)
class SpeedRow:
    game: str
    positions: int
    mean_depth: float
    nodes: int
    seconds: float

    @property
    def nodes_per_second(self) -> float:
        return self.nodes / self.seconds if self.seconds else 0.0


@dataclass(frozen=True, slots=True)
class PruningRow:
    game: str
    depth: int
    minimax_nodes: int
    alphabeta_nodes: int


@dataclass(frozen=True, slots=True)
class EasyAIRow:
    engine: str
    empties: str
    """Empty cells (= search depth) of the positions in the row, or ``all``."""
    positions: int
    seconds: float
    nodes: int
    agree: int
    """Positions whose value (win, draw or loss for the side to move) matches Pons' exact score."""

    @property
    def nodes_per_second(self) -> float:
        return self.nodes / self.seconds if self.seconds else 0.0


@dataclass(slots=True)
class EngineReport:
    command: str
    date: str
    machine: str
    plan: Plan
    speed: list[SpeedRow] = field(default_factory=list)
    pons: list[SolvingRow] = field(default_factory=list)
    pruning: list[PruningRow] = field(default_factory=list)
    easyai: list[EasyAIRow] = field(default_factory=list)
    easyai_depth: str = ""
    reference: str = ""
    """How Pons' solver was run for the ratio; empty when it was not."""
    kernel: KernelReport | None = None
    notes: list[str] = field(default_factory=list)


def sample_positions(game: str, count: int, seed: int = 2024) -> list[Position]:
    """Mid-game positions: each a quarter to a half of the way through a random game."""
    rng = random.Random(seed)
    positions: list[Position] = []
    while len(positions) < count:
        line = [get_game(game).start()]
        while line[-1].legal_moves() and len(line) < 200:
            line.append(line[-1].play(rng.choice(line[-1].legal_moves())))
        playable = [position for position in line if position.legal_moves()]
        positions.append(playable[rng.randrange(len(playable) // 4, len(playable) // 2 + 1)])
    return positions


def measure_speed(plan: Plan, tracker: Tracker, games: list[str] | None = None) -> list[SpeedRow]:
    """Alpha-beta's nodes per second in every game.

    Each position is searched to depth 1, 2, ... (a fresh search each time) until one
    search takes the plan's CPU time; that search counts. Fixed depths make the
    work the same from run to run, where a wall-clock budget would search
    shallower on a busy machine.
    """
    rows = []
    for game in games or sorted(GAMES):
        evaluator = evaluator_for(game)
        positions = sample_positions(game, plan.speed_positions)
        tick = tracker.task(f"speed: {game}", len(positions))
        nodes = depths = 0
        seconds = 0.0
        for position in positions:
            for depth in range(1, MAX_DEPTH + 1):
                started = time.process_time()
                result = AlphaBeta(evaluator).search(position, depth)
                spent = time.process_time() - started
                if spent >= plan.speed_cpu_seconds or result.depth < depth:
                    break  # long enough, or the game ends within this depth
            seconds += spent
            nodes += result.nodes
            depths += result.depth
            tick()
        rows.append(SpeedRow(game, len(positions), depths / len(positions), nodes, seconds))
    return rows


def measure_pruning(plan: Plan, tracker: Tracker, games: list[str] | None = None) -> list[PruningRow]:
    """Minimax and alpha-beta nodes, depth by depth, while minimax's cost stays within the plan's budget.

    Chess is left out unless asked for: every leaf of its minimax runs a quiescence search that the node
    count does not see, so the budget would not bound the time (minutes at depth 3).
    """
    rows = []
    for game in games or [name for name in sorted(GAMES) if evaluator_for(name).captures is None]:
        evaluator = evaluator_for(game)
        positions = sample_positions(game, plan.pruning_positions, seed=7)
        tick = tracker.task(f"pruning: {game}", 0)
        previous_minimax = 0
        for depth in range(1, 30):
            minimax_nodes = alphabeta_nodes = 0
            for position in positions:
                minimax_nodes += minimax(position, evaluator, depth).nodes
                alphabeta_nodes += AlphaBeta(evaluator).search(position, depth).nodes
            tick()
            if minimax_nodes == previous_minimax:
                break  # every line ends before this depth: nothing more to learn
            rows.append(PruningRow(game, depth, minimax_nodes, alphabeta_nodes))
            growth = minimax_nodes / previous_minimax if previous_minimax else 1
            previous_minimax = minimax_nodes
            if minimax_nodes * growth > plan.pruning_node_budget:
                break  # the next depth would cost more than the budget
    return rows


def effective_branching(rows: list[PruningRow], game: str) -> tuple[float, float] | None:
    """Minimax's and alpha-beta's effective branching factors over the deepest two depths measured.

    A ratio over two plies (then its square root) evens out the odd-even swing of
    alpha-beta, whose cost rises more on one parity of depth than the other.
    """
    measured = [row for row in rows if row.game == game]
    if len(measured) < 3:
        return None
    before, last = measured[-3], measured[-1]
    return (
        math.sqrt(last.minimax_nodes / before.minimax_nodes),
        math.sqrt(last.alphabeta_nodes / before.alphabeta_nodes),
    )


def connect_four_endgames(plan: Plan, directory: Path) -> list[tuple[str, int]]:
    """Pons' late-game positions with few enough empty cells to search to the end, and their scores."""
    fewest, most = plan.easyai_empties
    found = [
        (moves, score)
        for moves, score in pons_lines("Test_L3_R1", None, directory)
        if fewest <= CELLS - len(moves) <= most
    ]
    return found[: plan.easyai_positions]


def measure_easyai(plan: Plan, tracker: Tracker, directory: Path) -> tuple[list[EasyAIRow], str]:
    """Ours against easyAI's Negamax on Connect Four endgames, each searched to its number of empty cells.

    At that depth every line reaches the end of the game, so each engine's value is
    exact and must match the sign of Pons' score. easyAI runs twice: on its own
    ConnectFour (numpy boards), and on our bitboard rules through
    :class:`EasyAIConnectFour`, which separates the cost of the search from the
    cost of the rules.
    """
    from bench import easyai_adapter  # easyAI is an optional dependency: imported only when asked for

    endgames = connect_four_endgames(plan, directory)
    game = get_game("connect4")
    evaluator = evaluator_for("connect4")
    engines: dict[str, Callable[[str, int], tuple[int, int]]] = {
        "Ply Arena alpha-beta": lambda moves, depth: _ours(game.replay(list(moves)), evaluator, depth),
        "easyAI Negamax, its ConnectFour": easyai_adapter.solve_with_easyai_board,
        "easyAI Negamax, our rules": easyai_adapter.solve_with_our_rules,
    }
    rows = []
    for engine, run in engines.items():
        tick = tracker.task(f"easyAI: {engine}", len(endgames))
        by_empties: dict[int, list[tuple[float, int, bool]]] = {}
        for moves, pons in endgames:
            started = time.process_time()
            sign, visited = run(moves, CELLS - len(moves))
            by_empties.setdefault(CELLS - len(moves), []).append(
                (time.process_time() - started, visited, sign == _sign(pons))
            )
            tick()
        groups = [(str(empties), runs) for empties, runs in sorted(by_empties.items())]
        groups.append(("all", [run for runs in by_empties.values() for run in runs]))
        for label, runs in groups:
            seconds = sum(run[0] for run in runs)
            nodes, agree = sum(run[1] for run in runs), sum(run[2] for run in runs)
            rows.append(EasyAIRow(engine, label, len(runs), seconds, nodes, agree))
    empties = sorted({CELLS - len(moves) for moves, _ in endgames})
    depth = f"{empties[0]}-{empties[-1]}" if empties else "-"
    return rows, depth


def _ours(position: Position, evaluator: Any, depth: int) -> tuple[int, int]:
    result = AlphaBeta(evaluator).search(position, depth)
    return _sign(result.score), result.nodes


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def run_engine_benchmark(
    plan: Plan, tracker: Tracker, command: str, directory: Path, reference_solver: Path | None = None
) -> EngineReport:
    """Every measurement of the engine benchmark; easyAI missing is noted, not fatal."""
    report = EngineReport(command, time.strftime("%Y-%m-%d %H:%M %Z"), machine_description(), plan)
    with _frozen_heap():
        _measure_all(report, tracker, directory, reference_solver)
    return report


@contextmanager
def _frozen_heap() -> Iterator[None]:
    """The objects alive now (every module the command line imported) left out of the collector's scans
    while measuring, as the server leaves its own once started (``server.limits``): otherwise a full
    collection over them (some 40 ms) lands on whichever position is being timed, and on the late-game
    set, a tenth of a second in all, it adds half as much again to the mean."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _measure_all(
    report: EngineReport, tracker: Tracker, directory: Path, reference_solver: Path | None
) -> None:
    plan = report.plan
    report.speed = measure_speed(plan, tracker)
    report.pons = measure_solving(plan.pons_lines, plan.reference_runs, tracker, directory, reference_solver)
    if reference_solver is not None:
        report.reference = describe_reference(plan.reference_runs)
        for row in report.pons:
            if row.solver == PONS and row.wrong:
                report.notes.append(f"Pons' solver disagreed with {row.set_name} on {row.wrong} positions")
    report.pruning = measure_pruning(plan, tracker)
    try:
        report.easyai, report.easyai_depth = measure_easyai(plan, tracker, directory)
    except ImportError as error:
        report.notes.append(f"easyAI comparison skipped: {error} (install it: pip install -e '.[bench]')")
    report.kernel = measure_kernel(plan.kernel, tracker, directory)
    report.notes += report.kernel.notes


def report_tables(report: EngineReport) -> list[TextTable]:
    """Every table of the report, in the order they are shown."""
    plan = report.plan
    tables = [
        TextTable(
            "Search speed",
            ("game", "positions", "mean depth", "nodes", "seconds", "nodes/s"),
            [
                (
                    r.game,
                    str(r.positions),
                    f"{r.mean_depth:.1f}",
                    f"{r.nodes:,}",
                    f"{r.seconds:.2f}",
                    f"{r.nodes_per_second:,.0f}",
                )
                for r in report.speed
            ],
            "Alpha-beta (iterative deepening, transposition table, move ordering; compiled where the kernel "
            f"has the game: {', '.join(report.kernel.compiled) if report.kernel else 'none'}) on "
            f"{plan.speed_positions} "
            "mid-game positions per game, each searched to the first depth whose search takes "
            f"{plan.speed_cpu_seconds:g} s or more.",
        ),
        solving_table(report.pons, report.reference),
        TextTable(
            "Pruning: minimax against alpha-beta, by depth",
            ("game", "depth", "minimax nodes", "alpha-beta nodes", "ratio"),
            [
                (
                    r.game,
                    str(r.depth),
                    f"{r.minimax_nodes:,}",
                    f"{r.alphabeta_nodes:,}",
                    f"{r.minimax_nodes / r.alphabeta_nodes:.1f}x",
                )
                for r in report.pruning
            ],
            f"Nodes over the same {plan.pruning_positions} mid-game positions per game; alpha-beta's "
            "count is its whole iterative deepening up to that depth.",
        ),
        TextTable(
            "Effective branching factor: how close to twice as deep",
            ("game", "b (minimax)", "sqrt(b): the ideal", "b (alpha-beta)", "depth factor (ideal 2)"),
            _branching_rows(report.pruning),
            "With perfect move ordering alpha-beta's effective branching factor is the square root of "
            "minimax's, so it searches twice as deep for the same work. Factors are over the deepest two "
            "plies measured; *depth factor* = ln b / ln b(alpha-beta), how many times deeper alpha-beta "
            "reaches for equal nodes.",
        ),
    ]
    if report.easyai:
        ours = {row.empties: row.seconds for row in report.easyai if row.engine == report.easyai[0].engine}
        easyai = sorted(report.easyai, key=lambda row: (row.empties == "all", row.empties))
        tables.append(
            TextTable(
                "Side by side with easyAI 2.0.12 (Connect Four)",
                (
                    "empty cells = depth",
                    "engine",
                    "positions",
                    "agree",
                    "seconds",
                    "nodes",
                    "nodes/s",
                    "time vs ours",
                ),
                [
                    (
                        r.empties,
                        r.engine,
                        str(r.positions),
                        str(r.agree),
                        f"{r.seconds:.2f}",
                        f"{r.nodes:,}",
                        f"{r.nodes_per_second:,.0f}",
                        ratio_text(r.seconds / ours[r.empties]) if ours[r.empties] else "-",
                    )
                    for r in easyai
                ],
                f"The first {plan.easyai_positions} positions of Test_L3_R1 with {report.easyai_depth} "
                "empty cells, each searched by every engine to a depth equal to its empty cells, so every "
                "value is exact; *agree* counts values (win, draw or loss) matching Pons' score. easyAI runs "
                "on its own ConnectFour (numpy boards) and on our bitboard rules, which tells its search "
                "from its rules. easyAI's nodes are its `make_move` calls; ours count every position "
                "visited.",
            )
        )
    if report.kernel is not None:
        tables += kernel_tables(report.kernel)
    return tables


def render_markdown(report: EngineReport) -> str:
    """The report as the engine section of docs/benchmarks.md."""
    parts = [
        "## Engine",
        "",
        f"- Command: `{report.command}`",
        f"- Date: {report.date}",
        f"- Machine: {report.machine}",
        "- Times are CPU seconds of the benchmark process (one core), unaffected by other load, with the "
        "objects of the command's own imports frozen out of the garbage collector's scans (`gc.freeze`) as "
        "the server does; Pons' C++ solver's, when measured, are its own wall-clock times (see its table).",
    ]
    for table in report_tables(report):
        parts += ["", table.markdown()]
    parts += ["", *(f"*{note}*" for note in report.notes)]
    return "\n".join(parts).rstrip() + "\n"


def _branching_rows(rows: list[PruningRow]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for game in dict.fromkeys(row.game for row in rows):
        factors = effective_branching(rows, game)
        if factors is None:
            continue
        plain, pruned = factors
        if plain < ENDING_TREE_BRANCHING or pruned <= 1:
            depth_factor = "n/a: the game ends within these depths"
        else:
            depth_factor = f"{math.log(plain) / math.log(pruned):.2f}"
        found.append((game, f"{plain:.2f}", f"{math.sqrt(plain):.2f}", f"{pruned:.2f}", depth_factor))
    return found
