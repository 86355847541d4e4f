"""Negamax with alpha-beta pruning: the bots' main search.

The seed formulation: a score is always from the side to move, so a child's
score is negated on return, and a node stops searching its moves once
``alpha >= beta`` (the opponent already has something better than this line
elsewhere). Around it the usual engine parts: iterative deepening, a
transposition table, move ordering (:mod:`bots.ordering`) and an optional time
budget.

A search to depth ``d`` returns exactly the depth-``d`` minimax value, whatever
the transposition table holds from earlier: an entry's score is reused only
when it was searched to the same depth, or when it is *resolved* (every line
under it reached the end of the game, so no deeper search can change it).
Entries of other depths still give their best move to try first. This costs a
few re-searches where a deeper entry would have done, and buys a search that is
reproducible (a level plays the same move from the same position, however warm
the table) and testable against plain minimax.

Without an ``rng``, of root moves that tie exactly on score the first searched
is played. Given one, a search plays any of them at random, so that a bot does
not play the same game twice where it has a choice of equal moves: it searches
the root's moves after the first with a window one point wider (below the best
so far), which makes a tie exact where it would have failed low, at the cost of
the tied moves' subtrees alone.

A game's ``key()`` may leave out history that its rules consult (checkers keeps
its draw counters out, as draughts engines do), so a position met again may now
be a draw by repetition. Whether the game is over is therefore asked before the
table; only a history effect deeper in the tree can still slip through (the
graph history interaction every engine with a transposition table lives with).

Where the compiled kernel has the game (:mod:`bots.speedups`: Connect Four, Othello and checkers, with
their own evaluation), each iteration's whole tree is searched in C, which reproduces this module step
for step: the same scores, moves, principal variations and node counts. The deepening, the time budget
and the results stay here, for both.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from bots.deadline import CHECK_MASK, Deadline, OutOfTime
from bots.evaluation import Evaluator
from bots.ordering import MoveOrderer
from bots.quiescence import Quiescence
from bots.result import INFINITY, SearchResult, is_decisive, outcome_score
from bots.speedups import CompiledSearch, compiled_search
from bots.transposition import (
    DEFAULT_SIZE_LOG2,
    EXACT,
    LOWER,
    UPPER,
    TranspositionTable,
    from_table,
    to_table,
)
from games import Move, Position

MAX_DEPTH = 100
"""Iterative deepening stops here when only a time budget bounds it."""


@dataclass(frozen=True, slots=True)
class _Line:
    """One root move, its score and the line the search expects after it."""

    move: Move
    score: int
    pv: tuple[Move, ...]


class AlphaBeta:
    """A reusable searcher for one game; keeps its transposition table between searches."""

    def __init__(
        self, evaluator: Evaluator, table: TranspositionTable | None = None, *, compiled: bool = True
    ) -> None:
        """``compiled=False`` keeps the search in Python even where the kernel has the game.

        With the kernel, the table's size is what counts: the kernel keeps a table of its own of that
        size, in C, and ``table`` stays empty.
        """
        self.evaluator = evaluator
        size_log2 = DEFAULT_SIZE_LOG2 if table is None else table.mask.bit_length()
        self.kernel: CompiledSearch | None = compiled_search(evaluator, size_log2) if compiled else None
        """The compiled searcher of this game, or ``None`` when the search runs in Python."""
        if table is None:  # a table of one slot where the kernel keeps the real one
            table = TranspositionTable(size_log2 if self.kernel is None else 0)
        self.table = table
        self.nodes = 0
        self.heuristic_leaves = 0
        """Leaves scored by the evaluation (or by a table entry that was): zero means resolved."""
        self._evaluate = evaluator.evaluate
        self.quiescence = Quiescence(evaluator) if evaluator.captures is not None else None
        """Where the game's evaluation asks for it (chess), the captures searched past the horizon."""
        self._orderer = MoveOrderer(evaluator.order_key)
        self._deadline: Deadline | None = None
        self._pv: list[tuple[Move, ...]] = []

    def search(
        self,
        position: Position,
        depth: int | None = None,
        time_ms: float | None = None,
        rng: random.Random | None = None,
    ) -> SearchResult:
        """The best move from ``position``, searched to ``depth`` plies or for ``time_ms``, or both.

        With a time budget, the result is that of the deepest iteration completed
        in time; the first iteration always completes, so there is always a move.
        ``rng`` chooses among the root moves that tie for the best (see the module
        docstring); without it the search is the same every time.
        """
        lines, completed, deadline = self._deepen(position, depth, time_ms, exact_root=False, rng=rng)
        best = lines[0] if rng is None else rng.choice(lines)
        return SearchResult(
            best.move,
            best.score,
            completed,
            self.nodes,
            self._extend_pv(position, best.pv, completed),
            deadline.elapsed_ms(),
        )

    def analyze(
        self, position: Position, depth: int | None = None, time_ms: float | None = None
    ) -> dict[Move, SearchResult]:
        """Every legal move with its own exact score at the depth reached, best first.

        Slower than :meth:`search` (no move is cut off at the root), for the levels
        that choose among several good moves on purpose.
        """
        lines, completed, deadline = self._deepen(position, depth, time_ms, exact_root=True)
        elapsed = deadline.elapsed_ms()
        return {
            line.move: SearchResult(
                line.move,
                line.score,
                completed,
                self.nodes,
                self._extend_pv(position, line.pv, completed),
                elapsed,
            )
            for line in lines
        }

    def _deepen(
        self,
        position: Position,
        depth: int | None,
        time_ms: float | None,
        exact_root: bool,
        rng: random.Random | None = None,
    ) -> tuple[list[_Line], int, Deadline]:
        """Iterative deepening: search depth 1, 2, ... and keep the last iteration completed."""
        if depth is None and time_ms is None:
            raise ValueError("a search needs a depth, a time budget, or both")
        if depth is not None and depth < 1:
            raise ValueError(f"search depth must be at least 1, got {depth}")
        moves = position.legal_moves()
        if not moves:
            raise ValueError(f"no move to search: the game is over ({position.outcome()})")
        max_depth = min(depth or MAX_DEPTH, MAX_DEPTH)
        deadline = Deadline(time_ms)
        self.nodes = 0
        self._orderer = MoveOrderer(self.evaluator.order_key)
        if self.kernel is not None:
            self.kernel.searcher.forget_ordering()
        self._pv = [()] * (max_depth + 2)
        self._deadline = None  # the first iteration always completes
        lines: list[_Line] = []
        completed = 0
        previous_ms = None
        for iteration in range(1, max_depth + 1):
            started_ms = deadline.elapsed_ms()
            self.heuristic_leaves = 0
            try:
                lines = self._search_root(position, moves, iteration, exact_root, ties=rng is not None)
            except OutOfTime:
                break
            completed = iteration
            self._deadline = deadline if time_ms is not None else None
            if self.heuristic_leaves == 0 or all(is_decisive(line.score) for line in lines):
                break  # resolved: deeper iterations would return the same
            spent_ms = deadline.elapsed_ms() - started_ms
            growth = max(1.0, spent_ms / previous_ms) if previous_ms else 1.0
            if spent_ms * growth > deadline.remaining_ms():
                break  # the next iteration would not finish in time
            previous_ms = spent_ms
        self._deadline = None
        return lines, completed, deadline

    def _search_root(
        self, position: Position, moves: list[Move], depth: int, exact: bool, ties: bool
    ) -> list[_Line]:
        """The root's moves searched to ``depth``, best first (ties in search order): all of them exactly
        if ``exact``, else every move that ties for the best if ``ties``, else the best one."""
        if self.kernel is not None:
            return self._search_root_compiled(position, depth, exact, ties)
        self.nodes += 1
        key = position.key()
        entry = self.table.get(key)
        moves = self._orderer.order(position, list(moves), entry.move if entry else None, 0)
        pv = self._pv
        alpha = -INFINITY
        lines: list[_Line] = []
        leaves_before = self.heuristic_leaves
        for move in moves:
            # With ties, a move that scores the best so far is searched exactly too: one point lower.
            window_alpha = -INFINITY if exact else alpha - 1 if ties and alpha > -INFINITY else alpha
            score = -self._negamax(position.play(move), depth - 1, -INFINITY, -window_alpha, 1)
            if exact or score > window_alpha:
                lines.append(_Line(move, score, (move, *pv[1])))
            alpha = max(alpha, score)
        lines.sort(key=lambda line: line.score, reverse=True)  # stable: ties keep the search's order
        best = lines[0]
        resolved = self.heuristic_leaves == leaves_before
        self.table.put(key, depth, best.score, EXACT, best.move, resolved)
        if exact:
            return lines
        return [line for line in lines if line.score == best.score] if ties else [best]

    def _search_root_compiled(self, position: Position, depth: int, exact: bool, ties: bool) -> list[_Line]:
        """:meth:`_search_root` in C: the kernel counts on from this searcher's counters and hands them
        back, even when the deadline stops it."""
        assert self.kernel is not None
        searcher = self.kernel.searcher
        searcher.nodes, searcher.heuristic_leaves = self.nodes, self.heuristic_leaves
        try:
            lines = searcher.search_root(self.kernel.state_of(position), depth, exact, self._deadline, ties)
        finally:
            self.nodes, self.heuristic_leaves = searcher.nodes, searcher.heuristic_leaves
        return [_Line(move, score, pv) for move, score, pv in lines]

    def _negamax(self, position: Position, depth: int, alpha: int, beta: int, ply: int) -> int:
        """The score of ``position`` for its side to move, exact if it lies within (alpha, beta).

        Fail-soft: below the window the result is an upper bound, above it a lower
        bound, and either may lie beyond the window.
        """
        self.nodes += 1
        if not self.nodes & CHECK_MASK and self._deadline is not None:
            self._deadline.check()
        pv = self._pv
        pv[ply] = ()
        if depth <= 0:
            outcome = position.outcome()
            if outcome is not None:
                return outcome_score(outcome, position.turn, ply)
            self.heuristic_leaves += 1
            if self.quiescence is not None:
                score, nodes = self.quiescence.search(position, alpha, beta)
                self.nodes += nodes
                return score
            return self._evaluate(position)

        # The end of the game is decided before the table is asked: a position may be
        # over here (a draw by repetition, say) yet stored when it was not.
        moves = position.legal_moves()
        if not moves:
            return outcome_score(position.outcome(), position.turn, ply)

        key = position.key()
        table = self.table
        entry = table.slots[hash(key) & table.mask]
        tt_move = None
        if entry is not None and entry.key == key:
            if entry.depth == depth or (entry.resolved and entry.depth <= depth):
                score = from_table(entry.score, ply)
                bound = entry.bound
                if bound == EXACT or (score >= beta if bound == LOWER else score <= alpha):
                    if not entry.resolved:
                        self.heuristic_leaves += 1
                    return score
            tt_move = entry.move

        alpha_original = alpha
        best_score = -INFINITY
        best_move = None
        leaves_before = self.heuristic_leaves
        child_depth, child_ply = depth - 1, ply + 1
        for move in self._orderer.staged(position, moves, tt_move, ply) if len(moves) > 1 else moves:
            score = -self._negamax(position.play(move), child_depth, -beta, -alpha, child_ply)
            if score > best_score:
                best_score, best_move = score, move
                if score > alpha:
                    alpha = score
                    pv[ply] = (move, *pv[child_ply])
                    if alpha >= beta:
                        self._orderer.reward(position.turn, move, depth, ply)
                        break

        if best_score <= alpha_original:
            bound = UPPER
        elif best_score >= beta:
            bound = LOWER
        else:
            bound = EXACT
        resolved = self.heuristic_leaves == leaves_before
        table.put(key, depth, to_table(best_score, ply), bound, best_move, resolved)
        return best_score

    def _extend_pv(self, position: Position, pv: tuple[Move, ...], depth: int) -> tuple[Move, ...]:
        """``pv`` lengthened from the table's best moves where a table hit cut it short.

        A node answered from the table has no line of its own; its entry's best move
        (and its successors') continue the line, as long as they are legal.
        """
        line = list(pv)
        for move in pv:
            position = position.play(move)
        while len(line) < depth:
            move = self._table_move(position)
            if move is None or move not in position.legal_moves():
                break
            line.append(move)
            position = position.play(move)
        return tuple(line)

    def _table_move(self, position: Position) -> Move | None:
        """The best move the table (the kernel's, where it searched) holds for ``position``."""
        if self.kernel is not None:
            return self.kernel.searcher.table_move(self.kernel.state_of(position))
        entry = self.table.get(position.key())
        return None if entry is None else entry.move


def search(
    position: Position, evaluator: Evaluator, depth: int | None = None, time_ms: float | None = None
) -> SearchResult:
    """One alpha-beta search with a fresh table; see :meth:`AlphaBeta.search`."""
    return AlphaBeta(evaluator).search(position, depth, time_ms)
