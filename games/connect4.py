"""Connect Four on a 7x6 board, as two bitboards.

Each column takes ``HEIGHT + 1`` bits, bottom cell first; the spare bit on top of
every column keeps the shifts used for line detection from wrapping one column
into the next. Cell ``(column, row)``, row 0 at the bottom, is bit
``column * 7 + row``::

    .  .  .  .  .  .  .      <- spare bits 6, 13, ..., 48
    5 12 19 26 33 40 47
    4 11 18 25 32 39 46
    3 10 17 24 31 38 45
    2  9 16 23 30 37 44
    1  8 15 22 29 36 43
    0  7 14 21 28 35 42

A position keeps ``mask`` (every stone) and ``current`` (the stones of the side
to move) rather than one board per colour: playing is then two operations, and
everything a solver asks is about the side to move. ``current + mask`` is a
unique key: adding a column's stones to its ``mask`` bits sets one bit just above
its top stone and keeps ``current``'s bits below it, so the board can be read
back from the key alone.

Columns are named by digits ``1``-``7`` from the left, as in Pascal Pons' test
sets; internally a move is the column index ``0``-``6``. Red moves first.

The module-level helpers work on plain ints, so the exact solver in
:mod:`bots.connect4_solver` can run on the same bit tricks without building a
position object per node.
"""

from __future__ import annotations

from itertools import product

import msgspec

from games.base import Game, IllegalMoveError, Outcome, seat_marks

WIDTH = 7
HEIGHT = 6
CELLS = WIDTH * HEIGHT
COLUMN_BITS = HEIGHT + 1

BOTTOM = sum(1 << column * COLUMN_BITS for column in range(WIDTH))
"""One bit on the bottom cell of every column."""
BOARD = BOTTOM * ((1 << HEIGHT) - 1)
"""Every playable cell; the spare bits above the columns are clear."""
COLUMN_MASKS = tuple(((1 << HEIGHT) - 1) << column * COLUMN_BITS for column in range(WIDTH))
"""The cells of each column."""
TOP_CELLS = tuple(1 << (HEIGHT - 1) + column * COLUMN_BITS for column in range(WIDTH))
"""The top cell of each column: a column is full when its top cell is taken."""
CENTRE_FIRST = (3, 2, 4, 1, 5, 0, 6)
"""Columns from the centre outwards: central stones take part in the most lines."""

_ONE_COLUMN = (1 << COLUMN_BITS) - 1
_YELLOW_SHIFT = WIDTH * COLUMN_BITS
"""Where Yellow's stones sit in :meth:`ConnectFour.grid`'s one int of both sides: above all of Red's."""
_ROW_BITS = BOTTOM | BOTTOM << _YELLOW_SHIFT
"""The bottom row's cells of both sides: both shifted right by ``row``, that row's stones sit on these."""
_ROW_TEXT = {
    sum(
        1 << column * COLUMN_BITS + code * _YELLOW_SHIFT for column, code in enumerate(codes) if code >= 0
    ): "".join("x" if code == 0 else "o" if code == 1 else "." for code in codes)
    for codes in product((0, 1, -1), repeat=WIDTH)
}
"""A grid row's text by its cells, Red's and Yellow's. A row a lookup: every move sends the board, and
this is on each move's path."""


def has_four(stones: int) -> bool:
    """Whether ``stones`` hold four in a row in any direction.

    Each direction's pairs mark every stone whose neighbour one step along the
    line is also there; two pairs two steps apart make a four. A step is 1 bit up,
    7 right, 8 up-right or 6 down-right (see the module docstring). Unrolled, with
    no branch: every move on the server and every node of a search asks it, and
    nearly always of stones that hold no four.
    """
    vertical = stones & (stones >> 1)
    horizontal = stones & (stones >> 7)
    rising = stones & (stones >> 8)
    falling = stones & (stones >> 6)
    return bool(
        vertical & (vertical >> 2)
        | horizontal & (horizontal >> 14)
        | rising & (rising >> 16)
        | falling & (falling >> 12)
    )


def winning_cells(stones: int, mask: int) -> int:
    """The empty cells that would complete a four for the owner of ``stones``.

    For each direction, a cell completes a four when three stones line up with it
    in one of the four places it can take in the line: below all three, above all
    three, or between them (one stone on one side, two on the other). The cells
    need not be playable yet: a threat high in a column matters to the search
    long before the column fills up to it. Spare bits are cleared at the end.

    This is the exact solver's innermost work, so the three sideways directions
    are unrolled and each shifted board is computed once: ``back1`` has a bit on
    every cell whose neighbour one step back holds a stone, ``ahead1`` one step
    ahead, and so on.
    """
    # Vertical: only a cell on top of three stones can complete a column.
    found = (stones << 1) & (stones << 2) & (stones << 3)
    # Horizontal. Three stones behind the cell, or two behind and one ahead; then the mirror images.
    back1, back2, ahead1, ahead2 = stones << 7, stones << 14, stones >> 7, stones >> 14
    found |= back1 & back2 & ((stones << 21) | ahead1) | ahead1 & ahead2 & ((stones >> 21) | back1)
    # Diagonal rising to the right (a step is one column right and one row up).
    back1, back2, ahead1, ahead2 = stones << 8, stones << 16, stones >> 8, stones >> 16
    found |= back1 & back2 & ((stones << 24) | ahead1) | ahead1 & ahead2 & ((stones >> 24) | back1)
    # Diagonal falling to the right (one column right and one row down).
    back1, back2, ahead1, ahead2 = stones << 6, stones << 12, stones >> 6, stones >> 12
    found |= back1 & back2 & ((stones << 18) | ahead1) | ahead1 & ahead2 & ((stones >> 18) | back1)
    return found & (BOARD ^ mask)


