"""The one interface that every game's rules present to the server and the search.

A game is a module in this package that defines ``RULES``, a :class:`Game`. Its
positions are immutable: :meth:`Position.play` returns a new position, so a
position can be shared between coroutines, cached in a transposition table or
sent to another process without copying. Moves are small hashable values (an
``int`` for most games, a tuple for checkers) that the search may keep in tables;
text crosses the wire only through :meth:`Position.parse_move`,
:meth:`Position.format_move` and :meth:`Position.legal_notation`, in the game's
usual notation.

The four games' positions are frozen ``msgspec`` structs rather than frozen
dataclasses: a search makes one a node, and a struct is made in C, where a frozen
dataclass sets each field through ``object.__setattr__`` (a tenth of a checkers
search's instructions went there).

Seats are numbered 0 and 1; seat 0 moves first.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any, Protocol, TypeAlias, TypeVar

Move: TypeAlias = Hashable
MoveT = TypeVar("MoveT", bound=Hashable)
"""The move type of one game: ``int`` for most, a tuple for checkers."""


class IllegalMoveError(ValueError):
    """A move that is malformed or not legal where it was tried.

    Carries the move as it was given and a human reason, so the server can pass
    the reason on to the player unchanged.
    """

    def __init__(self, move: object, reason: str) -> None:
        super().__init__(f"illegal move {move!r}: {reason}")
        self.move = move
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a finished game ended: the winning seat (``None`` for a draw) and why."""

    winner: int | None
    reason: str

    @property
    def is_draw(self) -> bool:
        return self.winner is None


class Position(Protocol[MoveT]):
    """An immutable game position; see the module docstring. Generic in its game's move type, so that
    each game's positions take and give moves of their own type; a bare ``Position`` is any game's."""

    @property
    def turn(self) -> int:
        """The seat to move: 0 or 1."""
        ...

    @property
    def ply(self) -> int:
        """How many moves (passes included) led here from the start."""
        ...

    def legal_moves(self) -> list[MoveT]:
        """Every legal move, empty once the game is over."""
        ...

    def play(self, move: MoveT) -> Position[MoveT]:
        """The position after ``move``; raises :class:`IllegalMoveError` if it is not legal."""
        ...

    def outcome(self) -> Outcome | None:
        """The result if the game is over, else ``None``."""
        ...

    def key(self) -> Hashable:
        """A hashable value equal for positions the search may treat as the same."""
        ...

    def parse_move(self, text: str) -> MoveT:
        """The legal move that ``text`` names in the game's notation.

        Raises :class:`IllegalMoveError` for text that is malformed or names a move
        that is not legal here.
        """
        ...

    def format_move(self, move: MoveT) -> str:
        """The move in the game's usual notation."""
        ...

    def legal_notation(self) -> list[str]:
        """Every legal move in notation, in :meth:`legal_moves`' order: what clients are sent after each
        move, so that they need no rules of their own."""
        ...

    def display_move(self, move: MoveT) -> str:
        """The move as people write it, for move lists and exports: SAN in chess (``Nf3``, ``exd8=Q+``),
        where the wire's notation is made for programs; elsewhere the notation itself."""
        ...

    def grid(self) -> tuple[str, ...]:
        """The board as rows of characters, top row first, for clients and logs.

        ``.`` an empty square, a space for a square no piece can use (the light
        squares of checkers), and a piece's character from its game's
        :attr:`Game.pieces`: ``x`` a piece of seat 0, ``o`` a piece of seat 1 and
        ``X`` and ``O`` their kings in the games that need no more, FEN's letters
        in chess. Clients draw boards from this, so no rules need to be written twice.
        """
        ...


@dataclass(frozen=True, slots=True)
class Piece:
    """What one character of :meth:`Position.grid` stands for: whose piece it is, and which kind."""

    seat: int
    name: str
    """The kind for people: ``disc``, ``man``, ``king``, ``knight``."""


