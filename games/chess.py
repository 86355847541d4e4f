"""Chess, on python-chess: the library's move generation, our game's face.

A position wraps a :class:`chess.Board` that is never changed once the position
holds it (every :meth:`Chess.play` copies), with no move stack: what the draw
rules need of the past, the positions since the last capture or pawn move, is
kept as their keys, as checkers keeps its own. White (seat 0) moves first.

Moves are :class:`chess.Move` values. On the wire they are UCI (``e2e4``,
``e1g1`` to castle, ``e7e8q`` to promote), which a program reads without
rules; :meth:`Chess.parse_move` also reads SAN (``e4``, ``O-O``, ``e8=Q``), and
:meth:`Chess.display_move` writes it for people.

Every end is decided by the position alone, at once, with no claim to make:
checkmate, stalemate, insufficient material (neither side can ever mate), the
same position for the third time, and fifty moves of each side (100 plies)
without a capture or a pawn move.
"""

from __future__ import annotations

import re
from collections.abc import Hashable

import chess
import msgspec

from games.base import Game, IllegalMoveError, Outcome, Piece

WHITE_SEAT, BLACK_SEAT = 0, 1
SIDES = ("White", "Black")
FIFTY_MOVE_PLIES = 100
"""Plies without a capture or a pawn move after which the game is drawn (fifty moves of each side)."""

CHECKMATE = "checkmate"
STALEMATE = "stalemate"
INSUFFICIENT_MATERIAL = "insufficient material"
THREEFOLD_REPETITION = "threefold repetition"
FIFTY_MOVE_RULE = "fifty moves without a capture or a pawn move"

PIECES = {
    chess.piece_symbol(piece_type).upper() if color else chess.piece_symbol(piece_type): Piece(
        WHITE_SEAT if color else BLACK_SEAT, chess.piece_name(piece_type)
    )
    for color in (chess.WHITE, chess.BLACK)
    for piece_type in chess.PIECE_TYPES
}
"""The grid's letters, as in FEN: ``PNBRQK`` White's (seat 0), ``pnbrqk`` Black's (seat 1)."""

_UCI = re.compile(r"[a-h][1-8][a-h][1-8][qrbn]?")
_PROMOTIONS = "qrbn"


