"""The variety benchmark: does a bot play the same game twice against a person who replays a line?

Lichess's complaint about "farming" bot accounts: a person who beat a bot once plays the same moves
again, and wins again, if the bot answers the same way. So for each game and level, a scripted human
plays its fixed line (:func:`scripted_move`: the same reply to the same position, every game) against the
level, with the level's own rng seeded per match as a bot seeds it, and the games that come out are
counted: how many differ, and for how many plies all of them agree. Beside it, what the variety costs:
the nodes of an alpha-beta search that proves the root's ties for the best (given an rng) against one
that does not, on the same mid-game positions.

Where a level's search would take too long for a benchmark of minutes, it plays a shallower depth here
and the table says so (:attr:`VarietyPlan.depth_caps`); long games are cut at a ply cap, past which a
person replaying a line has long had the answer to the question.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from bench.engine import sample_positions
from bench.machine import machine_description
from bench.tables import TextTable
from bots.evaluation import evaluator_for
from bots.levels import LEVEL_COUNT, Level, choose_move, level
from bots.negamax import AlphaBeta
from games import Move, Position, get_game

Tick = Callable[[], None]
SEATS = ("first", "second")
"""The bot's seat: it moves first, or the human does."""


@dataclass(frozen=True, slots=True)
class VarietyPlan:
    """What the benchmark plays: per game, its levels, and ``matches`` games per level and seat."""

    games: tuple[str, ...] = ("tictactoe", "connect4", "othello", "checkers", "chess")
    levels: tuple[int, ...] = tuple(range(1, LEVEL_COUNT + 1))
    matches: int = 20
    max_plies: dict[str, int] = field(default_factory=lambda: {"checkers": 80, "chess": 16})
    """Games of these are cut after so many plies; the others are played to the end."""
    depth_caps: dict[tuple[str, int], int] = field(default_factory=lambda: {("chess", 6): 3, ("chess", 7): 3})
    """Levels that play a shallower search here than their own: chess searches in Python, and depth 4
    takes seconds a move."""
    cost_searches: tuple[tuple[str, int, int], ...] = (
        ("tictactoe", 9, 30), ("connect4", 7, 30), ("othello", 6, 30), ("checkers", 8, 30), ("chess", 3, 10),
    )  # fmt: skip
    """(game, depth, positions) of the cost table: searches with and without the ties proven."""

    @classmethod
    def quick(cls) -> VarietyPlan:
        """A small run that checks the benchmark works."""
        return cls(
            games=("tictactoe", "connect4"), levels=(1, 5), matches=3, cost_searches=(("connect4", 5, 3),)
        )

    def playable(self, game: str, number: int) -> Level | None:
        """The level as this benchmark plays it, or ``None`` for one that no search of ours plays (an
        outside engine)."""
        row = level(game, number)
        if row.engine is not None:
            return None
        cap = self.depth_caps.get((game, number))
        if cap is None:
            return row
        return replace(row, depth=min(row.depth or cap, cap), time_ms=None)


@dataclass(frozen=True, slots=True)
class VarietyRow:
    """One level of one game: the games it played from each seat."""

    game: str
    level: int
    name: str
    depth_note: str
    """How the level played here, where not as in its table; else empty."""
    games: dict[str, list[tuple[Move, ...]]]
    """By the bot's seat (:data:`SEATS`), each game's moves."""
    cpu_s: float

    def distinct(self, seat: str) -> int:
        return len(set(self.games[seat]))

    def agreed_plies(self, seat: str) -> int:
        """How many plies every game of ``seat`` shares from the start."""
        games = self.games[seat]
        shortest = min(len(moves) for moves in games)
        for ply in range(shortest):
            if len({moves[ply] for moves in games}) > 1:
                return ply
        return shortest

    def median_plies(self) -> float:
        return statistics.median(len(moves) for seat in SEATS for moves in self.games[seat])


@dataclass(frozen=True, slots=True)
class CostRow:
    """The nodes of the same searches with the root's ties proven (an rng given) and without."""

    game: str
    depth: int
    positions: int
    plain_nodes: int
    ties_nodes: int
    score_mismatches: int
    """Positions where the two searches scored differently: a bug, where not 0."""


@dataclass(frozen=True, slots=True)
class VarietyReport:
    plan: VarietyPlan
    rows: list[VarietyRow]
    costs: list[CostRow]
    command: str
    machine: str
    date: str
    skipped: list[str]
    """Levels not played, and why."""


def scripted_move(searcher: AlphaBeta, position: Position) -> Move:
    """The scripted human's move: the best of a 1-ply search without an rng, so the same position always
    gets the same reply, as from a person who replays a line that worked."""
    return searcher.search(position, 1).move


def play_match(game: str, row: Level, bot_seat: int, seed: int, max_plies: int | None) -> tuple[Move, ...]:
    """One game of ``row`` against the scripted human, the bot in ``bot_seat`` (0 moves first), its rng
    seeded with ``seed``; the moves, cut at ``max_plies``."""
    position = get_game(game).start()
    human = AlphaBeta(evaluator_for(game))
    rng = random.Random(seed)
    moves: list[Move] = []
    while position.outcome() is None and (max_plies is None or len(moves) < max_plies):
        if position.turn == bot_seat:
            move, _ = choose_move(position, row, rng)
        else:
            move = scripted_move(human, position)
        moves.append(move)
        position = position.play(move)
    return tuple(moves)