def seat_marks(piece: str, king: str | None = None) -> dict[str, Piece]:
    """The grid characters of a game that tells pieces apart by seat (and king) only: ``x`` and ``o``
    for ``piece`` of seats 0 and 1, ``X`` and ``O`` for their ``king`` if the game has kings."""
    marks = {"x": Piece(0, piece), "o": Piece(1, piece)}
    if king is not None:
        marks |= {"X": Piece(0, king), "O": Piece(1, king)}
    return marks


@dataclass(frozen=True, slots=True)
class Game:
    """What the rest of Ply Arena needs to know about a game besides its positions."""

    name: str
    """Short identifier used on the wire, in URLs and on the command line."""
    title: str
    """Human name."""
    sides: tuple[str, str]
    """Names of the two sides, first mover first (e.g. ``("Black", "White")``)."""
    notation: str
    """One line describing the move notation, for documentation and clients."""
    start: Callable[[], Position[Any]]
    """The initial position."""
    pieces: Mapping[str, Piece] = field(default_factory=lambda: seat_marks("piece"))
    """Every character :meth:`Position.grid` may draw a piece with, and what it stands for: clients read
    it from ``/api/games`` and need no table of their own per game."""
    display_notation: str | None = None
    """One line describing how :meth:`Position.display_move` writes moves, for a game where that is not
    the wire's notation (chess: SAN); ``None`` where people write moves as the wire does."""
    from_fen: Callable[[str], Position[Any]] | None = None
    """A position from the game's usual position text (FEN), for games that have one; raises
    ``ValueError`` naming the text when it is no position."""

    def replay(self, moves: Iterable[str]) -> Position:
        """The position reached by playing ``moves`` (notation) from the start."""
        position = self.start()
        for text in moves:
            position = position.play(position.parse_move(text))
        return position

    def history(self, moves: Sequence[str]) -> list[Position]:
        """Every position of a game, the start included, for replays and exports."""
        positions = [self.start()]
        for text in moves:
            last = positions[-1]
            positions.append(last.play(last.parse_move(text)))
        return positions

    def displayed(self, positions: Sequence[Position], moves: Sequence[str]) -> list[str] | None:
        """``moves`` (notation, each played from the position of the same index in ``positions``) as
        people write them, or ``None`` for a game without a :attr:`display_notation`."""
        if self.display_notation is None:
            return None
        pairs = zip(positions, moves, strict=False)
        return [position.display_move(position.parse_move(text)) for position, text in pairs]


def _byte_cells() -> dict[tuple[int, int], str]:
    """Every row of eight cells, keyed by the two bytes that hold it."""
    table = {}
    for marks in product(".xo", repeat=8):
        first = sum(1 << bit for bit, mark in enumerate(marks) if mark == "x")
        second = sum(1 << bit for bit, mark in enumerate(marks) if mark == "o")
        table[first, second] = "".join(marks)
    return table


_BYTE_CELLS = _byte_cells()


def cells(first: int, second: int, count: int) -> str:
    """``count`` cells of a :meth:`Position.grid` row from two disjoint bitboards, bit 0 first.

    ``x`` where ``first`` has the bit, ``o`` where ``second`` has it, ``.``
    elsewhere. Every move sends the board to the players, so bitboard games
    build their rows a byte at a time from a table instead of a cell at a time.
    """
    text = []
    for shift in range(0, count, 8):
        text.append(_BYTE_CELLS[first >> shift & 0xFF, second >> shift & 0xFF])
    return "".join(text)[:count]


def perft(position: Position, depth: int) -> int:
    """The number of legal move sequences of exactly ``depth`` plies from ``position``.

    The standard check of move generation against published tables. The last ply
    is counted without being played (bulk counting).
    """
    if depth == 0:
        return 1
    moves = position.legal_moves()
    if depth == 1:
        return len(moves)
    return sum(perft(position.play(move), depth - 1) for move in moves)
