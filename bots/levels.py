"""Bot levels: named search budgets read from ``bots/levels.toml``, and the move a level plays.

The table is data so that calibration (tournaments, ratings) can tune it without
touching code; this module reads it, rejects a malformed table with an error
that names the game, the level and the field, and turns a level into a move
with :func:`choose_move`, the one function a bot calls.
"""

from __future__ import annotations

import random
import re
import time
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from bots import othello_endgame, perfect
from bots.evaluation import Evaluator, evaluator_for
from bots.expectimax import EpsilonGreedyOpponent, Expectimax, OpponentModel, UniformOpponent
from bots.negamax import AlphaBeta
from bots.noise import Noise, choose_noisily
from bots.result import SearchResult
from games import Move, Position

LEVEL_COUNT = 8
STYLES = ("alphabeta", "expectimax", "engine")
"""Our negamax alpha-beta, our expectimax, or an outside engine that the fleet runs (:mod:`bots.engine`)."""
ENGINE_NAME = re.compile(r"[a-z][a-z0-9_-]*")
UciValue = bool | int | str
OPPONENT_MODELS = ("uniform", "epsilon-greedy")
TABLE_PATH = Path(__file__).with_name("levels.toml")


class LevelTableError(ValueError):
    """The level table is malformed; the message says where and why."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


@dataclass(frozen=True, slots=True)
class OpponentSpec:
    """How an expectimax level models its opponent (see :mod:`bots.expectimax`)."""

    model: str
    epsilon: float = 0.0
    depth: int = 1


@dataclass(frozen=True, slots=True)
class EngineSpec:
    """An outside engine's part in a level: which engine of the fleet's, and the UCI options it plays
    the level with (``UCI_LimitStrength``, ``UCI_Elo``, ``Skill Level``, ...)."""

    name: str
    """The name the fleet knows the engine by (``plyarena bots --engine NAME=COMMAND``)."""
    options: tuple[tuple[str, UciValue], ...] = ()


@dataclass(frozen=True, slots=True)
class Level:
    """One row of the table: a named search budget for one game."""

    game: str
    number: int
    name: str
    description: str
    style: str
    depth: int | None = None
    time_ms: int | None = None
    noise: Noise | None = None
    opponent: OpponentSpec | None = None
    solver: bool = False
    eval_scale: float = 100.0
    """The game's "half a win" on the noise scale, from the game's table."""
    engine: EngineSpec | None = None
    """For ``style = "engine"``: the outside engine that plays the level, with its time_ms (move time)
    or depth."""
    solve_empties: int | None = None
    """With at most this many empty squares (Othello), the exact endgame picks the move
    (:mod:`bots.othello_endgame`), with half the level's time budget; the search plays past it."""


class _Fields:
    """Reads the fields of one TOML table, and complains about the rest."""

    def __init__(self, table: object, where: str) -> None:
        if not isinstance(table, dict):
            raise LevelTableError(where, f"expected a table, got {table!r}")
        self.table: dict[str, Any] = dict(table)
        self.where = where

    def error(self, name: str, reason: str) -> LevelTableError:
        return LevelTableError(f"{self.where}, field {name!r}", reason)

    def text(self, name: str) -> str:
        value = self.table.pop(name, None)
        if not isinstance(value, str) or not value.strip():
            raise self.error(name, f"expected a non-empty string, got {value!r}")
        return value

    def choice(self, name: str, choices: tuple[str, ...], default: str | None = None) -> str:
        value = self.table.pop(name, default)
        if value not in choices:
            raise self.error(name, f"expected one of {', '.join(choices)}, got {value!r}")
        return value

    def integer(self, name: str, minimum: int, required: bool = True) -> int | None:
        value = self.table.pop(name, None)
        if value is None and not required:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.error(name, f"expected an integer >= {minimum}, got {value!r}")
        return value

    def number(self, name: str, low: float, high: float, default: float | None = None) -> float:
        value = self.table.pop(name, default)
        if not isinstance(value, int | float) or isinstance(value, bool) or not low <= value <= high:
            raise self.error(name, f"expected a number from {low} to {high}, got {value!r}")
        return float(value)

    def flag(self, name: str) -> bool:
        value = self.table.pop(name, False)
        if not isinstance(value, bool):
            raise self.error(name, f"expected true or false, got {value!r}")
        return value

    def subtable(self, name: str, where: str) -> _Fields | None:
        value = self.table.pop(name, None)
        return None if value is None else _Fields(value, f"{self.where}, {where}")

    def done(self) -> None:
        if self.table:
            raise LevelTableError(self.where, f"unknown field(s): {', '.join(sorted(self.table))}")


