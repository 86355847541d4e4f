"""Per-game heuristic evaluation, found by game name.

A game's evaluation is the module ``bots/evaluation/<game name>.py``. It defines

- ``evaluate(position) -> int``: how good the position is for the side to move,
  with ``|score| < 10_000`` so that it never reaches the search's win scores;
- optionally ``order_key(position, move) -> int``: how promising ``move`` looks
  before it is searched (bigger is tried first), the game's own move ordering
  (centre-first for Connect Four, corners for Othello, captures for checkers);
- optionally ``captures(position) -> list of moves``: the moves to play on past
  the search's horizon until the position is quiet (a quiescence search,
  :mod:`bots.quiescence`), for a game whose evaluation misjudges a position in
  the middle of an exchange (chess).

Adding a game to the bots is adding that one module: nothing here lists games.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from games import Move, Position

EVALUATION_LIMIT = 10_000
"""Every heuristic evaluation lies strictly between minus and plus this."""


class NoEvaluationError(LookupError):
    """A game has no evaluation module, or the module breaks the contract."""

    def __init__(self, game: str, reason: str) -> None:
        super().__init__(f"no evaluation for game {game!r}: {reason}")
        self.game = game
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Evaluator:
    """What the search needs of a game's evaluation module."""

    game: str
    evaluate: Callable[[Position], int]
    order_key: Callable[[Position, Move], int] | None = None
    captures: Callable[[Position], list[Move]] | None = None
    """The moves a quiescence search plays past the horizon; ``None``: the evaluation is trusted as is."""


@cache
def evaluator_for(game: str) -> Evaluator:
    """The evaluation of ``game``; raises :class:`NoEvaluationError` if there is none."""
    if not game.isidentifier():
        raise NoEvaluationError(game, "a game name is a Python identifier")
    module_name = f"{__name__}.{game}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise  # the module exists but one of its own imports is missing
        raise NoEvaluationError(game, f"expected a module bots/evaluation/{game}.py") from None
    evaluate = getattr(module, "evaluate", None)
    if not callable(evaluate):
        raise NoEvaluationError(game, f"bots/evaluation/{game}.py defines no evaluate(position)")
    order_key = getattr(module, "order_key", None)
    if order_key is not None and not callable(order_key):
        raise NoEvaluationError(game, f"order_key in bots/evaluation/{game}.py is not callable")
    captures = getattr(module, "captures", None)
    if captures is not None and not callable(captures):
        raise NoEvaluationError(game, f"captures in bots/evaluation/{game}.py is not callable")
    return Evaluator(game, evaluate, order_key, captures)
