"""English draughts (checkers) on 32-bit bitboards.

The board is the 32 dark squares in PDN numbering: square ``n`` is bit ``n - 1``.
Seen from White's side, square 1 is on the top row, second column from the left,
and numbers run left to right, row after row, down to 32; square 29 is the
bottom-left corner. Black (seat 0) starts on 1-12, moves first and advances
towards higher numbers; White (seat 1) starts on 21-32 and advances towards lower.

Geometry of the 32-bit layout: in a row with an even index (squares 1-4, 9-12,
...) the dark squares sit on odd columns, in an odd row on even columns. So a
diagonal step changes the bit index by 4 in both kinds of row, by 5 (down-right)
or 3 (up-right) from an even row and by 3 (down-left) or 5 (up-left) from an odd
one. Whole-board shifts therefore need a mask of the squares each shift is a real
diagonal step from; those masks, and per-square jump tables for multi-jumps, are
computed once below from plain (row, column) geometry.

A move is the tuple of the squares the piece visits, origin first, in PDN numbers:
``(11, 15)`` for a step, ``(22, 15, 8)`` for a double jump. A tuple names the path,
so two captures with the same ends through different squares are different moves,
and it needs no translation to or from notation. The game of English draughts has
these rules: men step diagonally forward; kings step both ways; capturing is
compulsory but any capture may be chosen; a multi-jump must be completed; a man
that reaches the far row is crowned and its move ends there; a side with no legal
move loses. The game is drawn after 80 plies without a capture or a man's move,
or when the same position (pieces and side to move) occurs for the third time.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from itertools import pairwise, product
from typing import TypeGuard

import msgspec

from games.base import Game, IllegalMoveError, Outcome, seat_marks

SQUARES = range(1, 33)
FULL = (1 << 32) - 1
BLACK, WHITE = 0, 1
SIDES = ("Black", "White")
QUIET_PLY_LIMIT = 80
"""Plies without a capture or a man's move after which the game is drawn."""

Path = tuple[int, ...]


def bit(square: int) -> int:
    """The bitboard of one square, given in PDN numbering."""
    return 1 << (square - 1)


_BIT = {square: bit(square) for square in SQUARES}


def squares_of(board: int) -> list[int]:
    """The PDN squares set in ``board``, ascending."""
    found = []
    while board:
        low = board & -board
        found.append(low.bit_length())
        board ^= low
    return found


def _coordinates(index: int) -> tuple[int, int]:
    row, offset = divmod(index, 4)
    return row, 2 * offset + (1 - row % 2)


def _row_table(starts_light: bool) -> dict[tuple[int, ...], str]:
    """Every row of :meth:`Checkers.grid`, keyed by its four squares' bits in each kind of piece."""
    table = {}
    for pieces in product(".xoXO", repeat=4):
        bits = tuple(
            sum(1 << square for square, piece in enumerate(pieces) if piece == kind) for kind in "xoXO"
        )
        squares = " ".join(pieces)
        table[bits] = f" {squares}" if starts_light else f"{squares} "
    return table


_ROWS = (_row_table(starts_light=True), _row_table(starts_light=False))
"""Square 1's row, and every second row after it, starts with a light square."""


def _index_at(row: int, column: int) -> int | None:
    """Bit index of the square at (row, column), or ``None`` off the board (callers stay on dark squares)."""
    if 0 <= row < 8 and 0 <= column < 8:
        return 4 * row + column // 2
    return None


ROWS = tuple(0b1111 << 4 * row for row in range(8))
"""Bitboard of each row, row 0 (squares 1-4) first; Black's back row is row 0."""
CROWN_ROW = (ROWS[7], ROWS[0])
"""Per seat, the row where its men are crowned."""
BACK_ROW = (ROWS[0], ROWS[7])
"""Per seat, the row its men start from and guard."""
FORWARD = (1, -1)
"""Per seat, the row direction its men move in (+1: towards higher numbers)."""


def _diagonal_tables() -> tuple[dict[Path, int], dict[Path, tuple[int, int]]]:
    """Every step and jump of the board, from (row, column) geometry."""
    steps: dict[Path, int] = {}
    jumps: dict[Path, tuple[int, int]] = {}
    for index in range(32):
        row, column = _coordinates(index)
        for row_step, column_step in ((1, -1), (1, 1), (-1, -1), (-1, 1)):
            near = _index_at(row + row_step, column + column_step)
            far = _index_at(row + 2 * row_step, column + 2 * column_step)
            if near is not None:
                steps[(index + 1, near + 1)] = row_step
                if far is not None:
                    jumps[(index + 1, far + 1)] = (1 << near, row_step)
    return steps, jumps