def parse_table(text: str, source: str = TABLE_PATH.name) -> dict[str, tuple[Level, ...]]:
    """Every game's levels from the TOML ``text``; raises :class:`LevelTableError` if malformed."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise LevelTableError(source, f"not valid TOML: {error}") from None
    if not data:
        raise LevelTableError(source, "no games")
    return {game: _parse_game(game, table, source) for game, table in data.items()}


def _parse_game(game: str, table: object, source: str) -> tuple[Level, ...]:
    fields = _Fields(table, f"{source}, game {game!r}")
    eval_scale = fields.number("eval_scale", 1e-9, float("inf"))
    rows = fields.table.pop("levels", None)
    fields.done()
    if not isinstance(rows, list) or len(rows) != LEVEL_COUNT:
        count = len(rows) if isinstance(rows, list) else 0
        raise LevelTableError(fields.where, f"expected {LEVEL_COUNT} [[{game}.levels]] tables, got {count}")
    levels = tuple(
        _parse_level(game, index + 1, row, eval_scale, fields.where) for index, row in enumerate(rows)
    )
    names = [level.name for level in levels]
    if len(set(names)) != len(names):
        raise LevelTableError(fields.where, f"level names must differ, got {names}")
    return levels


def _parse_level(game: str, number: int, row: object, eval_scale: float, where: str) -> Level:
    fields = _Fields(row, f"{where}, level {number}")
    listed = fields.integer("level", 1)
    if listed != number:
        raise fields.error("level", f"levels must be listed 1 to {LEVEL_COUNT} in order, got {listed} here")
    name = fields.text("name")
    description = fields.text("description")
    style = fields.choice("style", STYLES)
    depth = fields.integer("depth", 1, required=False)
    time_ms = fields.integer("time_ms", 1, required=False)
    solver = fields.flag("solver")
    noise = _parse_noise(fields.subtable("noise", "noise"))
    opponent = _parse_opponent(fields.subtable("opponent", "opponent"))
    engine = _parse_engine(fields, style)
    solve_empties = _parse_solve_empties(fields, game, style, noise)
    fields.done()
    if solver and style != "alphabeta":
        raise fields.error("solver", 'an exact solver plays the best move: use style = "alphabeta"')
    if not solver and depth is None and time_ms is None:
        raise fields.error("depth", "a search level needs a depth, a time_ms, or both")
    if solver and time_ms is not None and depth is None:
        raise fields.error("depth", "a solver with a time budget needs a depth to search when time runs out")
    if style == "expectimax" and noise is not None:
        raise fields.error("noise", "expectimax levels are weakened by their opponent model, not by noise")
    if style != "expectimax" and opponent is not None:
        raise fields.error("opponent", "only expectimax levels model their opponent")
    if style == "expectimax" and opponent is None:
        opponent = OpponentSpec("uniform")
    if style == "engine" and (noise is not None or solver):
        raise fields.error("style", "an engine level plays the engine's move: no noise, no solver")
    return Level(
        game, number, name, description, style, depth, time_ms, noise, opponent, solver, eval_scale,
        engine, solve_empties,
    )  # fmt: skip


def _parse_solve_empties(fields: _Fields, game: str, style: str, noise: Noise | None) -> int | None:
    """The ``solve_empties`` field: a game with an exact endgame, a level that plays the best move."""
    name = "solve_empties"
    solve_empties = fields.integer(name, 1, required=False)
    if solve_empties is None:
        return None
    if game != othello_endgame.GAME:
        raise fields.error(name, f"only {othello_endgame.GAME} has an exact endgame solver")
    if style != "alphabeta" or noise is not None:
        raise fields.error(name, 'an exact endgame plays the best move: style = "alphabeta", no noise')
    most = othello_endgame.MAX_EMPTIES
    if solve_empties > most:
        raise fields.error(name, f"at most {most} (more takes too long a move), got {solve_empties}")
    return solve_empties


def _parse_engine(fields: _Fields, style: str) -> EngineSpec | None:
    """The ``engine`` and ``uci`` fields: required and allowed only with ``style = "engine"``."""
    name = fields.table.pop("engine", None)
    options = fields.subtable("uci", "uci")
    if style != "engine":
        if name is not None or options is not None:
            field = "engine" if name is not None else "uci"
            raise fields.error(field, 'only a level with style = "engine" names an engine and its options')
        return None
    if not isinstance(name, str) or not ENGINE_NAME.fullmatch(name):
        raise fields.error("engine", f'expected the engine\'s name, such as "stockfish", got {name!r}')
    pairs: list[tuple[str, UciValue]] = []
    for option, value in options.table.items() if options is not None else ():
        if not isinstance(value, bool | int | str):
            expected = "true/false, a number or text"
            raise fields.error("uci", f"option {option!r}: expected {expected}, got {value!r}")
        pairs.append((option, value))
    return EngineSpec(name, tuple(pairs))


def _parse_noise(fields: _Fields | None) -> Noise | None:
    if fields is None:
        return None
    if "temperature" in fields.table:
        noise = Noise(temperature=fields.number("temperature", 1e-6, 1e6))
    else:
        noise = Noise(rate=fields.number("rate", 0.0, 1.0), margin=fields.number("margin", 0.0, 2.0))
    fields.done()  # also rejects a temperature given together with a rate or a margin
    return noise


def _parse_opponent(fields: _Fields | None) -> OpponentSpec | None:
    if fields is None:
        return None
    model = fields.choice("model", OPPONENT_MODELS)
    if model == "uniform":
        spec = OpponentSpec(model)
    else:
        spec = OpponentSpec(model, fields.number("epsilon", 0.0, 1.0), fields.integer("depth", 1) or 1)
    fields.done()
    return spec


@cache
def level_table() -> dict[str, tuple[Level, ...]]:
    """The shipped table, read once."""
    return parse_table(TABLE_PATH.read_text(encoding="utf-8"), f"bots/{TABLE_PATH.name}")


def levels(game: str) -> tuple[Level, ...]:
    """Levels 1 to 8 of ``game``."""
    table = level_table()
    if game not in table:
        raise KeyError(f"no levels for game {game!r}; the table has: {', '.join(sorted(table))}")
    return table[game]


def level(game: str, number: int) -> Level:
    """Level ``number`` (1 to 8) of ``game``."""
    if not isinstance(number, int) or not 1 <= number <= LEVEL_COUNT:
        raise ValueError(f"levels run from 1 to {LEVEL_COUNT}, got {number!r}")
    return levels(game)[number - 1]


def choose_move(
    position: Position, level: Level, rng: random.Random, time_budget_ms: float | None = None
) -> tuple[Move, SearchResult]:
    """The move ``level`` plays from ``position``, and the search behind it.

    ``time_budget_ms`` (from the bot's clock) caps the level's own time budget. A
    solver level without noise first plays the game's opening book, where it has
    one; then the exact score within three quarters of its time (the solver's node
    budget from its speed, :func:`bots.perfect.nodes_within`), failing that a move
    that keeps the position's value (win, draw or loss) within an eighth, and failing both its
    depth search with the time left. An Othello level with ``solve_empties`` plays
    its exact endgame (:mod:`bots.othello_endgame`) from that many empty squares on.
    ``rng`` drives the noise and the searches' choice between moves of equal value
    (see :mod:`bots.negamax`), so a seeded one replays the same games.
    """
    if not position.legal_moves():
        raise ValueError(f"no move to choose: the game is over ({position.outcome()})")
    time_ms = _tighter(level.time_ms, time_budget_ms)
    if level.solver:
        if level.noise is None:
            # The opening, where the solver is slow: the book's move, if the game has one.
            result = perfect.from_book(level.game, position)
            if result is not None:
                return result.move, result
        max_nodes = None if time_ms is None else perfect.nodes_within(level.game, time_ms * 3 / 4)
        started = time.perf_counter()
        try:
            if level.noise is None:
                try:
                    result = perfect.solve(level.game, position, max_nodes)
                except perfect.SolverBudgetExceeded:
                    # The exact score is out of reach: a move that keeps the win or the draw will do,
                    # and its search settles more positions within a sixth of that budget.
                    weak_nodes = None if max_nodes is None else max(1, max_nodes // 6)
                    result = perfect.solve_weakly(level.game, position, weak_nodes)
                return result.move, result
            return _noisy_choice(perfect.analyze(level.game, position, max_nodes), level, rng)
        except perfect.SolverBudgetExceeded:
            # Too early in the game for the solver: search with what is left of the time.
            if time_ms is not None:
                time_ms = max(1.0, time_ms - (time.perf_counter() - started) * 1000)
    if level.engine is not None:
        raise ValueError(
            f"level {level.number} of {level.game} is played by the outside engine {level.engine.name!r}, "
            "which a fleet runs (plyarena bots --engine), not by a search of ours"
        )
    if level.solve_empties is not None and othello_endgame.empties(position) <= level.solve_empties:
        started = time.perf_counter()
        result = othello_endgame.endgame_move(position, rng, None if time_ms is None else time_ms / 2)
        if result is not None:
            return result.move, result
        assert time_ms is not None  # only a deadline stops the solve: search with what is left
        time_ms = max(1.0, time_ms - (time.perf_counter() - started) * 1000)
    evaluator = evaluator_for(level.game)
    if level.style == "expectimax":
        assert level.opponent is not None  # the parser gives every expectimax level one
        result = Expectimax(evaluator, _opponent_model(level.opponent, evaluator)).search(
            position, level.depth, time_ms, rng
        )
        return result.move, result
    searcher = AlphaBeta(evaluator)
    if level.noise is None:
        result = searcher.search(position, level.depth, time_ms, rng)
        return result.move, result
    return _noisy_choice(searcher.analyze(position, level.depth, time_ms), level, rng)


def _noisy_choice(
    analysis: dict[Move, SearchResult], level: Level, rng: random.Random
) -> tuple[Move, SearchResult]:
    assert level.noise is not None
    scores = {move: result.score for move, result in analysis.items()}
    move = choose_noisily(scores, level.noise, level.eval_scale, rng)
    return move, analysis[move]


def _opponent_model(spec: OpponentSpec, evaluator: Evaluator) -> OpponentModel:
    if spec.model == "uniform":
        return UniformOpponent()
    return EpsilonGreedyOpponent(evaluator, spec.epsilon, spec.depth)


def _tighter(first: float | None, second: float | None) -> float | None:
    """The smaller of two optional budgets."""
    if first is None:
        return second
    return first if second is None else min(first, second)
