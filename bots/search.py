"""One entry point to every search style, by game name.

- ``alphabeta``: negamax with alpha-beta pruning and the engine parts around it
  (:mod:`bots.negamax`), the bots' main search;
- ``minimax``: plain minimax without pruning (:mod:`bots.minimax`), the oracle the
  tests hold alpha-beta to, and a baseline for the benchmarks;
- ``expectimax``: the best expected result against a modelled, fallible opponent
  (:mod:`bots.expectimax`).

All return a :class:`bots.result.SearchResult`, with scores on one scale.
"""

from __future__ import annotations

from bots.evaluation import evaluator_for
from bots.expectimax import Expectimax, OpponentModel, UniformOpponent
from bots.minimax import minimax
from bots.negamax import AlphaBeta
from bots.result import WIN, SearchResult
from games import Position

__all__ = ["STYLES", "WIN", "SearchResult", "search"]

STYLES = ("alphabeta", "minimax", "expectimax")


def search(
    game: str,
    position: Position,
    *,
    style: str = "alphabeta",
    depth: int | None = None,
    time_ms: float | None = None,
    opponent: OpponentModel | None = None,
) -> SearchResult:
    """Search ``position`` of ``game`` in ``style`` to ``depth`` plies and/or for ``time_ms``.

    ``opponent`` is expectimax's model of the opponent (uniformly random by
    default). Minimax has no time budget: it needs a depth.
    """
    evaluator = evaluator_for(game)
    if style == "alphabeta":
        return AlphaBeta(evaluator).search(position, depth, time_ms)
    if style == "expectimax":
        return Expectimax(evaluator, opponent or UniformOpponent()).search(position, depth, time_ms)
    if style == "minimax":
        if depth is None or time_ms is not None:
            raise ValueError("minimax searches to a fixed depth only: give a depth and no time budget")
        return minimax(position, evaluator, depth)
    raise ValueError(f"unknown search style {style!r}; styles: {', '.join(STYLES)}")
