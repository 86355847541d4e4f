"""Controlled noise: weaker levels that still play like someone trying.

A bot that simply searches shallower stops being weaker once the game is small
enough to see to the end, as tic-tac-toe always is and Connect Four near the
end. Those levels instead choose among the moves they know the value of, on
purpose not always the best, and in a measured way:

- ``rate`` and ``margin``: with probability ``rate``, any move whose value is
  within ``margin`` of the best (uniformly); otherwise one of the best;
- ``temperature``: a move drawn with probability proportional to
  ``exp(value / temperature)`` (softmax), so close moves are often swapped and
  bad ones rarely played.

Values are on a scale a person can set by hand: a won game is +1, a lost game
-1, a draw 0, and a heuristic score ``s`` is squashed to ``s / (|s| + scale)``,
strictly between the two, where ``scale`` is the evaluation the game's level
table rates as "half a win". So ``margin = 1`` lets a bot turn a win into a draw
(or a draw into a loss) but never a win into a loss.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from bots.result import is_decisive
from games import Move

TOLERANCE = 1e-9


@dataclass(frozen=True, slots=True)
class Noise:
    """How far from the best move a level strays; see the module docstring."""

    rate: float = 0.0
    margin: float = 0.0
    temperature: float = 0.0


def points(score: int, scale: float) -> float:
    """A search score on the noise scale: +1 won, -1 lost, heuristics strictly between."""
    if is_decisive(score):
        return 1.0 if score > 0 else -1.0
    return score / (abs(score) + scale)


def choose_noisily(scores: dict[Move, int], noise: Noise, scale: float, rng: random.Random) -> Move:
    """A move from ``scores`` (search scores by move) chosen with ``noise``.

    Without a deviation, one of the moves with the best score, at random among
    equals: a level with noise has no reason to always play the same of two
    equal moves, and varied games are better to play against.
    """
    if not scores:
        raise ValueError("no moves to choose from")
    moves = list(scores)
    if noise.temperature > 0:
        values = [points(scores[move], scale) for move in moves]
        top = max(values)
        weights = [math.exp((value - top) / noise.temperature) for value in values]
        return rng.choices(moves, weights)[0]
    if noise.rate > 0 and rng.random() < noise.rate:
        floor = max(points(score, scale) for score in scores.values()) - noise.margin - TOLERANCE
        return rng.choice([move for move in moves if points(scores[move], scale) >= floor])
    best = max(scores.values())
    return rng.choice([move for move in moves if scores[move] == best])
