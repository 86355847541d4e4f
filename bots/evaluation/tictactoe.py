"""Tic-tac-toe evaluation: open lines, weighted by how far along they are.

Tic-tac-toe is small enough to search to the end, so this only matters for the
low levels that look a ply or two ahead; it should still play like a person
who knows the game: take a win, block a loss, prefer the centre and corners.
"""

from __future__ import annotations

from games.tictactoe import LINES, TicTacToe

LINE_WEIGHTS = (0, 1, 10, 1_000)
"""Value of an open line (no enemy stone in it) by how many of a side's stones it holds."""
TEMPO_BONUS = 100
"""The side to move completes any open two on its turn, so owning one is nearly a win."""
CELL_WEIGHTS = (2, 1, 2, 1, 3, 1, 2, 1, 2)
"""Lines through each cell: the centre is on four, corners on three, edges on two."""
WIN_NOW, BLOCK = 1_000, 500


def evaluate(position: TicTacToe) -> int:
    """Open lines of the side to move minus the opponent's."""
    own, other = position.stones[position.turn], position.stones[1 - position.turn]
    score = 0
    for line in LINES:
        if not line & other:
            score += LINE_WEIGHTS[(own & line).bit_count()]
            if (own & line).bit_count() == 2:
                score += TEMPO_BONUS
        elif not line & own:
            score -= LINE_WEIGHTS[(other & line).bit_count()]
    return score


def order_key(position: TicTacToe, cell: int) -> int:
    """A winning cell first, then a block, then by how many lines pass through the cell."""
    own, other = position.stones[position.turn], position.stones[1 - position.turn]
    bit = 1 << cell
    key = CELL_WEIGHTS[cell]
    for line in LINES:
        if line & bit:
            if (own | bit) & line == line:
                key += WIN_NOW
            elif (other | bit) & line == line:
                key += BLOCK
    return key
