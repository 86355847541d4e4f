"""Othello's exact endgame: with few empty squares left, every line searched to the end of the game.

The score is the final disc difference for the side to move (its discs minus the opponent's when neither
side can move), with best play from both sides; a move is best when it keeps that difference. The search
is the seed's negamax with alpha-beta, scores negated on return and cut at ``alpha >= beta``, ordered as
endgame solvers order it: far from the end, *fastest first* (the move that leaves the opponent the fewest
replies, which keeps the tree narrow); near it, *parity* (first into the regions of the board with an odd
number of empty squares, where the side to move gets the last disc), corners before X-squares within each.

The code here is the reference; where the compiled kernel has Othello (:mod:`bots.speedups`), the same
search runs in C (``bots/kernel/othello_endgame.h``), with the same scores and best moves, and this module
hands positions to it. A solve takes an optional :class:`bots.deadline.Deadline` and raises
:class:`bots.deadline.OutOfTime` past it.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from bots import speedups
from bots.deadline import CHECK_MASK, Deadline, OutOfTime
from bots.evaluation.othello import SQUARE_WEIGHTS
from bots.result import WIN, SearchResult
from games.othello import FULL, PASS, Othello, flips, legal_placements, squares

GAME = "othello"
MAX_EMPTIES = 20
"""The most empty squares a level may solve from: 20 take seconds compiled, each more some three times
as long."""
MAX_DIFFERENCE = 64
"""No final disc difference is larger: (-65, 65) is the full window."""
FASTEST_FIRST_EMPTIES = 7
"""From this many empty squares up, moves are ordered fastest first; below it, by parity."""
QUADRANTS = (0x0F0F0F0F, 0xF0F0F0F0, 0x0F0F0F0F << 32, 0xF0F0F0F0 << 32)
"""The board's four 4x4 corners: the regions whose parity the ordering reads."""
SQUARE_ORDER = tuple(sorted(range(64), key=lambda square: -SQUARE_WEIGHTS[square]))
"""Every square, most promising first (corners first, X-squares last): the ties' order in both orderings."""
_RANK = {square: rank for rank, square in enumerate(SQUARE_ORDER)}


@dataclass(frozen=True, slots=True)
class Endgame:
    """A solved position: its exact final disc difference for the side to move, and how it was found."""

    difference: int
    best_moves: tuple[int, ...]
    """The moves that keep ``difference``, ascending (PASS alone when the side to move must pass); only
    the first one found unless every best move was asked for."""
    nodes: int


def empties(position: Othello) -> int:
    """The empty squares of ``position``."""
    return position.empty().bit_count()


def decisive_score(difference: int) -> int:
    """A final disc difference on :mod:`bots.result`'s scale: a won (lost) ending is decisive, ``WIN``
    less the margin's shortfall from a 64-disc win, so a wider margin scores more; a draw scores 0."""
    if difference > 0:
        return WIN - MAX_DIFFERENCE + difference
    if difference < 0:
        return -WIN + MAX_DIFFERENCE + difference
    return 0


def solve(
    position: Othello, *, all_best: bool = True, deadline: Deadline | None = None, compiled: bool = True
) -> Endgame:
    """The exact final disc difference of ``position`` and its best moves (see :class:`Endgame`).

    ``compiled=False`` keeps the search in Python where the kernel has Othello. Raises ``ValueError`` if
    the game is over, :class:`bots.deadline.OutOfTime` past ``deadline``.
    """
    if position.outcome() is not None:
        raise ValueError(f"no move to solve: the game is over ({position.outcome()})")
    kernel = speedups.kernel_type(GAME) if compiled else None
    if kernel is not None:
        difference, best_moves, nodes = kernel.solve_endgame(speedups.state_of(position), all_best, deadline)
        return Endgame(difference, tuple(best_moves), nodes)
    return _Solver(deadline).solve_root(position, all_best)