class Chess(msgspec.Struct, frozen=True):
    """A chess position: the board, how many plies led here, and what threefold repetition needs."""

    board: chess.Board
    """The position as python-chess has it: read it, never change it (positions are shared)."""
    ply: int = 0
    earlier_keys: tuple[Hashable, ...] = ()
    """Keys of the positions since the last capture or pawn move, oldest first: those moves cannot be
    undone, so no older position can recur."""

    @classmethod
    def start(cls) -> Chess:
        """The initial position."""
        return cls(chess.Board())

    @classmethod
    def from_fen(cls, text: str) -> Chess:
        """A position from FEN, such as Kiwipete's
        ``r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1``.

        Raises ``ValueError`` naming the text if it is not FEN, or not a position a game can reach
        (no king, the side not to move in check, pawns on the first rank, ...).
        """
        if not isinstance(text, str):
            raise ValueError(f"bad FEN {text!r}: expected text")
        try:
            board = chess.Board(text.strip())
        except ValueError as error:
            raise ValueError(f"bad FEN {text!r}: {error}") from None
        status = board.status()
        problems = [str(flag.name).lower().replace("_", " ") for flag in chess.Status if flag in status]
        if problems:
            raise ValueError(f"bad FEN {text!r}: not a legal position ({', '.join(problems)})")
        return cls(board)

    def __eq__(self, other: object) -> bool:
        if type(other) is not Chess:
            return NotImplemented
        return self.board == other.board and self.ply == other.ply and self.earlier_keys == other.earlier_keys

    def __hash__(self) -> int:
        return hash(self.key())

    @property
    def turn(self) -> int:
        return WHITE_SEAT if self.board.turn == chess.WHITE else BLACK_SEAT

    def fen(self) -> str:
        """The position in FEN, with its half-move clock and move number."""
        return self.board.fen()

    def key(self) -> Hashable:
        """What makes two positions the same for repetition (FIDE's rule) and for the search's table:
        the pieces, the side to move, the castling rights, and an en passant capture only if one is
        legal. The counters are left out."""
        board = self.board
        return (
            board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings,
            board.occupied_co[chess.WHITE], board.turn, board.clean_castling_rights(),
            board.ep_square if board.has_legal_en_passant() else None,
        )  # fmt: skip

    def _draw_reason(self) -> str | None:
        """Which draw rule ends the game here, if one does; checkmate and stalemate are asked apart."""
        board = self.board
        if board.is_insufficient_material():
            return INSUFFICIENT_MATERIAL
        # A position recurs at the earliest four plies later (both sides move a piece there and back).
        if len(self.earlier_keys) >= 4 and self.earlier_keys.count(self.key()) >= 2:
            return THREEFOLD_REPETITION
        if board.halfmove_clock >= FIFTY_MOVE_PLIES:
            return FIFTY_MOVE_RULE
        return None

    def outcome(self) -> Outcome | None:
        """Checkmate comes first: a mate on the hundredth quiet ply wins, as FIDE's rules say."""
        board = self.board
        if not any(board.generate_legal_moves()):
            if board.is_check():
                return Outcome(1 - self.turn, CHECKMATE)
            return Outcome(None, STALEMATE)
        reason = self._draw_reason()
        return None if reason is None else Outcome(None, reason)

    def legal_moves(self) -> list[chess.Move]:
        if self._draw_reason() is not None:
            return []
        return list(self.board.generate_legal_moves())

    def captures(self) -> list[chess.Move]:
        """Every legal capture, en passant included (what a quiescence search plays on); empty once the
        game is over."""
        if self._draw_reason() is not None:
            return []
        return list(self.board.generate_legal_captures())

    def play(self, move: chess.Move) -> Chess:
        """The position after ``move``; raises :class:`IllegalMoveError` saying why it is not legal."""
        if type(move) is not chess.Move:
            raise IllegalMoveError(move, "not a move: expected a chess.Move")
        if self._draw_reason() is not None or not self.board.is_legal(move):
            raise IllegalMoveError(move, self._why_illegal(move))
        board = self.board.copy(stack=False)
        board.push(move)
        board.clear_stack()
        # A capture or a pawn move (the half-move clock starts over) makes every earlier position unreachable.
        earlier = () if board.halfmove_clock == 0 else (*self.earlier_keys, self.key())
        return Chess(board, self.ply + 1, earlier)

    def _why_illegal(self, move: chess.Move) -> str:
        """Why ``move`` cannot be played here, in words a player understands."""
        outcome = self.outcome()
        if outcome is not None:
            return f"the game is over ({outcome.reason})"
        board = self.board
        side = SIDES[self.turn]
        origin, target = chess.square_name(move.from_square), chess.square_name(move.to_square)
        piece = board.piece_at(move.from_square)
        if piece is None:
            return f"there is no piece on {origin}"
        if piece.color != board.turn:
            return f"the {_named(piece)} on {origin} is not {side}'s: it is {side}'s turn"
        promotes = piece.piece_type == chess.PAWN and chess.square_rank(move.to_square) in (0, 7)
        if promotes and move.promotion is None:
            *others, last = (f"{origin}{target}{letter}" for letter in _PROMOTIONS)
            return f"a pawn on the last rank is promoted: name the piece, {', '.join(others)} or {last}"
        if move.promotion is not None and not promotes:
            return "only a pawn that reaches the last rank is promoted"
        if move.promotion == chess.KING or move.promotion == chess.PAWN:
            return "a pawn is promoted to a queen, rook, bishop or knight"
        if board.is_pseudo_legal(move):
            return f"it would leave {side}'s king in check"
        if piece.piece_type == chess.KING and abs(move.to_square - move.from_square) == 2:
            return f"{side} cannot castle that way now"
        return f"the {_named(piece)} on {origin} cannot move to {target}"

    def parse_move(self, text: str) -> chess.Move:
        """The legal move ``text`` names: UCI (``e2e4``, ``e7e8q``), or SAN (``e4``, ``Nxf7+``, ``O-O``).

        Raises :class:`IllegalMoveError` naming ``text``: malformed, ambiguous SAN, or not legal here.
        """
        stripped = text.strip() if isinstance(text, str) else ""
        if _UCI.fullmatch(stripped.lower()):
            move = chess.Move.from_uci(stripped.lower())
            if self._draw_reason() is None and self.board.is_legal(move):
                return move
            raise IllegalMoveError(text, self._why_illegal(move))
        if not (chess.SAN_REGEX.match(stripped) or stripped.rstrip("+#") in _CASTLES):
            raise IllegalMoveError(text, "expected a move in UCI (e2e4, e7e8q) or SAN (e4, Nf3, O-O, e8=Q)")
        return self._parse_san(text, stripped)

    def _parse_san(self, text: str, stripped: str) -> chess.Move:
        """The legal move SAN ``stripped`` names; the errors name ``text``, as it came."""
        outcome = self.outcome()
        if outcome is not None:
            raise IllegalMoveError(text, f"the game is over ({outcome.reason})")
        try:
            return self.board.parse_san(stripped)
        except chess.AmbiguousMoveError:
            candidates = self._same_destination(stripped)
            raise IllegalMoveError(text, f"ambiguous: it could be {' or '.join(candidates)}") from None
        except ValueError:  # chess.IllegalMoveError or chess.InvalidMoveError
            side = SIDES[self.turn]
            raise IllegalMoveError(text, f"no legal move of {side}'s is {stripped} here") from None

    def _same_destination(self, san: str) -> list[str]:
        """The legal moves, in SAN, of the piece kind ``san`` names to the square it names."""
        found = chess.SAN_REGEX.match(san)
        if found is None:
            return []
        piece_type = chess.PIECE_SYMBOLS.index(found[1].lower()) if found[1] else chess.PAWN
        target = chess.parse_square(found[4])
        board = self.board
        return sorted(
            board.san(move)
            for move in board.generate_legal_moves(to_mask=chess.BB_SQUARES[target])
            if board.piece_type_at(move.from_square) == piece_type
        )

    def format_move(self, move: chess.Move) -> str:
        """UCI: ``e2e4``, ``e1g1`` (castling: the king's two squares), ``e7e8q``."""
        if type(move) is not chess.Move or not move:
            raise IllegalMoveError(move, "not a move: expected a chess.Move")
        return move.uci()

    def display_move(self, move: chess.Move) -> str:
        """SAN, with ``+`` for check and ``#`` for mate: ``Nf3``, ``O-O``, ``exd8=Q+``."""
        # (SAN asks whether the move gives check by playing it: on a copy, since positions are shared.)
        return self.board.copy(stack=False).san(move)

    def legal_notation(self) -> list[str]:
        return [move.uci() for move in self.legal_moves()]

    def grid(self) -> tuple[str, ...]:
        """Eight rows of eight, rank 8 first and the a-file on the left (White's view): FEN's letters."""
        return tuple(str(self.board).replace(" ", "").splitlines())

    def __str__(self) -> str:
        return str(self.board)


_CASTLES = ("O-O", "O-O-O", "0-0", "0-0-0")


def _named(piece: chess.Piece) -> str:
    """``White knight``: a piece as a player says it."""
    return f"{SIDES[WHITE_SEAT if piece.color else BLACK_SEAT]} {chess.piece_name(piece.piece_type)}"


RULES = Game(
    name="chess",
    title="Chess",
    sides=SIDES,
    notation="UCI: from and to squares, e2e4; castling as the king's move, e1g1; promotion adds the piece, "
    "e7e8q (SAN such as Nf3 or O-O is read too)",
    start=Chess.start,
    pieces=PIECES,
    display_notation="SAN: e4, Nf3, O-O, exd8=Q+",
    from_fen=Chess.from_fen,
)
