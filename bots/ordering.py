"""Move ordering: alpha-beta prunes most when the best move comes first.

The order, from the most to the least trusted hint: the move the transposition
table remembers as best here; the killer moves (two per ply: moves that caused a
cut-off in a sibling position, and likely do again); the history heuristic
(moves that caused cut-offs anywhere, weighted by the depth of the subtree they
saved); finally the game's own static hint, ``order_key`` of its evaluation
module, which breaks every tie left (so centre-first for Connect Four decides
alone until the search has learnt anything).

The moves come in stages: the table's move and the killers are tried before the
rest is sorted, because at a node that one of them cuts off (about half of all
nodes) the sort, which asks ``order_key`` about every move, would be wasted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from games import Move, Position

KILLERS_PER_PLY = 2


class MoveOrderer:
    """The killer and history tables of one search, and the ordering they give."""

    __slots__ = ("history", "killers", "order_key")

    def __init__(self, order_key: Callable[[Position, Move], int] | None) -> None:
        self.order_key = order_key
        self.killers: list[list[Move | None]] = []
        self.history: tuple[dict[Move, int], dict[Move, int]] = ({}, {})

    def staged(self, position: Position, moves: list[Move], tt_move: Move | None, ply: int) -> Iterator[Move]:
        """``moves`` (consumed) in order of promise; the sort waits until the early candidates are tried."""
        if tt_move is not None and tt_move in moves:
            moves.remove(tt_move)
            yield tt_move
        if ply < len(self.killers):
            for killer in self.killers[ply]:
                if killer is not None and killer in moves:
                    moves.remove(killer)
                    yield killer
        yield from self.sort(position, moves)

    def order(self, position: Position, moves: list[Move], tt_move: Move | None, ply: int) -> list[Move]:
        """``moves`` sorted, most promising first: the stages of :meth:`staged` as a list."""
        return list(self.staged(position, list(moves), tt_move, ply))

    def sort(self, position: Position, moves: list[Move]) -> list[Move]:
        """``moves`` sorted in place by history, then by ``order_key``, and returned."""
        if len(moves) < 2:
            return moves
        history = self.history[position.turn]
        order_key = self.order_key
        if order_key is not None:
            moves.sort(key=lambda move: (history.get(move, 0), order_key(position, move)), reverse=True)
        elif history:
            moves.sort(key=lambda move: history.get(move, 0), reverse=True)
        return moves

    def reward(self, turn: int, move: Move, depth: int, ply: int) -> None:
        """Remember ``move`` for causing a cut-off at ``ply`` with ``depth`` plies left."""
        history = self.history[turn]
        history[move] = history.get(move, 0) + depth * depth
        while len(self.killers) <= ply:
            self.killers.append([None] * KILLERS_PER_PLY)
        killers = self.killers[ply]
        if killers[0] != move:
            killers[1] = killers[0]
            killers[0] = move