def endgame_move(position: Othello, rng: random.Random, time_ms: float | None = None) -> SearchResult | None:
    """One of the best moves of ``position``, picked by ``rng``, as the result a level reports: a decisive
    or drawn score (:func:`decisive_score`), the empty squares as its depth (every line was searched to
    the end); ``None`` if the solve did not finish within ``time_ms``."""
    started = time.perf_counter()
    try:
        endgame = solve(position, deadline=None if time_ms is None else Deadline(time_ms))
    except OutOfTime:
        return None
    move = rng.choice(endgame.best_moves)
    elapsed_ms = (time.perf_counter() - started) * 1000
    score = decisive_score(endgame.difference)
    return SearchResult(move, score, None, endgame.nodes, (move,), elapsed_ms, "solved")


class _Solver:
    """One solve's counters and deadline; the search itself works on bare bitboards."""

    def __init__(self, deadline: Deadline | None) -> None:
        self.deadline = deadline
        self.nodes = 0

    def solve_root(self, position: Othello, all_best: bool) -> Endgame:
        """The root: the best difference with a full window, then, if asked, each other move tested
        with a null window at it (a move is best when it fails high there)."""
        own, opponent = position.discs[position.turn], position.discs[1 - position.turn]
        self.nodes += 1
        moves = ordered_moves(own, opponent, legal_placements(own, opponent))
        if not moves:  # the side to move must pass: the one move
            difference = -self.negamax(opponent, own, -MAX_DIFFERENCE - 1, MAX_DIFFERENCE + 1)
            return Endgame(difference, (PASS,), self.nodes)
        best, best_move, alpha = -MAX_DIFFERENCE - 1, moves[0], -MAX_DIFFERENCE - 1
        for square in moves:
            score = -self.child(own, opponent, square, -MAX_DIFFERENCE - 1, -alpha)
            if score > best:
                best, best_move, alpha = score, square, max(alpha, score)
        best_moves = [best_move]
        if all_best:  # the moves before best_move scored below it; those after it may tie
            best_moves += [
                square
                for square in moves[moves.index(best_move) + 1 :]
                if -self.child(own, opponent, square, -best, -best + 1) >= best
            ]
        return Endgame(best, tuple(sorted(best_moves)), self.nodes)

    def child(self, own: int, opponent: int, square: int, alpha: int, beta: int) -> int:
        """The negamax score of the position after the side with ``own`` plays on ``square``."""
        flipped = flips(own, opponent, square)
        return self.negamax(opponent ^ flipped, own | flipped | 1 << square, alpha, beta)

    def negamax(self, own: int, opponent: int, alpha: int, beta: int) -> int:
        """The final disc difference for the side with ``own`` to move, exact within (alpha, beta);
        fail-soft beyond it."""
        self.nodes += 1
        if not self.nodes & CHECK_MASK and self.deadline is not None:
            self.deadline.check()
        placements = legal_placements(own, opponent)
        if not placements:
            if not legal_placements(opponent, own):
                return own.bit_count() - opponent.bit_count()
            return -self.negamax(opponent, own, -beta, -alpha)  # a pass
        best = -MAX_DIFFERENCE - 1
        for square in ordered_moves(own, opponent, placements):
            score = -self.child(own, opponent, square, -beta, -alpha)
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        break
        return best


def ordered_moves(own: int, opponent: int, placements: int) -> list[int]:
    """The placements in the order the search tries them: fastest first with many empty squares,
    parity with few (see the module's docstring); ties in :data:`SQUARE_ORDER`."""
    empty = ~(own | opponent) & FULL
    moves = sorted(squares(placements), key=_RANK.__getitem__)
    if empty.bit_count() >= FASTEST_FIRST_EMPTIES:
        return sorted(moves, key=lambda square: _replies(own, opponent, square))
    odd = 0
    for quadrant in QUADRANTS:
        if (empty & quadrant).bit_count() & 1:
            odd |= quadrant
    return sorted(moves, key=lambda square: not odd >> square & 1)


def _replies(own: int, opponent: int, square: int) -> int:
    """How many placements the opponent has after the side with ``own`` plays on ``square``."""
    flipped = flips(own, opponent, square)
    return legal_placements(opponent ^ flipped, own | flipped | 1 << square).bit_count()
