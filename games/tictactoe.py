"""Tic-tac-toe on a 3x3 board.

The board is two 9-bit masks, one per seat; bit ``3 * row + column`` is a cell,
row 0 at the top. Cells are named like Othello's squares: columns ``a``-``c``
from the left, rows ``1``-``3`` from the top, so ``a1`` is the top-left cell and
``b1`` the top-middle one. O moves first.
"""

from __future__ import annotations

import msgspec

from games.base import Game, IllegalMoveError, Outcome, cells, seat_marks

SIZE = 3
FULL = (1 << 9) - 1
LINES = tuple(
    sum(1 << cell for cell in cells)
    for cells in (
        (0, 1, 2), (3, 4, 5), (6, 7, 8),  # rows
        (0, 3, 6), (1, 4, 7), (2, 5, 8),  # columns
        (0, 4, 8), (2, 4, 6),  # diagonals
    )
)  # fmt: skip


def cell_name(cell: int) -> str:
    row, column = divmod(cell, SIZE)
    return f"{'abc'[column]}{row + 1}"


CELL_NAMES = tuple(cell_name(cell) for cell in range(9))
CELLS_BY_NAME = {name: cell for cell, name in enumerate(CELL_NAMES)}


def has_line(stones: int) -> bool:
    return any(stones & line == line for line in LINES)


class TicTacToe(msgspec.Struct, frozen=True, gc=False):
    """A tic-tac-toe position: the stones of each seat, and whose turn it is."""

    stones: tuple[int, int] = (0, 0)
    turn: int = 0

    @property
    def ply(self) -> int:
        return (self.stones[0] | self.stones[1]).bit_count()

    def outcome(self) -> Outcome | None:
        for seat in (0, 1):
            if has_line(self.stones[seat]):
                return Outcome(seat, "three in a row")
        if self.stones[0] | self.stones[1] == FULL:
            return Outcome(None, "board full")
        return None

    def legal_moves(self) -> list[int]:
        if self.outcome() is not None:
            return []
        occupied = self.stones[0] | self.stones[1]
        return [cell for cell in range(9) if not occupied >> cell & 1]

    def play(self, move: int) -> TicTacToe:
        if move not in self.legal_moves():
            raise IllegalMoveError(move, self._why_illegal(move))
        stones = list(self.stones)
        stones[self.turn] |= 1 << move
        return TicTacToe((stones[0], stones[1]), 1 - self.turn)

    def _why_illegal(self, move: object) -> str:
        if self.outcome() is not None:
            return "the game is over"
        if not isinstance(move, int) or not 0 <= move < 9:
            return "not a cell of the board"
        return f"cell {CELL_NAMES[move]} is taken"

    def key(self) -> tuple[int, int]:
        return self.stones

    def parse_move(self, text: str) -> int:
        cell = CELLS_BY_NAME.get(text.strip().lower()) if isinstance(text, str) else None
        if cell is None:
            raise IllegalMoveError(text, "expected a cell from a1 (top left) to c3 (bottom right)")
        if cell not in self.legal_moves():
            raise IllegalMoveError(text, self._why_illegal(cell))
        return cell

    def format_move(self, move: int) -> str:
        return CELL_NAMES[move]

    def legal_notation(self) -> list[str]:
        return [CELL_NAMES[move] for move in self.legal_moves()]

    def display_move(self, move: int) -> str:
        return self.format_move(move)

    def grid(self) -> tuple[str, ...]:
        first, second = self.stones
        return tuple(cells(first >> shift, second >> shift, 3) for shift in (0, 3, 6))

    def __str__(self) -> str:
        """The board with the sides' own marks (O moves first)."""
        return "\n".join(self.grid()).replace("x", "O").replace("o", "X")


RULES = Game(
    name="tictactoe",
    title="Tic-tac-toe",
    sides=("O", "X"),
    notation="cells a1-c3: column a-c from the left, row 1-3 from the top",
    start=TicTacToe,
    pieces=seat_marks("mark"),
)
