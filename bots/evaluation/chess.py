"""Chess evaluation: material and piece-square tables, from the side to move.

Each piece is worth its material plus a bonus for where it stands, read from a
table per piece kind: knights and bishops in the centre, rooks on the seventh
rank, pawns advanced in the centre, the king tucked away behind its pawns while
queens are on the board and walking to the centre once the ending comes. The
values are those of Tomasz Michniewski's "Simplified Evaluation Function"
(chessprogramming.org), a small table that plays sound chess, in centipawns.

Material alone misjudges a position in the middle of an exchange (a queen that
has just taken a pawn defended by another); :func:`captures` lets the search
play the captures out to a quiet position first (:mod:`bots.quiescence`).
"""

from __future__ import annotations

import chess

from bots.evaluation import EVALUATION_LIMIT
from games.chess import Chess

PIECE_VALUES = {
    chess.PAWN: 100,
    chess.KNIGHT: 320,
    chess.BISHOP: 330,
    chess.ROOK: 500,
    chess.QUEEN: 900,
    chess.KING: 0,
}
"""Material in centipawns; the king is never traded, so it is worth nothing here."""

# Tables as a diagram from White's side: rank 8 on the first line, the a-file on the left.
_DIAGRAMS = {
    chess.PAWN: (
          0,   0,   0,   0,   0,   0,   0,   0,
         50,  50,  50,  50,  50,  50,  50,  50,
         10,  10,  20,  30,  30,  20,  10,  10,
          5,   5,  10,  25,  25,  10,   5,   5,
          0,   0,   0,  20,  20,   0,   0,   0,
          5,  -5, -10,   0,   0, -10,  -5,   5,
          5,  10,  10, -20, -20,  10,  10,   5,
          0,   0,   0,   0,   0,   0,   0,   0,
    ),
    chess.KNIGHT: (
        -50, -40, -30, -30, -30, -30, -40, -50,
        -40, -20,   0,   0,   0,   0, -20, -40,
        -30,   0,  10,  15,  15,  10,   0, -30,
        -30,   5,  15,  20,  20,  15,   5, -30,
        -30,   0,  15,  20,  20,  15,   0, -30,
        -30,   5,  10,  15,  15,  10,   5, -30,
        -40, -20,   0,   5,   5,   0, -20, -40,
        -50, -40, -30, -30, -30, -30, -40, -50,
    ),
    chess.BISHOP: (
        -20, -10, -10, -10, -10, -10, -10, -20,
        -10,   0,   0,   0,   0,   0,   0, -10,
        -10,   0,   5,  10,  10,   5,   0, -10,
        -10,   5,   5,  10,  10,   5,   5, -10,
        -10,   0,  10,  10,  10,  10,   0, -10,
        -10,  10,  10,  10,  10,  10,  10, -10,
        -10,   5,   0,   0,   0,   0,   5, -10,
        -20, -10, -10, -10, -10, -10, -10, -20,
    ),
    chess.ROOK: (
          0,   0,   0,   0,   0,   0,   0,   0,
          5,  10,  10,  10,  10,  10,  10,   5,
         -5,   0,   0,   0,   0,   0,   0,  -5,
         -5,   0,   0,   0,   0,   0,   0,  -5,
         -5,   0,   0,   0,   0,   0,   0,  -5,
         -5,   0,   0,   0,   0,   0,   0,  -5,
         -5,   0,   0,   0,   0,   0,   0,  -5,
          0,   0,   0,   5,   5,   0,   0,   0,
    ),
    chess.QUEEN: (
        -20, -10, -10,  -5,  -5, -10, -10, -20,
        -10,   0,   0,   0,   0,   0,   0, -10,
        -10,   0,   5,   5,   5,   5,   0, -10,
         -5,   0,   5,   5,   5,   5,   0,  -5,
          0,   0,   5,   5,   5,   5,   0,  -5,
        -10,   5,   5,   5,   5,   5,   0, -10,
        -10,   0,   5,   0,   0,   0,   0, -10,
        -20, -10, -10,  -5,  -5, -10, -10, -20,
    ),
    chess.KING: (
        -30, -40, -40, -50, -50, -40, -40, -30,
        -30, -40, -40, -50, -50, -40, -40, -30,
        -30, -40, -40, -50, -50, -40, -40, -30,
        -30, -40, -40, -50, -50, -40, -40, -30,
        -20, -30, -30, -40, -40, -30, -30, -20,
        -10, -20, -20, -20, -20, -20, -20, -10,
         20,  20,   0,   0,   0,   0,  20,  20,
         20,  30,  10,   0,   0,  10,  30,  20,
    ),
}  # fmt: skip
_KING_ENDGAME_DIAGRAM = (
    -50, -40, -30, -20, -20, -30, -40, -50,
    -30, -20, -10,   0,   0, -10, -20, -30,
    -30, -10,  20,  30,  30,  20, -10, -30,
    -30, -10,  30,  40,  40,  30, -10, -30,
    -30, -10,  30,  40,  40,  30, -10, -30,
    -30, -10,  20,  30,  30,  20, -10, -30,
    -30, -30,   0,   0,   0,   0, -30, -30,
    -50, -30, -30, -30, -30, -30, -30, -50,
)  # fmt: skip