STEPS, JUMPS = _diagonal_tables()
"""``STEPS[(origin, destination)]`` is the row direction of a diagonal step (+1 towards higher numbers);
``JUMPS[(origin, landing)]`` is ``(bitboard of the jumped square, row direction)``."""


def _jump_table(directions: tuple[int, ...]) -> tuple[tuple[tuple[int, int, int, int], ...], ...]:
    """Per bit index, ``(jumped bit, landing bit, landing index, landing square)`` in ``directions``."""
    table = []
    for index in range(32):
        table.append(
            tuple(
                (jumped, bit(landing), landing - 1, landing)
                for (origin, landing), (jumped, direction) in JUMPS.items()
                if origin == index + 1 and direction in directions
            )
        )
    return tuple(table)


MAN_JUMPS = (_jump_table((1,)), _jump_table((-1,)))
KING_JUMPS = _jump_table((1, -1))


def _sources(offset: int, table: Mapping[Path, object]) -> int:
    """Squares from which adding ``offset`` to the bit index is a step (or jump) of ``table``."""
    return sum(bit(origin) for origin, target in table if target - origin == offset)


def _step_shifts(direction: int) -> tuple[tuple[int, int, dict[int, Path]], ...]:
    """For steps in one row direction: ``(squares it is a step from, shift, destination bit -> move)``.

    One entry per bit-index offset (3, 4 and 5), so move generation shifts the
    whole board once per entry.
    """
    shifts = []
    for shift in (3, 4, 5):
        sources = _sources(direction * shift, STEPS)
        moves: dict[int, Path] = {
            bit(a + direction * shift): (a, a + direction * shift) for a in squares_of(sources)
        }
        shifts.append((sources, shift, moves))
    return tuple(shifts)


# "Down" is towards higher numbers, Black's forward; "up" is White's.
_DOWN_STEPS = _step_shifts(1)
_UP_STEPS = _step_shifts(-1)

# Squares in even and odd rows: the jumped square of a jump lies at a different offset in each.
_EVEN_ROWS = ROWS[0] | ROWS[2] | ROWS[4] | ROWS[6]
_ODD_ROWS = FULL ^ _EVEN_ROWS
_JUMP_DOWN_LEFT = _sources(7, JUMPS)  # jumped square +4 from even rows, +3 from odd ones
_JUMP_DOWN_RIGHT = _sources(9, JUMPS)  # +5 from even rows, +4 from odd ones
_JUMP_UP_RIGHT = _sources(-7, JUMPS)  # -3 from even rows, -4 from odd ones
_JUMP_UP_LEFT = _sources(-9, JUMPS)  # -4 from even rows, -5 from odd ones


def jumpers(down_movers: int, up_movers: int, opponents: int, empty: int) -> int:
    """Squares of the pieces that can capture, without generating any move.

    ``down_movers`` may move towards higher numbers, ``up_movers`` towards lower
    (a king is in both). For each jump direction a piece can jump if the square
    beyond is empty and the square between holds an opponent; both conditions are
    whole-board shifts of ``empty`` and ``opponents`` back onto the jumping piece.
    """
    found = 0
    if down_movers:
        found |= down_movers & (
            _JUMP_DOWN_LEFT & empty >> 7 & (opponents >> 4 & _EVEN_ROWS | opponents >> 3 & _ODD_ROWS)
            | _JUMP_DOWN_RIGHT & empty >> 9 & (opponents >> 5 & _EVEN_ROWS | opponents >> 4 & _ODD_ROWS)
        )
    if up_movers:
        found |= up_movers & (
            _JUMP_UP_RIGHT & empty << 7 & (opponents << 3 & _EVEN_ROWS | opponents << 4 & _ODD_ROWS)
            | _JUMP_UP_LEFT & empty << 9 & (opponents << 4 & _EVEN_ROWS | opponents << 5 & _ODD_ROWS)
        )
    return found


