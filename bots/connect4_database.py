"""The exact score of every 12-stone Connect Four position, read from BitBully's opening database.

The file is ``book_12ply_distances.dat`` of the ``bitbully-databases`` package
(Markus Thill, MIT licence; ``pip install bitbully-databases``): one 5-byte
record per 12-stone position that nobody has won yet, a position and its mirror
image stored once, sorted. Each is the position's code (4 bytes, big-endian,
signed; see :func:`huffman_code`) and a signed byte: ``100 - d`` if the first
player, to move, wins with the ``d``-th stone from here, ``-(100 - d)`` if the
second player does, 0 for a draw. Only the file's format is used, none of the
package's code; :mod:`bots.connect4_book_build` turns these into the opening
book's exact scores, and the tests check a sample against our own solver.
"""

from __future__ import annotations

from pathlib import Path

from games.connect4 import (
    CELLS,
    CENTRE_FIRST,
    COLUMN_BITS,
    COLUMN_MASKS,
    HEIGHT,
    WIDTH,
    ConnectFour,
    mirror_bits,
)

PLIES = 12
"""The database holds the positions with this many stones."""
RECORD = 5
DISTANCE_BASE = 100


class ScoreDatabase:
    """Exact scores of 12-stone positions, in Pascal Pons' convention (see :mod:`bots.connect4_solver`)."""

    def __init__(self, records: dict[int, int]) -> None:
        self._records = records

    @classmethod
    def read(cls, path: Path) -> ScoreDatabase:
        """Read ``book_12ply_distances.dat``; raises ``ValueError`` if the file is not made of its records."""
        return cls.from_bytes(path.read_bytes(), str(path))

    @classmethod
    def from_bytes(cls, data: bytes, source: str) -> ScoreDatabase:
        """The database in ``data`` (read from ``source``, named in errors)."""
        if not data or len(data) % RECORD:
            raise ValueError(f"{source} is not a database of {RECORD}-byte records ({len(data)} bytes)")
        records = {}
        for offset in range(0, len(data), RECORD):
            code = int.from_bytes(data[offset : offset + 4], "big", signed=True)
            records[code] = int.from_bytes(data[offset + 4 : offset + 5], "big", signed=True)
        return cls(records)

    def __len__(self) -> int:
        return len(self._records)

    def score(self, position: ConnectFour) -> int:
        """The exact score of ``position``, 12 stones with nobody's four, from the side to move (the first
        player); raises ``KeyError`` if the database does not hold it."""
        if position.ply != PLIES:
            raise ValueError(f"the database holds positions with {PLIES} stones, not {position.ply}")
        first, mask = position.stones(0), position.mask
        for code in (huffman_code(first, mask), huffman_code(mirror_bits(first), mirror_bits(mask))):
            stored = self._records.get(code)
            if stored is not None:
                return _pons_score(stored)
        raise KeyError(f"no 12-stone position {position.key():#x} in the database")


def _pons_score(stored: int) -> int:
    """A stored distance as a Pons score for the first player, to move with 12 stones on the board."""
    if stored == 0:
        return 0
    distance = DISTANCE_BASE - abs(stored)
    stones_at_end = PLIES + distance
    winners_stones = (stones_at_end + 1) // 2  # the first player's, or the second's when the count is even
    score = (CELLS + 2) // 2 - winners_stones
    return score if stored > 0 else -score


def huffman_code(first: int, mask: int) -> int:
    """The database's code for a position: ``first`` the first player's stones, ``mask`` every stone.

    Column by column from the left, bottom up: ``10`` for a first-player stone,
    ``11`` for a second-player stone, ``0`` to end the column (a full one too),
    and a final ``0``; a 12-stone position takes 32 bits, read as a signed number.
    """
    code = 0
    for column in range(WIDTH):
        for row in range(HEIGHT):
            cell = 1 << column * COLUMN_BITS + row
            if not mask & cell:
                code <<= 1
                break
            code = code << 2 | (2 if first & cell else 3)
        else:
            code <<= 1
    code <<= 1
    return code - (1 << 32) if code >= 1 << 31 else code


class DatabaseMinimax:
    """Exact scores of positions with fewer than 12 stones: plain minimax down to the database, remembered.

    It offers the two calls of the exact search that an opening book needs
    (:class:`~bots.connect4_solver.ExactSearch`'s ``score`` and ``best_move``), in
    seconds for positions the solver takes minutes to hours over.
    """

    def __init__(self, database: ScoreDatabase) -> None:
        self._database = database
        self._known: dict[int, int] = {}
        self._visited = 0

    def score(self, position: ConnectFour) -> int:
        """The exact score of ``position`` (at most 12 stones, no four yet), from the side to move."""
        self._visited += 1
        if position.can_win_next():
            return (CELLS + 1 - position.ply) // 2
        if position.ply == PLIES:
            return self._database.score(position)
        key = min(position.key(), mirror_bits(position.key()))
        known = self._known.get(key)
        if known is None:
            safe = position.non_losing_moves()
            moves = [move for move in position.legal_moves() if safe & COLUMN_MASKS[move]]
            # With no safe move, the opponent wins with its next stone whatever is played.
            known = max(
                (-self.score(position.play(move)) for move in moves), default=-((CELLS - position.ply) // 2)
            )
            self._known[key] = known
        return known

    def best_move(self, position: ConnectFour, score: int) -> int | None:
        """The first move, centre first, that keeps ``score``, the exact score of ``position``."""
        for move in sorted(position.legal_moves(), key=CENTRE_FIRST.index):
            if position.is_winning_move(move) or -self.score(position.play(move)) == score:
                return move
        return None

    def nodes(self) -> int:
        """Positions visited so far."""
        return self._visited