def _by_square(diagram: tuple[int, ...], value: int, color: chess.Color) -> tuple[int, ...]:
    """Material plus the diagram's bonus, indexed by python-chess's square (a1 = 0, h8 = 63) for a
    piece of ``color``: White reads the diagram as drawn, Black as seen from its own side."""
    return tuple(
        value + diagram[(7 - chess.square_rank(square) if color else chess.square_rank(square)) * 8
                        + chess.square_file(square)]
        for square in chess.SQUARES
    )  # fmt: skip


SQUARE_VALUES = {
    (piece_type, color): _by_square(diagram, PIECE_VALUES[piece_type], color)
    for piece_type, diagram in _DIAGRAMS.items()
    for color in chess.COLORS
}
"""What a piece of each kind and colour is worth on each square: its material and its bonus there."""
KING_ENDGAME_VALUES = {color: _by_square(_KING_ENDGAME_DIAGRAM, 0, color) for color in chess.COLORS}


def is_endgame(board: chess.Board) -> bool:
    """Whether the king should come out: no queens left, or at most two other pieces besides pawns."""
    return not board.queens or chess.popcount(board.knights | board.bishops | board.rooks) <= 2


def evaluate(position: Chess) -> int:
    """Material and placement of White's pieces minus Black's, from the side to move's point of view."""
    board = position.board
    endgame = is_endgame(board)
    score = 0
    for color, sign in ((chess.WHITE, 1), (chess.BLACK, -1)):
        own = board.occupied_co[color]
        for piece_type, pieces in (
            (chess.PAWN, board.pawns), (chess.KNIGHT, board.knights), (chess.BISHOP, board.bishops),
            (chess.ROOK, board.rooks), (chess.QUEEN, board.queens),
        ):  # fmt: skip
            values = SQUARE_VALUES[piece_type, color]
            score += sign * sum(values[square] for square in chess.scan_forward(pieces & own))
        king = chess.msb(board.kings & own)
        score += sign * (KING_ENDGAME_VALUES[color] if endgame else SQUARE_VALUES[chess.KING, color])[king]
    if board.turn == chess.BLACK:
        score = -score
    return max(-EVALUATION_LIMIT + 1, min(EVALUATION_LIMIT - 1, score))


def order_key(position: Chess, move: chess.Move) -> int:
    """Captures first, the most valuable victim by the least valuable attacker; then promotions; then
    quiet moves by how much their piece gains on its table."""
    board = position.board
    mover = board.piece_type_at(move.from_square) or chess.PAWN
    key = 0
    if board.is_capture(move):
        victim = board.piece_type_at(move.to_square) or chess.PAWN  # (en passant: the square is empty)
        key = 10_000 + 10 * PIECE_VALUES[victim] - PIECE_VALUES[mover] // 10
    if move.promotion is not None:
        key += 5_000 + PIECE_VALUES[move.promotion]
    if not key:
        values = SQUARE_VALUES[mover, board.turn]
        key = values[move.to_square] - values[move.from_square]
    return key


def captures(position: Chess) -> list[chess.Move]:
    """The moves a quiescence search plays past the horizon: every legal capture."""
    return position.captures()