def is_capture(move: Path) -> bool:
    """Whether ``move`` jumps: a step changes the square number by 3-5, a jump by 7 or 9."""
    return len(move) > 2 or abs(move[1] - move[0]) > 5


def captured_squares(move: Path) -> int:
    """Bitboard of the squares ``move`` jumps over (0 for a step)."""
    if not is_capture(move):
        return 0
    captured = 0
    for hop in pairwise(move):
        captured |= JUMPS[hop][0]
    return captured


_NOTATION = re.compile(r"([0-9]{1,2})(?:(-)([0-9]{1,2})|((?:x[0-9]{1,2})+))")
_FEN_SIDE = re.compile(r"([BW])((?:K?[0-9]{1,2}(?:-[0-9]{1,2})?)(?:,K?[0-9]{1,2}(?:-[0-9]{1,2})?)*)?")


class Checkers(msgspec.Struct, frozen=True, gc=False):
    """A checkers position: pieces per seat, whose turn it is, and what the draw rules need.

    ``men`` and ``kings`` are bitboards indexed by seat (0 Black, 1 White). They
    are the public face the evaluation reads, with :data:`ROWS`, :data:`CROWN_ROW`
    and :data:`BACK_ROW` for geometry.
    """

    men: tuple[int, int] = (0x00000FFF, 0xFFF00000)
    kings: tuple[int, int] = (0, 0)
    turn: int = BLACK
    ply: int = 0
    quiet_plies: int = 0
    """Plies since the last capture or man's move (the 80-ply rule)."""
    earlier_keys: tuple[int, ...] = ()
    """Keys of the positions since the last capture or man's move, oldest first
    (threefold repetition). Those moves cannot be undone, so older positions can
    never recur; the tuple stays short and is empty through most of a game."""

    @classmethod
    def from_fen(cls, text: str) -> Checkers:
        """A position from PDN FEN such as ``B:W18,24,K10:B12,16,K22`` (side to move, then pieces).

        Ranges such as ``B1-12`` are accepted. The draw counters start from zero.
        Raises ``ValueError`` naming the text if it is not a position.
        """
        turn, sides = _fen_fields(text)
        men, kings, occupied = [0, 0], [0, 0], 0
        for seat, listed in sides:
            men[seat], kings[seat] = _fen_pieces(text, seat, listed, occupied)
            occupied |= men[seat] | kings[seat]
        return cls((men[0], men[1]), (kings[0], kings[1]), turn)

    def fen(self) -> str:
        """The position in PDN FEN, White's pieces first as in most published diagrams."""

        def side(seat: int) -> str:
            found = squares_of(self.men[seat]) + [-square for square in squares_of(self.kings[seat])]
            found.sort(key=abs)
            return "BW"[seat] + ",".join(f"K{-s}" if s < 0 else str(s) for s in found)

        return f"{'BW'[self.turn]}:{side(WHITE)}:{side(BLACK)}"

    def key(self) -> int:
        """Pieces and side to move packed in one int, for transposition tables and repetition.

        The draw counters are left out on purpose: the search treats positions with
        the same pieces as the same, as every draughts engine does.
        """
        return self.men[0] | self.men[1] << 32 | self.kings[0] << 64 | self.kings[1] << 96 | self.turn << 128

    def _draw_reason(self) -> str | None:
        quiet = self.quiet_plies
        if quiet >= QUIET_PLY_LIMIT:
            return f"{QUIET_PLY_LIMIT} plies without a capture or a man's move"
        # A position recurs at the earliest four plies later (both sides move a king there and back).
        if quiet >= 8 and self.earlier_keys.count(self.key()) >= 2:
            return "threefold repetition"
        return None

    def _movers(self) -> tuple[int, int, int, int]:
        """``(down movers, up movers, opponents, empty)`` for the side to move."""
        turn = self.turn
        men, kings = self.men[turn], self.kings[turn]
        opponents = self.men[1 - turn] | self.kings[1 - turn]
        empty = FULL ^ (men | kings | opponents)
        if turn == BLACK:
            return men | kings, kings, opponents, empty
        return kings, men | kings, opponents, empty

    def _has_move(self) -> bool:
        down, up, opponents, empty = self._movers()
        if jumpers(down, up, opponents, empty):
            return True
        return any((down & sources) << shift & empty for sources, shift, _ in _DOWN_STEPS) or any(
            (up & sources) >> shift & empty for sources, shift, _ in _UP_STEPS
        )

    def outcome(self) -> Outcome | None:
        """A side with no legal move has lost, even when the same ply also completes a draw rule; the
        reason says "no pieces left" when that is why it cannot move."""
        if not self._has_move():
            wiped_out = not (self.men[self.turn] | self.kings[self.turn])
            return Outcome(1 - self.turn, "no pieces left" if wiped_out else "no legal move")
        reason = self._draw_reason()
        return None if reason is None else Outcome(None, reason)

    def legal_moves(self) -> list[Path]:
        """Every legal move: all captures if there is one, else all steps; empty once the game is over."""
        if self.quiet_plies >= 8 and self._draw_reason() is not None:
            return []
        down, up, opponents, empty = self._movers()
        capturing = jumpers(down, up, opponents, empty)
        if capturing:
            return self._captures(capturing, opponents, empty)
        moves: list[Path] = []
        if down:
            for sources, shift, by_destination in _DOWN_STEPS:
                targets = (down & sources) << shift & empty
                while targets:
                    low = targets & -targets
                    moves.append(by_destination[low])
                    targets ^= low
        if up:
            for sources, shift, by_destination in _UP_STEPS:
                targets = (up & sources) >> shift & empty
                while targets:
                    low = targets & -targets
                    moves.append(by_destination[low])
                    targets ^= low
        return moves

    def _captures(self, capturing: int, opponents: int, empty: int) -> list[Path]:
        moves: list[Path] = []
        kings = self.kings[self.turn]
        man_jumps, crown_row = MAN_JUMPS[self.turn], CROWN_ROW[self.turn]
        while capturing:
            low = capturing & -capturing
            capturing ^= low
            index = low.bit_length() - 1
            # The piece leaves its square, so a king's jumps may pass through or end on it.
            if low & kings:
                _extend_captures(moves, KING_JUMPS, index, (index + 1,), opponents, empty | low, 0)
            else:
                _extend_captures(moves, man_jumps, index, (index + 1,), opponents, empty | low, crown_row)
        return moves

    def play(self, move: Path) -> Checkers:
        """The position after ``move``, a step or a capture by the side to move.

        Raises :class:`IllegalMoveError` naming what is wrong with the move, or that the game is over.
        The move is checked hop by hop against the bitboards rather than looked up among every legal
        move, which keeps :meth:`play` cheap for the search.
        """
        if self.quiet_plies >= 8 and self._draw_reason() is not None:
            raise self._refusal(move, "the game is drawn")
        if type(move) is not tuple or len(move) < 2:
            raise self._refusal(move, _not_a_path(move))
        try:
            direction = STEPS.get(move)
            origin = _BIT.get(move[0])
        except TypeError:  # unhashable parts
            origin = None
        if origin is None:
            raise self._refusal(move, _not_a_path(move))
        if direction is None:
            return self._capture(move, origin)
        return self._step(move, origin, direction)

    def _step(self, move: Path, origin: int, direction: int) -> Checkers:
        """The position after the diagonal step ``move`` from the bit ``origin`` in row ``direction``: a
        king's either way, a man's forward, to an empty square, and only when no piece can capture."""
        turn = self.turn
        men, kings = self.men[turn], self.kings[turn]
        opponents = self.men[1 - turn] | self.kings[1 - turn]
        king = origin & kings
        if not (king or origin & men):
            raise self._refusal(move, self._no_piece_on(move[0]))
        if not king and direction != FORWARD[turn]:
            raise self._refusal(move, "men move forward only")
        target = _BIT[move[1]]
        empty = FULL ^ (men | kings | opponents)
        if not target & empty:
            raise self._refusal(move, f"square {move[1]} is occupied")
        down, up = (men | kings, kings) if turn == BLACK else (kings, men | kings)
        if jumpers(down, up, opponents, empty):
            raise self._refusal(move, "a capture is compulsory")
        return self._after_step(origin, target, king)

    def _after_step(self, origin: int, target: int, king: int) -> Checkers:
        """The position after a checked step between two bits: a king's counts towards the draw rules,
        a man's cannot be undone and starts them over (and crowns it on the far row)."""
        turn = self.turn
        men, kings = self.men[turn], self.kings[turn]
        if king:
            kings ^= origin | target
            quiet, earlier = self.quiet_plies + 1, (*self.earlier_keys, self.key())
        else:
            men ^= origin | target
            if target & CROWN_ROW[turn]:
                men ^= target
                kings |= target
            quiet, earlier = 0, ()
        ply = self.ply + 1
        if turn == BLACK:
            return Checkers((men, self.men[1]), (kings, self.kings[1]), WHITE, ply, quiet, earlier)
        return Checkers((self.men[0], men), (self.kings[0], kings), BLACK, ply, quiet, earlier)

    def _capture(self, move: Path, origin: int) -> Checkers:
        """The position after the capture ``move`` from the bit ``origin``: every hop a jump over an
        opponent's piece, and no jump left at the end unless a man has just been crowned."""
        turn = self.turn
        men, kings = self.men[turn], self.kings[turn]
        opponents = self.men[1 - turn] | self.kings[1 - turn]
        king = origin & kings
        if not (king or origin & men):
            raise self._refusal(move, self._no_piece_on(move[0]))
        empty = FULL ^ (men | kings | opponents) | origin  # the capturing piece has left its square
        captured = self._jumped(move, origin, king, opponents, empty)
        target = _BIT[move[-1]]
        crowned = not king and target & CROWN_ROW[turn]
        if not crowned and self._can_jump(target, king, opponents ^ captured, empty):
            raise self._refusal(move, f"jump incomplete: the piece must go on capturing from {move[-1]}")
        return self._after_capture(origin, target, captured, king)

    def _jumped(self, move: Path, origin: int, king: int, opponents: int, empty: int) -> int:
        """The bitboard of the pieces ``move`` jumps, each hop checked in turn: a jump, forward for a
        man that is not crowned yet, over an opponent's piece not jumped already, to an empty square."""
        forward, crown_row = FORWARD[self.turn], CROWN_ROW[self.turn]
        captured = 0
        target = origin
        for hop in pairwise(move):
            found = JUMPS.get(hop)
            if found is None:
                raise self._refusal(move, _not_a_path(move))
            if target & crown_row and not king:
                raise self._refusal(move, f"the man is crowned on {hop[0]} and the move ends there")
            jumped, direction = found
            target = _BIT[hop[1]]
            if not king and direction != forward:
                raise self._refusal(move, "men capture forward only")
            if jumped & captured:
                raise self._refusal(move, f"the piece on {squares_of(jumped)[0]} cannot be captured twice")
            if not jumped & opponents:
                raise self._refusal(
                    move, f"no {SIDES[1 - self.turn]} piece to capture on {squares_of(jumped)[0]}"
                )
            if not target & empty:
                raise self._refusal(move, f"square {hop[1]} is occupied")
            captured |= jumped
        return captured

    def _can_jump(self, square: int, king: int, opponents: int, empty: int) -> bool:
        """Whether the piece on the bit ``square`` (a king if ``king``) can jump one of ``opponents``."""
        jumps = KING_JUMPS if king else MAN_JUMPS[self.turn]
        for jumped, landing, _, _ in jumps[square.bit_length() - 1]:
            if jumped & opponents and landing & empty:
                return True
        return False

    def _after_capture(self, origin: int, target: int, captured: int, king: int) -> Checkers:
        """The position after a checked capture from ``origin`` to ``target`` that took ``captured``
        (bitboards): the count of quiet plies starts over, and a man that reached the far row is crowned."""
        turn = self.turn
        men, kings = self.men[turn], self.kings[turn]
        if king:
            kings = (kings ^ origin) | target  # a king's jumps may end on the square they started from
        elif target & CROWN_ROW[turn]:
            men ^= origin
            kings |= target
        else:
            men ^= origin | target
        opponent_men = self.men[1 - turn] & ~captured
        opponent_kings = self.kings[1 - turn] & ~captured
        if turn == BLACK:
            return Checkers((men, opponent_men), (kings, opponent_kings), WHITE, self.ply + 1)
        return Checkers((opponent_men, men), (opponent_kings, kings), BLACK, self.ply + 1)

    def _no_piece_on(self, square: int) -> str:
        """Why the side to move cannot move from ``square``: it is empty or holds the opponent's piece."""
        turn = self.turn
        if _BIT[square] & (self.men[1 - turn] | self.kings[1 - turn]):
            return f"square {square} holds a {SIDES[1 - turn]} piece, not one of {SIDES[turn]}'s"
        return f"square {square} is empty"

    def _refusal(self, move: object, reason: str) -> IllegalMoveError:
        """The error refusing ``move`` for ``reason``; once the game is over, that is the reason given."""
        outcome = self.outcome()
        return IllegalMoveError(move, reason if outcome is None else f"the game is over ({outcome.reason})")

    def crowns(self, move: Path) -> bool:
        """Whether ``move`` (legal here) crowns a man."""
        return bool(_BIT[move[0]] & self.men[self.turn] and _BIT[move[-1]] & CROWN_ROW[self.turn])

    def parse_move(self, text: str) -> Path:
        """The legal move named by PDN ``text``: ``11-15``, ``22x15x8``, or ``22x8`` when unambiguous."""
        path = _pdn_path(text)
        try:
            self.play(path)
        except IllegalMoveError as error:
            if len(path) == 2 and path not in STEPS:  # a capture written by its ends
                return self._capture_between(text, path, error.reason)
            raise IllegalMoveError(text, error.reason) from None
        return path

    def _capture_between(self, text: str, ends: Path, reason: str) -> Path:
        """The one legal capture from ``ends[0]`` to ``ends[1]``, for PDN's short form ``22x8``.

        Raises :class:`IllegalMoveError` naming ``text`` if more captures than one join the ends, or none
        does (``reason`` says why ``ends`` is no move itself).
        """
        same_ends = [move for move in self.legal_moves() if (move[0], move[-1]) == ends and is_capture(move)]
        if len(same_ends) == 1:
            return same_ends[0]
        if same_ends:
            paths = ", ".join(self.format_move(move) for move in same_ends)
            raise IllegalMoveError(text, f"ambiguous: {paths} all capture from {ends[0]} to {ends[1]}")
        if reason == _path_problem(ends):  # the right piece, but no jump and no capture between the ends
            reason = f"no legal capture goes from {ends[0]} to {ends[1]}"
        raise IllegalMoveError(text, reason)

    def format_move(self, move: Path) -> str:
        """PDN with the full path: ``11-15`` or ``22x15x8``; the move need not be legal here."""
        problem = _path_problem(move)
        if problem is not None:
            raise IllegalMoveError(move, problem)
        return ("x" if is_capture(move) else "-").join(map(str, move))

    def legal_notation(self) -> list[str]:
        return [self.format_move(move) for move in self.legal_moves()]

    def display_move(self, move: Path) -> str:
        return self.format_move(move)

    def grid(self) -> tuple[str, ...]:
        """Eight rows of eight cells, square 1's row first (Black's men ``x`` start at the top)."""
        black_men, white_men = self.men
        black_kings, white_kings = self.kings
        return tuple(
            _ROWS[row % 2][
                black_men >> shift & 0xF,
                white_men >> shift & 0xF,
                black_kings >> shift & 0xF,
                white_kings >> shift & 0xF,
            ]
            for row, shift in enumerate(range(0, 32, 4))
        )

    def __str__(self) -> str:
        """The board as seen from White's side: Black ``b`` (kings ``B``) on top, White ``w`` (``W``)."""
        board = "\n".join(row.rstrip() for row in self.grid())
        return board.translate(str.maketrans("xXoO", "bBwW"))


