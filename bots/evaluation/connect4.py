"""Connect Four evaluation: threats first, then room to make them, then the centre.

A Connect Four game is won by threats, empty cells that would complete a
four. One that can be played now wins (or must be blocked) at once; one
higher up shapes the rest of the game, and which row it sits on matters:
play fills the board from the bottom, so the first player can count on
getting the cells of odd rows (1, 3, 5 from the bottom) and the second those
of even rows, and a threat on a side's own parity is the one that usually
decides the endgame. Below threats, a side's potential is the number of
lines of four still open to it (no enemy stone) that its stones are part of,
which also favours the centre, where most lines run.

Everything is computed a board at a time with the bit tricks of
:mod:`games.connect4`.
"""

from __future__ import annotations

from functools import lru_cache

from games.connect4 import BOARD, BOTTOM, COLUMN_BITS, COLUMN_MASKS, WIDTH, ConnectFour, winning_cells

WIN_NOW = 2_000
"""The side to move can complete a four with its next stone."""
LOST_NOW = -2_000
"""The opponent has two threats the side to move can play into, and it can block only one."""
THREAT_WEIGHT = 40
"""Per threat cell more than the opponent."""
PARITY_BONUS = 25
"""Extra per threat on the rows its side can count on getting (odd rows for the first player)."""
POTENTIAL_WEIGHT = 1
"""Per stone in a line of four that holds no enemy stone, per such line."""
CENTRE_WEIGHT = 3
"""Per stone in the centre column, the one that most lines cross."""

ODD_ROWS = sum(BOTTOM << row for row in range(0, 6, 2))
"""Rows 1, 3 and 5 counted from the bottom, where the first player's threats are strongest."""
EVEN_ROWS = sum(BOTTOM << row for row in range(1, 6, 2))
CENTRE = COLUMN_MASKS[WIDTH // 2]
_STEPS = (1, COLUMN_BITS, COLUMN_BITS + 1, COLUMN_BITS - 1)
"""Bit distance between neighbours along a column, a row and the two diagonals."""

_ORDER_WIN, _ORDER_BLOCK, _ORDER_GIFT, _ORDER_WASTE = 1_000, 500, -200, -50


def evaluate(position: ConnectFour) -> int:
    """How good ``position`` looks for the side to move; always strictly within ±10 000."""
    own, other, mask = position.current, position.current ^ position.mask, position.mask
    playable = (mask + BOTTOM) & BOARD
    own_threats, other_threats = winning_cells(own, mask), winning_cells(other, mask)
    if own_threats & playable:
        return WIN_NOW
    forced = other_threats & playable
    if forced & (forced - 1):
        return LOST_NOW
    # The first player moves when an even number of stones is down.
    own_rows, other_rows = (ODD_ROWS, EVEN_ROWS) if position.turn == 0 else (EVEN_ROWS, ODD_ROWS)
    empty = BOARD ^ mask
    return (
        THREAT_WEIGHT * (own_threats.bit_count() - other_threats.bit_count())
        + PARITY_BONUS * ((own_threats & own_rows).bit_count() - (other_threats & other_rows).bit_count())
        + POTENTIAL_WEIGHT * (_potential(own, empty) - _potential(other, empty))
        + CENTRE_WEIGHT * ((own & CENTRE).bit_count() - (other & CENTRE).bit_count())
    )


def _potential(stones: int, empty: int) -> int:
    """Stones counted once for every open line of four (no enemy stone) they belong to.

    ``starts`` marks the first cell of every line whose four cells are all
    ``stones`` or empty; the spare bit above each column breaks every line that
    would wrap from one column to the next.
    """
    free = stones | empty
    total = 0
    for step in _STEPS:
        starts = free & (free >> step) & (free >> 2 * step) & (free >> 3 * step)
        total += (
            (stones & starts).bit_count()
            + ((stones >> step) & starts).bit_count()
            + ((stones >> 2 * step) & starts).bit_count()
            + ((stones >> 3 * step) & starts).bit_count()
        )
    return total


def order_key(position: ConnectFour, move: int) -> int:
    """How promising ``move`` looks before searching: bigger is tried first.

    A win, then a block, then centre first; a move that lets the opponent win
    in the cell above it goes last, and one that fills the cell below our own
    threat (letting the opponent block it) is held back.
    """
    playable, own_threats, other_threats = _threats(position)
    cell = playable & COLUMN_MASKS[move]
    key = WIDTH // 2 - abs(move - WIDTH // 2)
    if cell & own_threats:
        key += _ORDER_WIN
    elif cell & other_threats:
        key += _ORDER_BLOCK
    if (cell << 1) & other_threats:
        key += _ORDER_GIFT
    elif (cell << 1) & own_threats:
        key += _ORDER_WASTE
    return key


@lru_cache(maxsize=256)
def _threats(position: ConnectFour) -> tuple[int, int, int]:
    """The playable cells and both sides' threats; cached, as a search asks once per move of a node."""
    return position.possible(), position.winning_cells(), position.opponent_winning_cells()