def measure_level(plan: VarietyPlan, game: str, number: int, row: Level, tick: Tick) -> VarietyRow:
    """``plan.matches`` games of ``row`` from each seat, match ``i`` seeded ``i``."""
    started = time.process_time()
    games: dict[str, list[tuple[Move, ...]]] = {}
    for bot_seat, seat in enumerate(SEATS):
        games[seat] = []
        for match in range(plan.matches):
            games[seat].append(play_match(game, row, bot_seat, match, plan.max_plies.get(game)))
            tick()
    shipped = level(game, number)
    note = "" if row == shipped else f"depth {row.depth}"
    return VarietyRow(game, number, shipped.name, note, games, time.process_time() - started)


def measure_cost(game: str, depth: int, count: int) -> CostRow:
    """Nodes of a ``depth``-ply search of ``count`` mid-game positions, without an rng and with one."""
    plain = ties = mismatches = 0
    for index, position in enumerate(sample_positions(game, count, seed=5)):
        found = AlphaBeta(evaluator_for(game)).search(position, depth)
        varied = AlphaBeta(evaluator_for(game)).search(position, depth, rng=random.Random(index))
        plain, ties = plain + found.nodes, ties + varied.nodes
        mismatches += varied.score != found.score
    return CostRow(game, depth, count, plain, ties, mismatches)


def run_variety_benchmark(
    plan: VarietyPlan, command: str, track: Callable[[str, int], Tick] | None = None
) -> VarietyReport:
    """Every level of every game of ``plan``; ``track(description, total)`` gives a tick per game."""
    rows: list[VarietyRow] = []
    skipped: list[str] = []
    for game in plan.games:
        for number in plan.levels:
            row = plan.playable(game, number)
            if row is None:
                skipped.append(f"{game} level {number} (an outside engine, not a search of ours)")
                continue
            tick = track(f"{game} level {number}", plan.matches * len(SEATS)) if track else lambda: None
            rows.append(measure_level(plan, game, number, row, tick))
    costs = []
    for game, depth, count in plan.cost_searches:
        tick = track(f"{game} depth {depth}: nodes", 1) if track else lambda: None
        costs.append(measure_cost(game, depth, count))
        tick()
    date = time.strftime("%Y-%m-%d")
    return VarietyReport(plan, rows, costs, command, machine_description(), date, skipped)


def variety_table(report: VarietyReport) -> TextTable:
    header = ("game", "level", "depth", "distinct (bot 1st)", "distinct (bot 2nd)", "shared plies (1st)",
              "shared plies (2nd)", "plies", "CPU s")  # fmt: skip
    rows = [
        (row.game, f"{row.level} {row.name}", row.depth_note or "its own", str(row.distinct("first")),
         str(row.distinct("second")), str(row.agreed_plies("first")), str(row.agreed_plies("second")),
         f"{row.median_plies():g}", f"{row.cpu_s:.1f}")
        for row in report.rows
    ]  # fmt: skip
    caps = ", ".join(f"{game} after {plies}" for game, plies in report.plan.max_plies.items())
    matches = report.plan.matches
    caption = (
        f"{matches} games per level with the bot moving first (1st), {matches} with it moving second (2nd), "
        "against a scripted human who replays its line (the best move of a 1-ply search: the same reply to "
        f"the same position); the bot's rng is seeded per match, 0 to {matches - 1}. Distinct: how many of "
        "the games differ; shared plies: how many plies all of them have in common from the start; plies: "
        f"the median game's length. Games are cut at a ply cap: {caps or 'none'}. Depth: where the level "
        "searches shallower here than in its table, to keep the run to minutes."
    )
    return TextTable("Variety: distinct games against a replayed line", header, rows, caption)


def cost_table(report: VarietyReport) -> TextTable:
    rows = [
        (row.game, str(row.depth), str(row.positions), f"{row.plain_nodes:,}", f"{row.ties_nodes:,}",
         f"{row.ties_nodes / row.plain_nodes:.3f}x", str(row.score_mismatches))
        for row in report.costs
    ]  # fmt: skip
    caption = (
        "Nodes of the same alpha-beta searches (mid-game positions, a quarter to a half into random games, "
        "seed 5) without an rng, and with one: then the root searches each move after the first one point "
        "below the best so far, so that a tie for the best is proven rather than cut off, and the rng "
        "picks among the tied moves. Scores differ: positions where the two scored differently (a bug)."
    )
    header = ("game", "depth", "positions", "nodes", "nodes, ties proven", "ratio", "scores differ")
    return TextTable("Variety's cost: proving the root's ties", header, rows, caption)


def render_markdown(report: VarietyReport) -> str:
    """The report as the variety section of docs/benchmarks.md."""
    cpu = sum(row.cpu_s for row in report.rows)
    parts = [
        "## Variety",
        "",
        f"- Command: `{report.command}`",
        f"- Date: {report.date}",
        f"- Machine: {report.machine}",
        f"- CPU: {cpu:.0f} s in all (CPU seconds of the benchmark process)",
        "",
        variety_table(report).markdown(),
        "",
        cost_table(report).markdown(),
    ]
    if report.skipped:
        parts += ["", f"*Not played: {'; '.join(report.skipped)}.*"]
    return "\n".join(parts).rstrip() + "\n"


def summary(rows: Sequence[VarietyRow]) -> str:
    """One line: the levels that played one game only, from some seat."""
    same = [f"{row.game} {row.level} ({seat})" for row in rows for seat in SEATS if row.distinct(seat) == 1]
    return "every level varied its games" if not same else f"one game only: {', '.join(same)}"
