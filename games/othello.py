"""Othello (Reversi) on an 8x8 board.

The board is two 64-bit masks, one per seat; bit ``8 * row + column`` is a
square, row 0 at the top. Squares are named ``a1``-``h8``: columns ``a``-``h``
from the left, rows ``1``-``8`` from the top, so ``a1`` is the top-left corner.
Black (seat 0) moves first from the standard start (d4 and e5 White, d5 and e4
Black).

A move is a square number 0-63 or :data:`PASS`. A side with no legal placement
must pass while its opponent can still move, and a pass is a ply like any
other; the game ends when neither side can move, and more discs wins.

Move generation shifts whole boards along each axis instead of looking at
squares one by one: the search spends most of its time here.
"""

from __future__ import annotations

import msgspec

from games.base import Game, IllegalMoveError, Outcome, cells, seat_marks

SIZE = 8
PASS = 64
"""The move of a side that has no legal placement."""

FULL = (1 << 64) - 1
NOT_A = 0xFEFE_FEFE_FEFE_FEFE
"""Every square off column a, where a step east from column h would wrap to."""
NOT_H = 0x7F7F_7F7F_7F7F_7F7F
"""Every square off column h, where a step west from column a would wrap to."""
INNER = NOT_A & NOT_H
"""Every square off both side columns."""

CORNERS = 1 << 0 | 1 << 7 | 1 << 56 | 1 << 63
START = (1 << 28 | 1 << 35, 1 << 27 | 1 << 36)
"""Black on e4 and d5, White on d4 and e5."""
_UNKNOWN_MOBILITY: list[int | None] = [None, None]
"""Each new position's ``_mobility``, copied: neither seat's counted yet."""

# The four axes as (shift, twice the shift, whether the axis crosses columns). A
# shift left by ``shift`` steps east, south-west, south or south-east; a shift right
# steps the opposite way.
_AXES = ((1, 2, True), (7, 14, True), (8, 16, False), (9, 18, True))


def square_name(square: int) -> str:
    row, column = divmod(square, SIZE)
    return f"{'abcdefgh'[column]}{row + 1}"


MOVE_NAMES = (*(square_name(square) for square in range(64)), "pass")
"""The notation of every move, indexed by move (``MOVE_NAMES[PASS] == "pass"``)."""
MOVES_BY_NAME = {name: move for move, name in enumerate(MOVE_NAMES)}


def neighbours(bits: int) -> int:
    """Every square next to (in any of the eight directions) one of ``bits``, ``bits`` included."""
    spread = bits | (bits << 1 & NOT_A) | (bits >> 1 & NOT_H)  # widen each row, then each column
    return (spread | spread << 8 | spread >> 8) & FULL


def legal_placements(own: int, opponent: int) -> int:
    """The squares where the side with discs ``own`` may play, as a bitboard.

    Along each axis, both ways at once, ``own`` grows through runs of opponent
    discs in a parallel-prefix fill (1, 1, 2 and 2 squares: the longest run is 6);
    one step past a run onto an empty square is a legal placement. On the
    axes that cross columns only inner opponent discs may be in a run: a run
    cannot be flanked past the edge, and leaving the edge columns out also stops
    every step from wrapping round to the other side of the board.
    """
    inner = opponent & INNER
    moves = 0
    for shift, double, crosses_columns in _AXES:
        run = inner if crosses_columns else opponent
        up = run & own << shift
        down = run & own >> shift
        up |= run & up << shift
        down |= run & down >> shift
        pairs_up = run & run << shift  # run discs whose neighbour one step back is a run disc too
        pairs_down = run & run >> shift
        up |= pairs_up & up << double
        down |= pairs_down & down >> double
        up |= pairs_up & up << double
        down |= pairs_down & down >> double
        moves |= up << shift | down >> shift
    return moves & ~(own | opponent) & FULL


def _ray(square: int, row_step: int, column_step: int) -> int:
    """The squares from ``square`` (excluded) to the edge of the board in one direction."""
    row, column = divmod(square, SIZE)
    ray = 0
    while 0 <= (row := row + row_step) < SIZE and 0 <= (column := column + column_step) < SIZE:
        ray |= 1 << SIZE * row + column
    return ray


