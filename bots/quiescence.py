"""Quiescence search: captures played on past the horizon, so that no leaf is scored mid-exchange.

A search that stops at a fixed depth scores whatever position it stops in: one
where a queen has just taken a defended pawn looks a pawn up, one ply before the
queen is lost. At the horizon, a game whose evaluation module defines
``captures`` (chess) searches on through captures alone until none is worth
making. Each node may also *stand pat*: decline every capture and take the
static evaluation, since the side to move is never forced to capture (in these
games) and has at least that. As in :mod:`bots.negamax`, a score is from the
side to move, negated on return, and a node stops once ``alpha >= beta``.
"""

from __future__ import annotations

from bots.evaluation import Evaluator
from games import Position


class Quiescence:
    """The captures-only search of one game's evaluation; :meth:`search` scores a leaf of the main search."""

    __slots__ = ("_captures", "_evaluate", "_order_key", "nodes")

    def __init__(self, evaluator: Evaluator) -> None:
        if evaluator.captures is None:
            raise ValueError(f"the evaluation of {evaluator.game} names no captures to search")
        self._evaluate = evaluator.evaluate
        self._captures = evaluator.captures
        self._order_key = evaluator.order_key
        self.nodes = 0
        """Positions reached by a capture, over every search so far."""

    def search(self, position: Position, alpha: int, beta: int) -> tuple[int, int]:
        """``position``'s score for its side to move once the captures are played out, fail-soft in the
        window (alpha, beta); and how many positions beyond ``position`` it took."""
        before = self.nodes
        score = self._search(position, alpha, beta)
        return score, self.nodes - before

    def _search(self, position: Position, alpha: int, beta: int) -> int:
        best = self._evaluate(position)  # standing pat: no capture at all
        if best >= beta:
            return best
        alpha = max(alpha, best)
        moves = self._captures(position)
        if self._order_key is not None and len(moves) > 1:
            order_key = self._order_key
            moves.sort(key=lambda move: order_key(position, move), reverse=True)
        for move in moves:
            self.nodes += 1
            score = -self._search(position.play(move), -beta, -alpha)
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        break
        return best