def _extend_captures(
    moves: list[Path],
    jumps: tuple[tuple[tuple[int, int, int, int], ...], ...],
    index: int,
    path: Path,
    opponents: int,
    empty: int,
    crown_row: int,
) -> None:
    """Append to ``moves`` every completed jump sequence that continues ``path`` from bit ``index``.

    A jumped piece leaves ``opponents`` at once so it cannot be jumped twice; it is
    not added to ``empty`` because a landing square can never be a jumped square
    (landings keep the origin's row parity, jumped squares have the other one).
    """
    extended = False
    for jumped, landing_bit, landing_index, landing in jumps[index]:
        if jumped & opponents and landing_bit & empty:
            extended = True
            longer = (*path, landing)
            if landing_bit & crown_row:
                moves.append(longer)
            else:
                _extend_captures(moves, jumps, landing_index, longer, opponents ^ jumped, empty, crown_row)
    if not extended:
        moves.append(path)


def _path_problem(move: object) -> str | None:
    """Why ``move`` is not a path of squares a piece could follow, or ``None`` if it is one."""
    if not _is_squares(move):
        return "not a move: expected a tuple of at least two squares 1-32"
    if move in STEPS:
        return None
    if len(move) == 2 and move not in JUMPS:
        return f"{move[0]} to {move[1]} is neither a diagonal step nor a jump"
    for hop in pairwise(move):
        if hop not in JUMPS:
            return f"{hop[0]} to {hop[1]} is not a jump"
    return None


