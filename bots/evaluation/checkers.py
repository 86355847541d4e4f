"""Checkers evaluation: material first, then what turns men into kings and keeps the opponent's out.

Material decides most games, and a king (which moves both ways) is worth about
one and a half men. Beyond material: men that have advanced are closer to
crowning; men left on the back row stop the opponent's men from crowning, which
matters as long as the opponent still has men; pieces in the centre control the
most squares. In the ending, the side ahead in material wants to trade (two
kings against one win, eight pieces against seven rarely do), so every piece
off the board counts for the side ahead.

Everything is read from the rules' own bitboards (:class:`games.checkers.Checkers`
``men`` and ``kings``, and the row masks of :mod:`games.checkers`), so the
evaluation cannot disagree with the rules about the board.
"""

from __future__ import annotations

from games.checkers import BACK_ROW, ROWS, Checkers, Path, bit, captured_squares

MAN_VALUE = 100
KING_VALUE = 150
"""A king moves both ways and cannot be blocked from behind: about one and a half men."""
ADVANCE_WEIGHT = 3
"""Per row a man has advanced from its back row."""
BACK_ROW_WEIGHT = 10
"""Per man still on its own back row while the opponent has men that could crown there."""
CENTRE_WEIGHT = 6
"""Per piece on one of the four centre squares (14, 15, 18, 19)."""
TRADE_WEIGHT = 4
"""For the side ahead in material, per piece off the board: trading down makes a lead decisive."""

CENTRE = bit(14) | bit(15) | bit(18) | bit(19)
STARTING_PIECES = 24

# Per seat, the squares at least k rows ahead of the back row, for k = 1..6 (men on row 7 are kings):
# summing the pieces in each gives every man's advancement in six popcounts.
_ADVANCED = (
    tuple(sum(ROWS[row] for row in range(k, 8)) for k in range(1, 7)),
    tuple(sum(ROWS[row] for row in range(8 - k)) for k in range(1, 7)),
)

CAPTURE_ORDER = 1_000
"""Per piece a move captures: compulsory captures are all that is legal, so size is what tells them apart."""
KING_CAPTURE_ORDER = 200
"""Per king among the captured pieces."""
CROWNING_ORDER = 500
"""For a move that crowns a man."""
CENTRE_ORDER = 1
"""For a move that ends on a centre square."""


def _advancement(men: int, seat: int) -> int:
    return sum((men & advanced).bit_count() for advanced in _ADVANCED[seat])


def _material(position: Checkers, seat: int) -> int:
    return MAN_VALUE * position.men[seat].bit_count() + KING_VALUE * position.kings[seat].bit_count()


def _placement(position: Checkers, seat: int) -> int:
    """What one side's pieces are worth beyond their number: advancement, guard and centre."""
    men, kings = position.men[seat], position.kings[seat]
    score = ADVANCE_WEIGHT * _advancement(men, seat)
    if position.men[1 - seat]:
        score += BACK_ROW_WEIGHT * (men & BACK_ROW[seat]).bit_count()
    score += CENTRE_WEIGHT * ((men | kings) & CENTRE).bit_count()
    return score


def evaluate(position: Checkers) -> int:
    """How good ``position`` is for the side to move, in hundredths of a man; a few thousand at most."""
    me, you = position.turn, 1 - position.turn
    material = _material(position, me) - _material(position, you)
    score = material + _placement(position, me) - _placement(position, you)
    if material:
        pieces = (position.men[0] | position.men[1] | position.kings[0] | position.kings[1]).bit_count()
        traded = TRADE_WEIGHT * (STARTING_PIECES - pieces)
        score += traded if material > 0 else -traded
    return score


def order_key(position: Checkers, move: Path) -> int:
    """Bigger captures first (kings count extra), then crowning moves, then moves to the centre."""
    key = 0
    captured = captured_squares(move)
    if captured:
        key += CAPTURE_ORDER * captured.bit_count()
        key += KING_CAPTURE_ORDER * (captured & position.kings[1 - position.turn]).bit_count()
    if position.crowns(move):
        key += CROWNING_ORDER
    if bit(move[-1]) & CENTRE:
        key += CENTRE_ORDER
    return key
