"""A Connect Four opening book: a move of the best exact score, for the positions the solver is slow in.

The exact solver (:mod:`bots.connect4_solver`, compiled) solves a position with a
dozen stones or more within a move's time, but the opening takes it minutes to
hours. The book fills that gap with data computed offline by ``plyarena book
connect4`` (:mod:`bots.connect4_book_build`).

Which positions: a book is built for the side to move at each of its roots (the
first player from the empty board, and either side after every opening of up to
three moves, where the tournaments' random openings leave it). At the
side's own turns the book holds one move of the best exact score (the quickest
win, a draw kept, or the longest loss) and that score; at the opponent's turns
every reply is followed. So, playing the book's moves, the side meets only
positions the book holds until it runs out at ``plies`` stones; from there the
live solver takes over.

Positions are stored under the smaller of their key and their mirror image's
(the board reflected left to right has the same score, with mirrored moves),
which halves the symmetric part of the book. The file is gzipped JSON.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from games.connect4 import WIDTH, ConnectFour, mirror_bits

BOOK_PATH = Path(__file__).with_name("connect4_book.json.gz")
"""The book level 8 plays from, built by ``plyarena book connect4``."""
FORMAT = "plyarena-connect4-book-2"


@dataclass(frozen=True, slots=True)
class BookMove:
    """What the book says of a position: a move of the best exact score, and that score."""

    move: int
    """A column, 0-based."""
    score: int
    """The position's exact score, from the side to move, in Pascal Pons' convention
    (see :mod:`bots.connect4_solver`)."""

    @property
    def value(self) -> int:
        """1 if the side to move wins under perfect play, 0 if it draws, -1 if it loses."""
        return (self.score > 0) - (self.score < 0)


@dataclass(frozen=True, slots=True)
class Book:
    """Book entries by canonical key (see :func:`canonical`), and how the book was made."""

    entries: dict[int, tuple[int, int]]
    """Canonical key to (move in the canonical orientation, exact score)."""
    plies: int
    """Positions with this many stones or more are left to the solver."""
    roots: tuple[str, ...]
    """The positions the book was built from, as column digits ("" is the empty board)."""
    nodes: int = 0
    """Positions the solver visited to build it (over every run, if it was resumed)."""
    seconds: float = 0.0
    """How long building it took (summed over every run, if it was resumed)."""
    complete: bool = True
    """False for a build stopped before every root was done: some lines end before ``plies``."""

    def lookup(self, position: ConnectFour) -> BookMove | None:
        """The book's move and score for ``position``, or ``None`` if it has none."""
        key = position.key()
        mirrored = mirror_key(key)
        entry = self.entries.get(min(key, mirrored))
        if entry is None:
            return None
        move, score = entry
        return BookMove(WIDTH - 1 - move if mirrored < key else move, score)

    def save(self, path: Path) -> None:
        """Write the book as gzipped JSON, entries sorted so that the same book makes the same file."""
        data = {
            "format": FORMAT,
            "plies": self.plies,
            "roots": list(self.roots),
            "nodes": self.nodes,
            "seconds": round(self.seconds, 1),
            "complete": self.complete,
            "entries": {f"{key:x}": [move, score] for key, (move, score) in sorted(self.entries.items())},
        }
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as file:
            json.dump(data, file, separators=(",", ":"))


def mirror_key(key: int) -> int:
    """The key of the position reflected left to right (see :func:`games.connect4.mirror_bits`)."""
    return mirror_bits(key)


def canonical(position: ConnectFour) -> int:
    """The key a book stores ``position`` under: the smaller of its key and its mirror image's."""
    key = position.key()
    return min(key, mirror_key(key))


def load(path: Path) -> Book:
    """Read a book written by :meth:`Book.save`; raises ``ValueError`` if it is not one."""
    with gzip.open(path, "rt", encoding="utf-8") as file:
        data = json.load(file)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path} is not a Connect Four book (expected format {FORMAT!r})")
    entries = {int(key, 16): (move, score) for key, (move, score) in data["entries"].items()}
    plies, roots, complete = data["plies"], tuple(data["roots"]), data["complete"]
    return Book(entries, plies, roots, data["nodes"], data["seconds"], complete)


@cache
def shipped_book() -> Book | None:
    """The book in bots/, read once per process; ``None`` if none has been built."""
    return load(BOOK_PATH) if BOOK_PATH.exists() else None


def book_move(position: ConnectFour) -> BookMove | None:
    """The shipped book's move for ``position``, if the book holds it."""
    book = shipped_book()
    return None if book is None else book.lookup(position)


def book_ends(book: Book, root: str) -> list[ConnectFour]:
    """Where the book ends for its side from ``root``: the positions past its plies, with no entry,
    that the side meets playing the book against every reply. The live level plays on from these."""
    ends: dict[int, ConnectFour] = {}
    seen: set[int] = set()
    stack = [ConnectFour.from_moves(root)]
    while stack:
        position = stack.pop()
        key = canonical(position)
        if position.outcome() is not None or key in seen:
            continue
        seen.add(key)
        entry = book.lookup(position)
        if entry is None:
            if position.ply >= book.plies:
                ends[key] = position
            continue
        after = position.play(entry.move)
        if after.outcome() is None:
            stack.extend(after.play(reply) for reply in after.legal_moves())
    return [ends[key] for key in sorted(ends)]