def playable_cells(mask: int) -> int:
    """The lowest empty cell of every column that is not full.

    Adding the bottom row to ``mask`` carries, in every column, past its stones
    into the first empty cell; a full column carries into its spare bit, which
    the board mask drops.
    """
    return (mask + BOTTOM) & BOARD


def mirror_bits(bits: int) -> int:
    """A bitboard reflected left to right: its columns in reverse order (a side's stones, the mask and a
    key alike)."""
    mirrored = 0
    for column in range(WIDTH):
        mirrored |= (bits >> column * COLUMN_BITS & _ONE_COLUMN) << (WIDTH - 1 - column) * COLUMN_BITS
    return mirrored


def column_of(cell: int) -> int:
    """The column of a single-bit cell."""
    return (cell.bit_length() - 1) // COLUMN_BITS


_COLUMN_NAMES = tuple(str(column + 1) for column in range(WIDTH))
_LAST_COLUMN_NAME = _COLUMN_NAMES[-1]


_TOP_ROW = sum(TOP_CELLS)
_LEGAL_NOTATION = {
    sum(TOP_CELLS[column] for column in range(WIDTH) if full >> column & 1): tuple(
        _COLUMN_NAMES[column] for column in range(WIDTH) if not full >> column & 1
    )
    for full in range(1 << WIDTH)
}
"""The legal moves' names by the top cells taken (the full columns), for a game that is not over."""


def column_name(column: int) -> str:
    """The digit that names ``column`` (0-based) in the notation."""
    return _COLUMN_NAMES[column]