def _rays(square: int, directions: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    """The rays from ``square`` that can hold a flank (two squares or more)."""
    return tuple(ray for step in directions if (ray := _ray(square, *step)).bit_count() > 1)


# For each square, the rays leaving it towards higher square numbers (east, south-west,
# south, south-east) and towards lower ones.
_UP_RAYS = tuple(_rays(square, ((0, 1), (1, -1), (1, 0), (1, 1))) for square in range(64))
_DOWN_RAYS = tuple(_rays(square, ((0, -1), (-1, 1), (-1, 0), (-1, -1))) for square in range(64))


def flips(own: int, opponent: int, square: int) -> int:
    """The opponent discs that a disc of ``own`` placed on the empty ``square`` turns over.

    Along each ray the first square that is not an opponent disc decides: if it is
    one of ours, the opponent discs before it flip. Zero means the placement is
    not legal.
    """
    flipped = 0
    for ray in _UP_RAYS[square]:
        stop = ray & ~opponent
        first = stop & -stop  # lowest bit: the nearest square upwards
        if first & own:
            flipped |= ray & (first - 1)
    for ray in _DOWN_RAYS[square]:
        stop = ray & ~opponent
        if stop:
            first = 1 << stop.bit_length() - 1  # highest bit: the nearest square downwards
            if first & own:
                flipped |= ray & -(first << 1)
    return flipped


def squares(bits: int) -> list[int]:
    """The square numbers of a bitboard, in increasing order."""
    found = []
    while bits:
        lowest = bits & -bits
        found.append(lowest.bit_length() - 1)
        bits ^= lowest
    return found


class Othello(msgspec.Struct, frozen=True, gc=False):
    """An Othello position: the discs of each seat, whose turn it is and the ply count.

    ``ply`` cannot be read off the board because passes add plies without discs.
    """

    discs: tuple[int, int] = START
    """Bitboards of Black's (seat 0) and White's (seat 1) discs."""
    turn: int = 0
    ply: int = 0
    _mobility: list[int | None] = msgspec.field(default_factory=_UNKNOWN_MOBILITY.copy)
    """Each seat's :meth:`mobility`, filled in when first asked: the search asks several times. Not part
    of the position: equality and the hash leave it out."""

    def __eq__(self, other: object) -> bool:
        if type(other) is not Othello:
            return NotImplemented
        return self.discs == other.discs and self.turn == other.turn and self.ply == other.ply

    def __hash__(self) -> int:
        return hash((self.discs, self.turn, self.ply))

    @classmethod
    def from_board(cls, diagram: str, turn: int = 0, ply: int | None = None) -> Othello:
        """The position a diagram shows, for tests and analysis.

        The diagram has eight rows of eight cells from the top, ``B`` or ``x`` for
        Black, ``W`` or ``o`` for White and ``.`` for empty; other characters are
        ignored, so both ``str()`` and :meth:`grid` read back. ``ply`` defaults to
        the discs placed since the start, as if nobody had passed.
        """
        rows = [cells for line in diagram.splitlines() if (cells := [c for c in line if c in "BxWo."])]
        if len(rows) != SIZE or any(len(cells) != SIZE for cells in rows):
            raise ValueError(f"expected 8 rows of 8 cells (B or x, W or o, .), got {diagram!r}")
        black = white = 0
        for square, cell in enumerate(cell for cells in rows for cell in cells):
            if cell in "Bx":
                black |= 1 << square
            elif cell in "Wo":
                white |= 1 << square
        if turn not in (0, 1):
            raise ValueError(f"turn must be 0 (Black) or 1 (White), got {turn!r}")
        placed = max(0, (black | white).bit_count() - 4)
        return cls((black, white), turn, placed if ply is None else ply)

    def mobility(self, seat: int | None = None) -> int:
        """The squares where ``seat`` (by default the side to move) could place a disc, as a bitboard."""
        seat = self.turn if seat is None else seat
        moves = self._mobility[seat]
        if moves is None:
            moves = self._mobility[seat] = legal_placements(self.discs[seat], self.discs[1 - seat])
        return moves

    def disc_counts(self) -> tuple[int, int]:
        """How many discs Black and White have."""
        return self.discs[0].bit_count(), self.discs[1].bit_count()

    def empty(self) -> int:
        """The empty squares, as a bitboard."""
        return ~(self.discs[0] | self.discs[1]) & FULL

    def legal_moves(self) -> list[int]:
        placements = self.mobility()
        if placements:
            return squares(placements)
        return [PASS] if self.mobility(1 - self.turn) else []

    def outcome(self) -> Outcome | None:
        if self.mobility() or self.mobility(1 - self.turn):
            return None
        black, white = self.disc_counts()
        if black == white:
            return Outcome(None, f"equal discs: {black}-{white}")
        winner = 0 if black > white else 1
        return Outcome(winner, f"more discs: {max(black, white)}-{min(black, white)}")

    def play(self, move: int) -> Othello:
        turn = self.turn
        own, opponent = self.discs[turn], self.discs[1 - turn]
        if move == PASS:
            if not self.mobility() and self.mobility(1 - turn):
                passed = Othello(self.discs, 1 - turn, self.ply + 1)
                passed._mobility[:] = self._mobility  # same discs, so the same moves for each seat
                return passed
        elif type(move) is int and 0 <= move < 64 and not (own | opponent) >> move & 1:
            # A placement that flips something is legal, and only those flip: the game
            # cannot be over while one exists.
            flipped = flips(own, opponent, move)
            if flipped:
                own |= flipped | 1 << move
                opponent ^= flipped
                return Othello((own, opponent) if turn == 0 else (opponent, own), 1 - turn, self.ply + 1)
        raise IllegalMoveError(move, self._why_illegal(move))

    def _why_illegal(self, move: object) -> str:
        """The reason ``move`` is not legal here (only asked once it is known not to be)."""
        side = RULES.sides[self.turn]
        if self.outcome() is not None:
            return "the game is over"
        if move == PASS:
            example = MOVE_NAMES[squares(self.mobility())[0]]
            return f"{side} may not pass while a move exists (e.g. {example})"
        if type(move) is not int or not 0 <= move < 64:
            return "not a square of the board (a1-h8) or pass"
        if (self.discs[0] | self.discs[1]) >> move & 1:
            return f"{MOVE_NAMES[move]} is occupied"
        if not self.mobility():
            return f"{MOVE_NAMES[move]} flips no disc; {side} has no legal move and must pass"
        return f"{MOVE_NAMES[move]} flips no disc"

    def key(self) -> tuple[int, int, int]:
        return self.discs[0], self.discs[1], self.turn

    def parse_move(self, text: str) -> int:
        move = MOVES_BY_NAME.get(text.strip().lower()) if isinstance(text, str) else None
        if move is None:
            raise IllegalMoveError(text, "expected a square from a1 (top left) to h8 (bottom right), or pass")
        if move not in self.legal_moves():
            raise IllegalMoveError(text, self._why_illegal(move))
        return move

    def format_move(self, move: int) -> str:
        if type(move) is not int or not 0 <= move <= PASS:
            raise IllegalMoveError(move, "not a square of the board (0-63) or PASS (64)")
        return MOVE_NAMES[move]

    def legal_notation(self) -> list[str]:
        return [MOVE_NAMES[move] for move in self.legal_moves()]

    def display_move(self, move: int) -> str:
        return self.format_move(move)

    def grid(self) -> tuple[str, ...]:
        black, white = self.discs
        return tuple(cells(black >> shift, white >> shift, SIZE) for shift in range(0, SIZE * SIZE, SIZE))

    def __str__(self) -> str:
        """The board with coordinates, ``B`` for Black and ``W`` for White."""
        rows = (f"{number} {' '.join(row)}" for number, row in enumerate(self.grid(), start=1))
        return "\n".join(("  a b c d e f g h", *rows)).replace("x", "B").replace("o", "W")


RULES = Game(
    name="othello",
    title="Othello",
    sides=("Black", "White"),
    notation="squares a1-h8: column a-h from the left, row 1-8 from the top; pass when no placement is legal",
    start=Othello,
    pieces=seat_marks("disc"),
)
