"""The exact Connect Four solver's search in pure Python: the reference, and the fallback without a compiler.

:mod:`bots.connect4_solver` is the solver's public face and chooses between this search and its compiled
twin in ``bots/connect4_exact/``, which does the same step for step: the same scores, the same
moves, and the same node counts while its table loses no bound. Scores follow Pascal Pons' convention (see
:mod:`bots.connect4_solver`).

The search is negamax with alpha-beta pruning, after Pons' "Solving Connect 4"
(its code is AGPL: this is our own implementation of the published ideas):

- null-window searches drive a binary search on the score, each answering
  "is the score above ``x``?", which prunes far more than one wide window;
- a transposition table keyed by the position's unique key keeps the bound
  each search learned, so the later, narrower searches reuse the earlier ones;
- moves are tried by the number of threats (cells that would complete a four)
  they leave, then from the centre outwards;
- a move that lets the opponent win at once is never tried: the search only
  visits positions whose side to move cannot win on the spot, which bounds
  every score before a single move is made; and when only the quickest of
  those wins would beat the window, the search looks for a move that leaves
  the opponent no safe reply instead of searching the replies.

Pure Python makes every operation count, so the hot loop works on plain ints
and keeps both sides' threat bitboards up to date as it goes instead of
recomputing them: a stone changes the threats only along the four lines
through its cell, and :data:`_NEW_THREATS` holds, for every cell, the threats a
stone there creates given the stones already on those lines. Everything is
derived from :mod:`games.connect4`, whose bit layout and ``winning_cells`` the
solver shares.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator

from games.connect4 import (
    BOARD,
    BOTTOM,
    CELLS,
    CENTRE_FIRST,
    COLUMN_BITS,
    HEIGHT,
    WIDTH,
    ConnectFour,
    column_of,
    winning_cells,
)


class SolverBudgetExceeded(RuntimeError):
    """The search visited more positions than the caller allowed."""

    def __init__(self, max_nodes: int) -> None:
        super().__init__(f"the exact solver gave up after {max_nodes} nodes")
        self.max_nodes = max_nodes


# Score bounds by the number of stones played, looked up rather than computed in the hot loop.
_LOSS_NEXT = tuple(-((CELLS - ply) // 2) for ply in range(CELLS + 1))
"""The score of the side to move when the opponent wins with the next stone."""
_WIN_NEXT = tuple((CELLS + 1 - ply) // 2 for ply in range(CELLS + 1))
"""The score of winning with the stone about to be played."""
_WIN_SECOND = tuple((CELLS - 1 - ply) // 2 for ply in range(CELLS + 1))
"""The best score when the side to move cannot win at once: winning with its second stone."""
_WIN_THIRD = tuple((CELLS - 3 - ply) // 2 for ply in range(CELLS + 1))
"""The best score when, moreover, every move leaves the opponent a safe reply: a win with the third stone."""
_LOSS_SECOND = tuple(-((CELLS - 2 - ply) // 2) for ply in range(CELLS + 1))
"""The worst score when the opponent cannot win with its next stone."""

_LOWER_BOUND = 64
"""Offset that marks a lower bound in the transposition table. Scores lie in -21..21:
an entry ``v`` is an upper bound ``v``, or a lower bound ``v - 64`` when ``v > 32``."""
_TABLE_CAPACITY = 1 << 20
"""Entries the pure-Python table keeps before it starts afresh (about 100 MB); a bound lost costs time,
never correctness. The compiled search keeps 2^23 by default, at 8 bytes each."""


def _cells_in_line(column: int, row: int, step_column: int, step_row: int, steps: tuple[int, ...]) -> int:
    """The board cells ``steps`` away from (column, row) along a direction."""
    cells = 0
    for step in steps:
        c, r = column + step * step_column, row + step * step_row
        if 0 <= c < WIDTH and 0 <= r < HEIGHT:
            cells |= 1 << c * COLUMN_BITS + r
    return cells


def _subsets(cells: int) -> Iterator[int]:
    subset = cells
    while True:
        yield subset
        if not subset:
            return
        subset = (subset - 1) & cells


def _build_new_threats() -> dict[int, tuple]:
    """For each cell, what a stone played there adds to its owner's threats.

    A cell's lines are split in three groups: the column below it with its row
    (9 cells), the rising diagonal and the falling diagonal (6 each). For each
    group, a table maps the owner's stones in the group to the threats that
    those stones and the new one make. The threats of the stones alone are
    already known, so the union is exact. Cells taken by anyone must still be
    masked out by the caller. The last item is the cell's rank in the
    centre-first order, for ties in move ordering.
    """
    outwards = (-3, -2, -1, 1, 2, 3)
    tables: dict[int, tuple] = {}
    for column in range(WIDTH):
        for row in range(HEIGHT):
            cell = 1 << column * COLUMN_BITS + row
            groups = (
                _cells_in_line(column, row, 0, 1, (-3, -2, -1)) | _cells_in_line(column, row, 1, 0, outwards),
                _cells_in_line(column, row, 1, 1, outwards),
                _cells_in_line(column, row, 1, -1, outwards),
            )
            entry: list = []
            for group in groups:
                stones = {subset: winning_cells(subset | cell, subset | cell) for subset in _subsets(group)}
                entry += [group, stones]
            entry.append(WIDTH - 1 - CENTRE_FIRST.index(column))
            tables[cell] = tuple(entry)
    return tables


_NEW_THREATS = _build_new_threats()


def _new_searcher(
    max_nodes: int | None, table_capacity: int = _TABLE_CAPACITY
) -> tuple[Callable[[int, int, int, int, int, int, int], int], Callable[[], int], Callable[[], int]]:
    """A fresh negamax with its own transposition table, its node counter and its table's size.

    A closure rather than a class: local and free variables are the cheapest
    names Python has.
    """
    table: dict[int, int] = {}
    lookup = table.get
    new_threats = _NEW_THREATS
    board, bottom, lower_bound, capacity = BOARD, BOTTOM, _LOWER_BOUND, table_capacity
    loss_next, win_second, win_third, loss_second = _LOSS_NEXT, _WIN_SECOND, _WIN_THIRD, _LOSS_SECOND
    last_ply = CELLS - 2
    nodes = 0
    node_limit = sys.maxsize if max_nodes is None else max_nodes

    def negamax(current: int, mask: int, own: int, threats: int, ply: int, alpha: int, beta: int) -> int:
        """The score of the position if it lies in ``(alpha, beta)``, else a bound on the same side.

        ``current`` and ``mask`` are the position's bitboards, ``own`` and
        ``threats`` the empty cells where the side to move, and its opponent,
        would complete a four. The side to move must not be able to win at once.
        """
        nonlocal nodes
        nodes += 1
        if nodes > node_limit:
            raise SolverBudgetExceeded(node_limit)
        # The moves that do not hand the opponent a win (see ConnectFour.non_losing_moves).
        possible = (mask + bottom) & board
        forced = possible & threats
        if forced:
            if forced & (forced - 1):
                return loss_next[ply]
            possible = forced
        possible &= ~(threats >> 1)
        if not possible:
            return loss_next[ply]
        if ply >= last_ply:
            return 0  # we play the last-but-one stone safely; the opponent's last one cannot win

        # Nobody wins with the next stone, which bounds the score from both sides.
        bound = loss_second[ply]
        if alpha < bound:
            alpha = bound
            if alpha >= beta:
                return alpha
        bound = win_second[ply]
        if beta > bound:
            beta = bound
            if alpha >= beta:
                return beta
        key = current + mask
        bound = lookup(key)
        if bound is not None:
            if bound > 32:
                bound -= lower_bound
                if alpha < bound:
                    alpha = bound
                    if alpha >= beta:
                        return alpha
            elif beta > bound:
                beta = bound
                if alpha >= beta:
                    return beta
        if len(table) >= capacity:
            table.clear()

        if alpha >= win_third[ply]:
            # Only winning with our second stone beats alpha, that is a move that
            # leaves the opponent no safe reply: look for one without searching.
            while possible:
                move = possible & -possible
                possible ^= move
                after = mask | move
                group1, new1, group2, new2, group3, new3, _ = new_threats[move]
                ours = (own | new1[current & group1] | new2[current & group2] | new3[current & group3]) & (
                    board ^ after
                )
                replies = (after + bottom) & board
                forced = replies & ours
                if forced:
                    if forced & (forced - 1):
                        break
                    replies = forced
                if not replies & ~(ours >> 1):
                    break
            else:
                table[key] = win_third[ply]
                return win_third[ply]
            table[key] = win_second[ply] + lower_bound
            return win_second[ply]

        opponent = current ^ mask
        if not possible & (possible - 1):
            # A single candidate: nothing to order.
            after = mask | possible
            group1, new1, group2, new2, group3, new3, _ = new_threats[possible]
            ours = (own | new1[current & group1] | new2[current & group2] | new3[current & group3]) & (
                board ^ after
            )
            score = -negamax(opponent, after, threats & ~possible, ours, ply + 1, -beta, -alpha)
            if score >= beta:
                table[key] = score + lower_bound
                return score
            if score > alpha:
                alpha = score
            table[key] = alpha
            return alpha

        # Order by the threats each move leaves us (more first), then centre first.
        candidates = []
        while possible:
            move = possible & -possible
            possible ^= move
            group1, new1, group2, new2, group3, new3, rank = new_threats[move]
            ours = (own | new1[current & group1] | new2[current & group2] | new3[current & group3]) & (
                board ^ (mask | move)
            )
            candidates.append((ours.bit_count() << 3 | rank, move, ours))
        candidates.sort(reverse=True)
        ply += 1
        for _, move, ours in candidates:
            score = -negamax(opponent, mask | move, threats & ~move, ours, ply, -beta, -alpha)
            if score >= beta:
                table[key] = score + lower_bound
                return score
            if score > alpha:
                alpha = score
        table[key] = alpha
        return alpha

    def visited() -> int:
        return nodes

    def table_size() -> int:
        return len(table)

    return negamax, visited, table_size


class PythonSearch:
    """One solve: a negamax and the transposition table its successive searches share.

    The reference search, in pure Python (:data:`bots.connect4_solver.Search` says which one runs). Past
    ``max_nodes`` positions a call raises :class:`SolverBudgetExceeded`; the table holds up to
    ``table_capacity`` bounds (default ``_TABLE_CAPACITY``) and starts afresh when full.
    """

    __slots__ = ("_decided_at_once", "_negamax", "_table_size", "_visited")

    def __init__(self, max_nodes: int | None = None, table_capacity: int | None = None) -> None:
        capacity = _TABLE_CAPACITY if table_capacity is None else table_capacity
        self._negamax, self._visited, self._table_size = _new_searcher(max_nodes, capacity)
        self._decided_at_once = 0

    def nodes(self) -> int:
        """Positions visited: by the search, and those scored without one."""
        return self._visited() + self._decided_at_once

    def table_size(self) -> int:
        """Bounds the transposition table holds now."""
        return self._table_size()

    def value(self, position: ConnectFour) -> int:
        """The sign of the exact score: 1 win, 0 draw, -1 loss for the side to move.

        A weak solve: at most two null-window searches around 0, instead of the
        binary search for the exact score.
        """
        if position.outcome() is not None or _score_at_once(position) is not None:
            score = self.score(position)
            return (score > 0) - (score < 0)
        if self._probe(position, 0, 1) > 0:
            return 1
        return 0 if self._probe(position, -1, 0) >= 0 else -1

    def score(self, position: ConnectFour) -> int:
        """The exact score of ``position``, finished or not."""
        ply = position.ply
        outcome = position.outcome()
        if outcome is not None:
            return 0 if outcome.winner is None else (ply + 1) // 2 - (CELLS // 2 + 1)
        at_once = _score_at_once(position)
        if at_once is not None:
            self._decided_at_once += 1
            return at_once
        # Binary search on the score with null windows: each search answers
        # "is the score above middle?" and moves one end of [low, high]. The
        # window starts one loss wider than the search could prove (as Pons'
        # does): its midpoints then fall where they prune best, measured at 16%
        # fewer nodes on Test_L1_R1 than starting from the tight bound.
        low, high = _LOSS_NEXT[ply], _WIN_SECOND[ply]
        while low < high:
            middle = low + (high - low) // 2
            # Pons' choice of probe: halfway towards zero rather than the middle of
            # the window, as exact scores cluster nearer zero than the extremes.
            if middle <= 0 and low // 2 < middle:
                middle = low // 2
            elif middle >= 0 and high // 2 > middle:
                middle = high // 2
            result = self._probe(position, middle, middle + 1)
            if result <= middle:
                high = result
            else:
                low = result
        return low

    def best_move(self, position: ConnectFour, score: int) -> int | None:
        """A move that keeps ``score``, the exact score of ``position``.

        Also a move that keeps at least ``score`` when that is only a bound on the
        exact score: given the sign of a won or drawn position, a move that keeps
        the win or the draw.
        """
        moves = position.legal_moves()
        if not moves:
            return None
        if position.can_win_next():
            return next(move for move in centre_first(moves) if position.is_winning_move(move))
        candidates = search_order(position, position.non_losing_moves())
        if not candidates:
            return centre_first(moves)[0]  # every move loses at once: any will do
        if len(candidates) == 1:
            return candidates[0]
        for move in candidates:
            # The move keeps the score if the opponent's score after it is at most -score.
            child = position.play(move)
            if child.outcome() is not None:
                opponent_score = self.score(child)
            else:
                opponent_score = self._probe(child, -score, -score + 1)
            if -opponent_score >= score:
                return move
        raise AssertionError(f"no move keeps the score {score} of {position.key():#x}")  # pragma: no cover

    def _probe(self, position: ConnectFour, alpha: int, beta: int) -> int:
        """Negamax from a position whose side to move cannot win at once."""
        return self._negamax(
            position.current,
            position.mask,
            position.winning_cells(),
            position.opponent_winning_cells(),
            position.ply,
            alpha,
            beta,
        )


def _score_at_once(position: ConnectFour) -> int | None:
    """The score of an unfinished position that needs no search, else ``None``."""
    ply = position.ply
    if position.can_win_next():
        return _WIN_NEXT[ply]
    if not position.non_losing_moves():
        return _LOSS_NEXT[ply]
    if ply >= CELLS - 2:
        return 0  # as in the search: a safe last-but-one stone, then the last cannot win
    return None


def centre_first(moves: list[int]) -> list[int]:
    """``moves`` from the centre outwards, the order the search falls back on when nothing else decides."""
    return sorted(moves, key=CENTRE_FIRST.index)


def search_order(position: ConnectFour, safe: int) -> list[int]:
    """The columns of the ``safe`` bitboard in the search's order: most threats, then centre first."""
    moves = [column_of(cell) for cell in _bits(safe)]

    def threats_after(move: int) -> int:
        child = position.play(move)
        return child.opponent_winning_cells().bit_count()

    return sorted(moves, key=lambda move: (-threats_after(move), CENTRE_FIRST.index(move)))


def _bits(cells: int) -> Iterator[int]:
    while cells:
        cell = cells & -cells
        yield cell
        cells ^= cell