class ConnectFour(msgspec.Struct, frozen=True, gc=False):
    """A Connect Four position: the side to move's stones and every stone.

    Finished positions are positions too: after a winning move the four belongs
    to the side that just moved, and :meth:`outcome` reports it.
    """

    current: int = 0
    """Bitboard of the stones of the side to move."""
    mask: int = 0
    """Bitboard of every stone on the board."""
    won: bool | None = None
    """Whether the side that just moved has a four, if known: :meth:`play` works it out once for the
    position it makes, where every move on the server and every node of a search would otherwise ask
    :func:`has_four` two to four times. ``None`` (a position made from its bitboards) asks it each time.
    Not part of the position: equality and the hash leave it out."""

    def __eq__(self, other: object) -> bool:
        if type(other) is not ConnectFour:
            return NotImplemented
        return self.current == other.current and self.mask == other.mask

    def __hash__(self) -> int:
        return hash((self.current, self.mask))

    @classmethod
    def from_moves(cls, moves: str) -> ConnectFour:
        """The position after ``moves``, a string of column digits such as ``"4453"``.

        Pons' test sets write games this way. Raises :class:`IllegalMoveError`
        naming the first bad move and its place in the string.
        """
        position = cls()
        for index, text in enumerate(moves):
            try:
                column = position.parse_move(text)
            except IllegalMoveError as error:
                raise IllegalMoveError(moves, f"move {index + 1} ({text!r}): {error.reason}") from None
            position = position.play(column)
        return position

    @property
    def ply(self) -> int:
        return self.mask.bit_count()

    @property
    def turn(self) -> int:
        return self.mask.bit_count() & 1

    @property
    def opponent(self) -> int:
        """Bitboard of the stones of the side that just moved."""
        return self.current ^ self.mask

    def stones(self, seat: int) -> int:
        """Bitboard of ``seat``'s stones (0 = Red, who moves first)."""
        return self.current if seat == self.turn else self.current ^ self.mask

    def key(self) -> int:
        """A unique int per board (see the module docstring); it fits in 49 bits."""
        return self.current + self.mask

    def mirrored(self) -> ConnectFour:
        """The position reflected left to right: the same value, with each move ``c`` as ``WIDTH - 1 - c``."""
        return ConnectFour(mirror_bits(self.current), mirror_bits(self.mask), self.won)

    def possible(self) -> int:
        """Bitboard of the cells the side to move may play, one per open column."""
        return playable_cells(self.mask)

    def winning_cells(self) -> int:
        """Empty cells where the side to move would complete a four."""
        return winning_cells(self.current, self.mask)

    def opponent_winning_cells(self) -> int:
        """Empty cells where the side that just moved would complete a four."""
        return winning_cells(self.current ^ self.mask, self.mask)

    def can_play(self, column: int) -> bool:
        """Whether ``column`` (0-based) still has room; says nothing of the game being over."""
        return not self.mask & TOP_CELLS[column]

    def can_win_next(self) -> bool:
        """Whether the side to move has a move that completes a four."""
        return bool(self.winning_cells() & self.possible())

    def is_winning_move(self, column: int) -> bool:
        """Whether playing ``column`` (0-based, playable) completes a four for the side to move."""
        return bool(self.winning_cells() & self.possible() & COLUMN_MASKS[column])

    def non_losing_moves(self) -> int:
        """Bitboard of the moves that do not let the opponent win at once.

        Meant for positions where the side to move cannot win at once (it would
        rather win than block). If the opponent threatens to complete a four in
        a playable cell, that cell is the only move; with two such cells every
        move loses and the answer is 0. Never play directly below an opponent's
        winning cell either: it would become playable.
        """
        possible = self.possible()
        threats = self.opponent_winning_cells()
        forced = possible & threats
        if forced:
            if forced & (forced - 1):
                return 0
            possible = forced
        return possible & ~(threats >> 1)

    def outcome(self) -> Outcome | None:
        if self._won():
            return Outcome(1 - (self.mask.bit_count() & 1), "four in a row")
        if self.mask == BOARD:
            return Outcome(None, "board full")
        return None

    def _won(self) -> bool:
        """Whether the side that just moved has a four: only they can have made one."""
        won = self.won
        return has_four(self.current ^ self.mask) if won is None else won

    def _is_over(self) -> bool:
        """Whether :meth:`outcome` is not ``None``, asked a few times on every move's path (so with
        :meth:`_won` written out)."""
        won = self.won
        if won is None:
            won = has_four(self.current ^ self.mask)
        return won or self.mask == BOARD

    def legal_moves(self) -> list[int]:
        if self._is_over():
            return []
        return [column for column in range(WIDTH) if not self.mask & TOP_CELLS[column]]

    def play(self, move: int) -> ConnectFour:
        # A column with room in a game not over is the whole check; only a move that fails it (or is not
        # a plain int) is asked why, so a legal move costs one call fewer on every move's path.
        if type(move) is not int or not 0 <= move < WIDTH or self.mask & TOP_CELLS[move] or self._is_over():
            reason = self._why_illegal(move)
            if reason is not None:
                raise IllegalMoveError(move, reason)
        cell = (self.mask + (1 << move * COLUMN_BITS)) & COLUMN_MASKS[move]
        # The side to move becomes the opponent: the new side to move owns every
        # old stone that was not the mover's, and the new stone is the mover's.
        return ConnectFour(self.current ^ self.mask, self.mask | cell, has_four(self.current | cell))

    def _why_illegal(self, move: object) -> str | None:
        if not isinstance(move, int) or isinstance(move, bool) or not 0 <= move < WIDTH:
            return f"not a column: expected an int from 0 to {WIDTH - 1}"
        if self._is_over():
            return "the game is over"
        if self.mask & TOP_CELLS[move]:
            return f"column {column_name(move)} is full"
        return None

    def parse_move(self, text: str) -> int:
        stripped = text.strip() if isinstance(text, str) else ""
        if len(stripped) != 1 or not "1" <= stripped <= _LAST_COLUMN_NAME:
            raise IllegalMoveError(text, f"expected a column digit from 1 (left) to {WIDTH} (right)")
        column = int(stripped) - 1
        if self.mask & TOP_CELLS[column] or self._is_over():  # (as in :meth:`play`)
            reason = self._why_illegal(column)
            assert reason is not None
            raise IllegalMoveError(text, reason)
        return column

    def format_move(self, move: int) -> str:
        return _COLUMN_NAMES[move]

    def display_move(self, move: int) -> str:
        return _COLUMN_NAMES[move]

    def legal_notation(self) -> list[str]:
        """From a table by the full columns: every move's reply carries this, and the server sends it."""
        if self._is_over():
            return []
        return list(_LEGAL_NOTATION[self.mask & _TOP_ROW])

    def grid(self) -> tuple[str, ...]:
        red = self.current ^ self.mask if self.mask.bit_count() & 1 else self.current
        both = red | (red ^ self.mask) << _YELLOW_SHIFT  # then one shift and one mask a row
        text, bits = _ROW_TEXT, _ROW_BITS
        # The six rows written out, top first: a comprehension would be a function call on every move.
        return (
            text[both >> 5 & bits],
            text[both >> 4 & bits],
            text[both >> 3 & bits],
            text[both >> 2 & bits],
            text[both >> 1 & bits],
            text[both & bits],
        )

    def __str__(self) -> str:
        """The board, top row first: ``R`` Red, ``Y`` Yellow, ``.`` empty."""
        return "\n".join(self.grid()).replace("x", "R").replace("o", "Y")


RULES = Game(
    name="connect4",
    title="Connect Four",
    sides=("Red", "Yellow"),
    notation="column digits 1-7, 1 = leftmost",
    start=ConnectFour,
    pieces=seat_marks("disc"),
)