def _is_squares(move: object) -> TypeGuard[Path]:
    """Whether ``move`` is a tuple of at least two square numbers."""
    return type(move) is tuple and len(move) >= 2 and all(type(s) is int and s in SQUARES for s in move)


def _not_a_path(move: object) -> str:
    return _path_problem(move) or "not a move"


def _pdn_path(text: str) -> Path:
    """The squares PDN ``text`` names, origin first, checked as far as the text alone allows.

    Raises :class:`IllegalMoveError` naming ``text`` if it is not PDN, names a square off the board,
    writes as a step what is no diagonal step, or writes a step as a capture.
    """
    match = _NOTATION.fullmatch(text.strip().lower()) if isinstance(text, str) else None
    if match is None:
        raise IllegalMoveError(text, "expected PDN square numbers such as 11-15 or 22x15x8")
    if match[2]:
        path = _on_board(text, (int(match[1]), int(match[3])))
        if path not in STEPS:
            hint = " (captures are written with x)" if path in JUMPS else ""
            raise IllegalMoveError(text, f"{path[0]} to {path[1]} is not a diagonal step{hint}")
        return path
    path = _on_board(text, (int(match[1]), *(int(square) for square in match[4].split("x")[1:])))
    if path in STEPS:
        step = f"{path[0]}-{path[1]}"
        raise IllegalMoveError(text, f"{path[0]} to {path[1]} is a step, not a capture: write {step}")
    return path


