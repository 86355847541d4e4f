"""Plain minimax: every line to the depth, no pruning, no table. The test oracle.

Written in the textbook two-player form (one side maximises the root player's
score, the other minimises it) rather than as negamax, so that it shares as
little as possible with the search it checks: only the scores of finished games
and the evaluation at the horizon, which define what a depth-``d`` value is.
Where the game's evaluation names its captures (chess), the horizon is scored
by the quiescence search (:mod:`bots.quiescence`) with a window that leaves its
root value exact: this oracle checks the main search's pruning, table and
ordering. The quiescence's own cuts have an oracle of their own,
:func:`quiet_value`, every capture sequence in full, which is cheap only where
few captures are on the board.
"""

from __future__ import annotations

import time
from collections.abc import Hashable

from bots.evaluation import Evaluator
from bots.quiescence import Quiescence
from bots.result import INFINITY, SearchResult, outcome_score
from games import Move, Position


def minimax(position: Position, evaluator: Evaluator, depth: int) -> SearchResult:
    """The exact depth-``depth`` value of ``position`` for its side to move, and a best move."""
    if depth < 1:
        raise ValueError(f"search depth must be at least 1, got {depth}")
    if not position.legal_moves():
        raise ValueError(f"no move to search: the game is over ({position.outcome()})")
    started = time.perf_counter()
    root_turn = position.turn
    nodes = 0
    quiescence = Quiescence(evaluator) if evaluator.captures is not None else None

    def leaf_value(node: Position) -> int:
        """The horizon's score for the side to move there."""
        if quiescence is None:
            return evaluator.evaluate(node)
        return quiescence.search(node, -INFINITY, INFINITY)[0]

    def value(node: Position, remaining: int, ply: int) -> tuple[int, tuple[Move, ...]]:
        """The root player's score of ``node`` and the line that gets it."""
        nonlocal nodes
        nodes += 1
        outcome = node.outcome()
        if outcome is not None:
            return outcome_score(outcome, root_turn, ply), ()
        if remaining == 0:
            score = leaf_value(node)
            return (score if node.turn == root_turn else -score), ()
        maximising = node.turn == root_turn
        best_score, best_line = (-INFINITY if maximising else INFINITY), ()
        for move in node.legal_moves():
            score, line = value(node.play(move), remaining - 1, ply + 1)
            if score > best_score if maximising else score < best_score:
                best_score, best_line = score, (move, *line)
        return best_score, best_line

    score, line = value(position, depth, 0)
    elapsed_ms = (time.perf_counter() - started) * 1000
    return SearchResult(line[0], score, depth, nodes, line, elapsed_ms)


def quiet_value(position: Position, evaluator: Evaluator, known: dict[Hashable, int] | None = None) -> int:
    """The evaluation of ``position`` for its side to move, once the captures are played out: every
    capture sequence in full, each side taking the best of stopping (the evaluation) and capturing on.

    ``known`` remembers the values found by key: the same captures in another order meet again.
    """
    if evaluator.captures is None:
        return evaluator.evaluate(position)
    known = {} if known is None else known
    key = position.key()
    if key not in known:
        best = evaluator.evaluate(position)
        for move in evaluator.captures(position):
            best = max(best, -quiet_value(position.play(move), evaluator, known))
        known[key] = best
    return known[key]
