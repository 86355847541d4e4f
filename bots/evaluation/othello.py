"""Othello evaluation: moves and corners decide the middle game, discs only the end.

Counting discs early is a beginner's mistake: a side with many discs, most of
them next to empty squares, hands its opponent moves. What wins is having more
moves than the opponent (mobility), few discs on the frontier (next to an
empty square) and the corners, which can never be flipped; the squares beside
an empty corner are dangerous because they let the opponent take it. Discs
count more and more as the board fills, and decide the game at the end.

Mobility comes from the rules themselves (:meth:`games.othello.Othello.mobility`),
so the evaluation cannot disagree with them about what a legal move is.
"""

from __future__ import annotations

from games.othello import CORNERS, MOVES_BY_NAME, PASS, Othello, neighbours

MOBILITY_WEIGHT = 8
"""Per legal placement more than the opponent has."""
FRONTIER_WEIGHT = 4
"""Per frontier disc (next to an empty square) fewer than the opponent has: each one offers moves."""
CORNER_WEIGHT = 60
"""Per corner more than the opponent holds: a corner disc is never flipped and anchors its edges."""
X_SQUARE_WEIGHT = -40
"""Per disc on the diagonal neighbour of an empty corner, which usually gives the corner away."""
C_SQUARE_WEIGHT = -15
"""Per disc on an edge neighbour of an empty corner: less risky than an X-square, still a liability."""
ENDGAME_EMPTIES = 20
"""Discs start to count with this many empty squares left, weighing one more per square filled."""


def _bits(*names: str) -> int:
    return sum(1 << MOVES_BY_NAME[name] for name in names)


# Each corner with its X-square and its two C-squares.
_CORNER_NEIGHBOURS = (
    (_bits("a1"), _bits("b2"), _bits("b1", "a2")),
    (_bits("h1"), _bits("g2"), _bits("g1", "h2")),
    (_bits("a8"), _bits("b7"), _bits("a7", "b8")),
    (_bits("h8"), _bits("g7"), _bits("h7", "g8")),
)


def _risky_squares(empty_corners: int) -> tuple[int, int]:
    """The X-squares and the C-squares of the empty ones among the corners."""
    x_squares = c_squares = 0
    for corner, x_square, c_pair in _CORNER_NEIGHBOURS:
        if corner & empty_corners:
            x_squares |= x_square
            c_squares |= c_pair
    return x_squares, c_squares


_RISKY_SQUARES = {
    empty_corners: _risky_squares(empty_corners)
    for empty_corners in (
        sum(corner for index, (corner, _, _) in enumerate(_CORNER_NEIGHBOURS) if subset >> index & 1)
        for subset in range(1 << len(_CORNER_NEIGHBOURS))
    )
}
"""The X- and C-squares by which corners are empty (every subset of the corners)."""

_CORNER_OF = {
    square: corner
    for corner, x_square, c_pair in _CORNER_NEIGHBOURS
    for square in range(64)
    if 1 << square & (x_square | c_pair)
}
"""The corner next to each X- and C-square."""

SQUARE_WEIGHTS = (
    100, -20, 10,  5,  5, 10, -20, 100,
    -20, -50, -2, -2, -2, -2, -50, -20,
     10,  -2,  1,  1,  1,  1,  -2,  10,
      5,  -2,  1,  0,  0,  1,  -2,   5,
      5,  -2,  1,  0,  0,  1,  -2,   5,
     10,  -2,  1,  1,  1,  1,  -2,  10,
    -20, -50, -2, -2, -2, -2, -50, -20,
    100, -20, 10,  5,  5, 10, -20, 100,
)  # fmt: skip
"""How promising a placement on each square looks, before searching it: corners best, X-squares worst."""
SAFE_NEIGHBOUR_WEIGHT = 5
"""An X- or C-square whose corner is already taken is an ordinary edge or inner square."""


def evaluate(position: Othello) -> int:
    """How good ``position`` is for the side to move, in points: a few thousand at most, either way."""
    me, you = position.turn, 1 - position.turn
    own, other = position.discs[me], position.discs[you]
    empty = position.empty()

    score = MOBILITY_WEIGHT * (position.mobility(me).bit_count() - position.mobility(you).bit_count())
    frontier = neighbours(empty)
    score -= FRONTIER_WEIGHT * ((own & frontier).bit_count() - (other & frontier).bit_count())
    score += CORNER_WEIGHT * ((own & CORNERS).bit_count() - (other & CORNERS).bit_count())
    x_squares, c_squares = _RISKY_SQUARES[empty & CORNERS]
    score += X_SQUARE_WEIGHT * ((own & x_squares).bit_count() - (other & x_squares).bit_count())
    score += C_SQUARE_WEIGHT * ((own & c_squares).bit_count() - (other & c_squares).bit_count())

    empties = empty.bit_count()
    if empties < ENDGAME_EMPTIES:
        score += (ENDGAME_EMPTIES - empties) * (own.bit_count() - other.bit_count())
    return score


def order_key(position: Othello, move: int) -> int:
    """Corners first, the neighbours of empty corners last, by :data:`SQUARE_WEIGHTS`."""
    if move == PASS:
        return 0
    corner = _CORNER_OF.get(move, 0)
    if corner and not corner & position.empty():
        return SAFE_NEIGHBOUR_WEIGHT
    return SQUARE_WEIGHTS[move]