def _on_board(text: str, path: Path) -> Path:
    """``path``, read from ``text``; raises :class:`IllegalMoveError` naming a square it has off the board."""
    for square in path:
        if square not in SQUARES:
            raise IllegalMoveError(text, f"there is no square {square}: squares are numbered 1-32")
    return path


def _fen_fields(text: str) -> tuple[int, list[tuple[int, str]]]:
    """The side to move of FEN ``text`` and, per side as listed, its seat and its list of pieces.

    Raises ``ValueError`` naming ``text`` unless it has three fields: the side to move, then each
    side's pieces once.
    """
    fields = text.strip().upper().split(":")
    if len(fields) != 3 or fields[0] not in ("B", "W"):
        raise ValueError(f"bad FEN {text!r}: expected '<B|W>:W<squares>:B<squares>'")
    sides = [side for side in map(_FEN_SIDE.fullmatch, fields[1:]) if side is not None]
    if len(sides) != 2 or {side[1] for side in sides} != {"B", "W"}:
        raise ValueError(f"bad FEN {text!r}: expected White's and Black's pieces once each")
    return "BW".index(fields[0]), [("BW".index(side[1]), side[2] or "") for side in sides]


def _fen_pieces(text: str, seat: int, listed: str, occupied: int) -> tuple[int, int]:
    """The bitboards of the men and kings that ``listed`` (such as ``18,24,K10`` or ``1-12``) gives
    ``seat``, on squares not ``occupied`` already.

    Raises ``ValueError`` naming ``text`` for a square off the board or repeated, or a man where it
    would be a king.
    """
    men = kings = 0
    for item in listed.split(",") if listed else ():
        king = item.startswith("K")
        first, _, last = item.removeprefix("K").partition("-")
        for square in range(int(first), int(last or first) + 1):
            if square not in SQUARES or (occupied | men | kings) & bit(square):
                raise ValueError(f"bad FEN {text!r}: square {square} is off the board or repeated")
            if king:
                kings |= bit(square)
            elif bit(square) & CROWN_ROW[seat]:
                raise ValueError(f"bad FEN {text!r}: a {SIDES[seat]} man on {square} would be a king")
            else:
                men |= bit(square)
    return men, kings


RULES = Game(
    name="checkers",
    title="Checkers",
    sides=SIDES,
    notation="PDN squares 1-32: 11-15 for a step, 22x15x8 for captures (every landing square)",
    start=Checkers,
    pieces=seat_marks("man", king="king"),
    from_fen=Checkers.from_fen,
)
