"""A Connect Four opening book: the moves that keep the game-theoretic value where the solver is slow.

The exact solver (:mod:`bots.connect4_solver`) solves a position from the
middle game on within a level's node budget, but the opening takes it minutes
(compiled) to days (in pure Python). The book fills that gap with data computed offline by
``plyarena book connect4``: for the positions a player can face early in the
game while it plays the book, a move that keeps the position's value (win, draw
or loss under perfect play) and that value.

Which positions: a book is built for the side to move at each of its roots (the
first player from the empty board, the second after a first move). At the
side's own turns the book holds one move, one that keeps the value; at the
opponent's turns every reply is followed. So, playing the book's moves, the side
meets only positions the book holds until it runs out at ``plies`` stones; from
there the live solver takes over. In a lost position (the second player's after a
centre opening) the book plays the first move, centre first, that does not lose
at once, and follows every reply, so that it keeps whatever an opponent's mistake
gives away; past ``plies``, lost positions get no entry.

Where the values come from: the exact solver, weakly (win, draw or loss only,
:class:`~bots.connect4_solver.WeakSolver`), which is fine for late roots but
would take days from the empty board; or a :class:`ValueTable` of every
12-stone position, with a plain minimax above it, which builds the shipped book
(to 12 stones, for both players) in seconds.

Positions are stored under the smaller of their key and their mirror image's
(the board reflected left to right has the same value, with mirrored moves),
which halves the symmetric part of the book. The file is gzipped JSON.
"""

from __future__ import annotations

import gzip
import json
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from bots import perfect
from bots.connect4_solver import WeakSolver
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

BOOK_PATH = Path(__file__).with_name("connect4_book.json.gz")
"""The book level 8 plays from, built by ``plyarena book connect4``."""
FORMAT = "plyarena-connect4-book-1"


@dataclass(frozen=True, slots=True)
class BookMove:
    """What the book says of a position: a move that keeps its value, and that value."""

    move: int
    """A column, 0-based."""
    value: int
    """1 if the side to move wins under perfect play, 0 if it draws, -1 if it loses."""


@dataclass(frozen=True, slots=True)
class Book:
    """Book entries by canonical key (see :func:`canonical`), and how the book was made."""

    entries: dict[int, tuple[int, int]]
    """Canonical key to (move in the canonical orientation, value)."""
    plies: int
    """Positions with this many stones or more are left to the solver."""
    roots: tuple[str, ...]
    """The positions the book was built from, as column digits ("" is the empty board)."""
    nodes: int = 0
    """Positions the solver visited to build it (over every run, if it was resumed)."""
    seconds: float = 0.0
    """How long building it took (summed over every run, if it was resumed)."""
    solver_nodes: int | None = None
    """If set, past ``plies`` the book goes on wherever the live level could not settle a
    position within this node budget (see :func:`build`)."""
    extended: tuple[str, ...] = ()
    """The roots whose positions past ``plies`` were all checked against that budget."""

    def lookup(self, position: ConnectFour) -> BookMove | None:
        """The book's move and value for ``position``, or ``None`` if it has none."""
        key = position.key()
        mirrored = mirror_key(key)
        entry = self.entries.get(min(key, mirrored))
        if entry is None:
            return None
        move, value = entry
        return BookMove(WIDTH - 1 - move if mirrored < key else move, value)

    def save(self, path: Path) -> None:
        """Write the book as gzipped JSON, entries sorted so that the same book makes the same file."""
        data = {
            "format": FORMAT,
            "plies": self.plies,
            "roots": list(self.roots),
            "nodes": self.nodes,
            "seconds": round(self.seconds, 1),
            "solver_nodes": self.solver_nodes,
            "extended": list(self.extended),
            "entries": {f"{key:x}": [move, value] for key, (move, value) in sorted(self.entries.items())},
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
    entries = {int(key, 16): (move, value) for key, (move, value) in data["entries"].items()}
    return Book(
        entries,
        data["plies"],
        tuple(data["roots"]),
        data["nodes"],
        data["seconds"],
        data.get("solver_nodes"),
        tuple(data.get("extended", ())),
    )


def settled_path(book_path: Path) -> Path:
    """Where the extension pass of the book at ``book_path`` records the positions that settle live."""
    return book_path.with_name(book_path.name.split(".")[0] + ".settled.txt.gz")


def read_settled(path: Path) -> set[int]:
    """The canonical keys recorded by :func:`record_settled`; none if there is no such file."""
    if not path.exists():
        return set()
    with gzip.open(path, "rt", encoding="ascii") as file:
        return {int(line, 16) for line in file if line.strip()}


def record_settled(path: Path, keys: Iterable[int]) -> None:
    """Add ``keys`` to the file: a gzip member of hex keys, one a line, appended, so that a kill loses
    at most what has not been appended yet."""
    lines = "".join(f"{key:x}\n" for key in keys)
    if lines:
        with gzip.open(path, "at", encoding="ascii") as file:
            file.write(lines)


@cache
def shipped_book() -> Book | None:
    """The book in bots/, read once per process; ``None`` if none has been built."""
    return load(BOOK_PATH) if BOOK_PATH.exists() else None


def book_move(position: ConnectFour) -> BookMove | None:
    """The shipped book's move for ``position``, if the book holds it."""
    book = shipped_book()
    return None if book is None else book.lookup(position)


class ValueTable:
    """The value of every position with a given number of stones, read from a database file.

    The file is BitBully's 12-stone opening database (``book_12ply.dat`` in the
    ``bitbully-databases`` package on PyPI, MIT licence): big-endian 4-byte
    records, one per position (the first player to move) that the first player
    does not win, each the position's Huffman code (see :func:`huffman_code`)
    with the value in its two low bits, 0 for a draw and 1 for a loss. A position
    and its mirror image are stored once; a position not stored is a first-player
    win. Only the file's format is used here, none of the package's code; 502
    random 12-stone positions checked against the exact solver all agreed.
    """

    def __init__(self, plies: int, codes: dict[int, int]) -> None:
        self.plies = plies
        self._codes = codes

    @classmethod
    def read(cls, path: Path) -> ValueTable:
        """Read the database of 12-stone positions, 4-byte records (``book_12ply.dat``)."""
        data = path.read_bytes()
        if not data or len(data) % 4:
            raise ValueError(f"{path} is not a database of 4-byte records ({len(data)} bytes)")
        codes = {}
        for offset in range(0, len(data), 4):
            record = int.from_bytes(data[offset : offset + 4], "big")
            codes[record & ~3] = record & 3
        return cls(12, codes)

    def value(self, position: ConnectFour) -> int:
        """1, 0 or -1: whether the first player, to move, wins, draws or loses ``position``."""
        if position.ply != self.plies:
            raise ValueError(f"the table holds positions with {self.plies} stones, not {position.ply}")
        first, mask = position.stones(0), position.mask
        for code in (huffman_code(first, mask), huffman_code(mirror_key(first), mirror_key(mask))):
            stored = self._codes.get(code)
            if stored is not None:
                return -stored
        return 1


def huffman_code(first: int, mask: int) -> int:
    """The database's code for a position: ``first`` the first player's stones, ``mask`` every stone.

    Column by column from the left, bottom up: ``10`` for a first-player stone,
    ``11`` for a second-player stone, ``0`` to end the column (a full one too),
    and a final ``0``. A 12-stone position takes 32 bits, the two low ones 0.
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
    return code << 1


class _TableMinimax:
    """Win, draw or loss by plain minimax down to a :class:`ValueTable`'s positions, remembered."""

    def __init__(self, table: ValueTable) -> None:
        self._table = table
        self._known: dict[int, int] = {}
        self._visited = 0

    def value(self, position: ConnectFour) -> int:
        """1, 0 or -1 for the side to move, as :meth:`WeakSolver.value`."""
        self._visited += 1
        outcome = position.outcome()
        if outcome is not None:
            return 0 if outcome.winner is None else -1  # only the side that just moved can have won
        if position.ply == self._table.plies:
            return self._table.value(position)
        if position.can_win_next():
            return 1
        key = canonical(position)
        known = self._known.get(key)
        if known is not None:
            return known
        best = -1
        for move in _safe_moves(position):
            best = max(best, -self.value(position.play(move)))
            if best == 1:
                break
        self._known[key] = best
        return best

    def keeping_move(self, position: ConnectFour, value: int) -> int | None:
        """A move after which the opponent's value is at most ``-value``."""
        moves = position.legal_moves()
        if not moves:
            return None
        winning = [move for move in _centre_first(moves) if position.is_winning_move(move)]
        if winning:
            return winning[0]
        for move in _safe_moves(position):
            if -self.value(position.play(move)) >= value:
                return move
        if value < 0:
            return _centre_first(moves)[0]  # lost anyway
        raise AssertionError(f"no move keeps the value {value} of {position.key():#x}")

    def nodes(self) -> int:
        return self._visited

    def table_size(self) -> int:
        return len(self._known)


def _centre_first(moves: list[int]) -> list[int]:
    return sorted(moves, key=CENTRE_FIRST.index)


def _safe_moves(position: ConnectFour) -> list[int]:
    """The moves that do not let the opponent win at once, centre first."""
    safe = position.non_losing_moves()
    return [column for column in CENTRE_FIRST if safe & COLUMN_MASKS[column]]


def live_move(position: ConnectFour, max_nodes: int) -> int | None:
    """The move the live perfect level plays in ``position`` without its book, or ``None`` if its
    searches do not fit ``max_nodes`` (it then falls back to its depth search).

    As :func:`bots.levels.choose_move` does, through the same calls: the exact
    score, or failing that a move that keeps the value, each tried on the
    position and on its mirror image, each with a fresh solver and the whole
    budget. Trying both images makes the answer the same for a position and its
    mirror image, which the book stores as one.
    """
    try:
        return perfect.solve("connect4", position, max_nodes).move
    except perfect.SolverBudgetExceeded:
        pass
    try:
        return perfect.solve_weakly("connect4", position, max_nodes).move
    except perfect.SolverBudgetExceeded:
        return None


def settles_live(position: ConnectFour, max_nodes: int) -> bool:
    """Whether the live perfect level settles ``position`` within ``max_nodes`` without its book."""
    return live_move(position, max_nodes) is not None


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


@dataclass(frozen=True, slots=True)
class EdgeCheck:
    """How the live level fares where a book ends (:func:`check_edges`)."""

    root: str
    ends: int
    """Positions where the book ends."""
    sampled: int
    settled: int
    """Of the sampled, those the live level settles within the book's solver budget."""
    deeper: int
    """Positions two plies on from the settled ones (the live move, then a random reply) not in the book."""
    deeper_settled: int


def check_edges(book: Book, root: str, samples: int, rng: random.Random, max_nodes: int) -> EdgeCheck:
    """Sample where ``book`` ends from ``root`` and try the live level with ``max_nodes`` there, and two
    plies on. Where the extension pass finished a root, every position where the book ends settles;
    two plies on, nothing was checked: this measures it."""
    ends = book_ends(book, root)
    settled = deeper = deeper_settled = 0
    sample = rng.sample(ends, min(samples, len(ends)))
    for position in sample:
        move = live_move(position, max_nodes)
        if move is None:
            continue
        settled += 1
        after = position.play(move)
        if after.outcome() is not None:
            continue
        child = after.play(rng.choice(after.legal_moves()))
        if child.outcome() is not None or book.lookup(child) is not None:
            continue
        deeper += 1
        deeper_settled += settles_live(child, max_nodes)
    return EdgeCheck(root, len(ends), len(sample), settled, deeper, deeper_settled)


def build(
    roots: Iterable[str],
    plies: int,
    *,
    table_capacity: int = 1 << 27,
    values: ValueTable | None = None,
    solver_nodes: int | None = None,
    until: int = CELLS,
    seconds: float | None = None,
    progress: Callable[[str], None] | None = None,
    earlier: Book | None = None,
    settled: set[int] | None = None,
    checkpoint: Callable[[Book, list[int]], None] | None = None,
    checkpoint_seconds: float = 300.0,
) -> Book:
    """A book for the side to move at each root, to ``plies`` stones.

    Each root is column digits ("" for the empty board, "3" for the second
    player's turn after the first opened in column 3). At the side's turns the
    book keeps the first move that keeps the value (in the solver's order, or
    centre first with ``values``); at the opponent's turns it follows every reply.
    Values come from the exact solver, or, given ``values`` (a database of every
    position with some number of stones, at least ``plies``), from a plain
    win/draw/loss minimax down to it.

    With ``solver_nodes``, a second pass goes on past ``plies`` (up to ``until``
    stones), root by root: a position the live level settles within that budget
    (:func:`settles_live`) is left to it, any other gets an entry and its replies
    are checked in turn. ``seconds`` bounds that pass: the roots it finished are
    the book's ``extended``. ``progress`` hears how the work goes.

    The pass takes hours, so it can go on from where an earlier one stopped:
    ``settled`` holds the canonical keys of positions already found to settle
    live (new ones are added to it), and ``earlier``'s entries (from the same
    values) are taken as they are instead of being worked out again, their
    replies still followed. ``checkpoint`` hears, every
    ``checkpoint_seconds`` and at the end, the book so far and the keys settled
    since its last call, so that an interrupted run loses little.
    """
    if values is not None and plies > values.plies:
        raise ValueError(
            f"a book to {plies} stones needs values at {plies} stones or more, not {values.plies}"
        )
    solver = WeakSolver(table_capacity)
    minimax = None if values is None else _TableMinimax(values)
    entries: dict[int, tuple[int, int]] = {}
    started = time.perf_counter()
    root_list = tuple(roots)

    def oracle(position: ConnectFour) -> WeakSolver | _TableMinimax:
        if minimax is not None and values is not None and position.ply < values.plies:
            return minimax
        return solver

    def nodes() -> int:
        return solver.nodes() + (0 if minimax is None else minimax.nodes())

    def say(text: str) -> None:
        if progress is not None:
            elapsed = time.perf_counter() - started
            progress(f"{elapsed:8.0f}s {text}: {len(entries):,} entries, {nodes():,} nodes")

    def add(position: ConnectFour, moves: str | None, *, lost_too: bool) -> tuple[int, ConnectFour | None]:
        """Enter ``position`` (reached by ``moves``, if known) in the book: its move, and the position
        after it if the game goes on. A lost position gets an entry only if ``lost_too`` (else -1 and
        ``None``)."""
        key = position.key()
        mirrored = mirror_key(key)
        found = None if earlier is None else earlier.entries.get(min(key, mirrored))
        if found is not None:  # the same values, so the same entry: taken as it is
            move, value = WIDTH - 1 - found[0] if mirrored < key else found[0], found[1]
        else:
            source = oracle(position)
            value = source.value(position)
            if value < 0 and not lost_too:
                return -1, None
            move = source.keeping_move(position, value)  # lost: the first that does not lose at once
            assert move is not None
        entries[min(key, mirrored)] = (WIDTH - 1 - move if mirrored < key else move, value)
        if moves is not None and len(moves) <= 6:
            say(f"{moves or '(empty)':>8} plays {move + 1} value {value:+d}")
        after = position.play(move)
        return move, None if after.outcome() is not None else after

    def own_turn(position: ConnectFour, moves: str, frontier: dict[int, ConnectFour]) -> None:
        """Enter the side's positions from ``position`` on, to ``plies`` stones; collect those past it."""
        if position.outcome() is not None:
            return
        if position.ply >= plies:
            frontier.setdefault(canonical(position), position)
            return
        if canonical(position) in entries:
            return  # reached before by another order of the same moves
        move, after = add(position, moves, lost_too=True)
        if after is not None:
            for reply in after.legal_moves():
                own_turn(after.play(reply), f"{moves}{move + 1}{reply + 1}", frontier)

    live = set() if settled is None else settled
    newly_settled: list[int] = []
    settled_here = 0
    deadline = None if seconds is None else started + seconds
    extended: list[str] = []
    next_checkpoint = started + checkpoint_seconds

    def book() -> Book:
        # A resumed build counts the work of the runs before it too.
        work, elapsed = nodes(), time.perf_counter() - started
        if earlier is not None:
            work, elapsed = work + earlier.nodes, elapsed + earlier.seconds
        return Book(entries, plies, root_list, work, elapsed, solver_nodes, tuple(extended))

    def save_progress() -> None:
        nonlocal next_checkpoint
        if checkpoint is not None:
            checkpoint(book(), newly_settled.copy())
            newly_settled.clear()
        next_checkpoint = time.perf_counter() + checkpoint_seconds

    def extend(position: ConnectFour) -> bool:
        """Check ``position`` past ``plies`` and what follows it; ``False`` once time is up."""
        nonlocal settled_here
        key = canonical(position)
        if position.outcome() is not None or position.ply >= until or key in live or key in entries:
            return True
        now = time.perf_counter()
        if deadline is not None and now > deadline:
            return False
        if now > next_checkpoint:
            save_progress()
        if (earlier is None or key not in earlier.entries) and settles_live(position, solver_nodes or 0):
            live.add(key)
            newly_settled.append(key)
            settled_here += 1
            if settled_here % 500 == 0:
                say(f"{len(live):,} positions past the book settle live")
            return True
        _, after = add(position, None, lost_too=False)
        return after is None or all(extend(after.play(reply)) for reply in after.legal_moves())

    # Every root to ``plies`` first, so that each checkpoint holds a whole book; then past it, root by root.
    frontiers = {root: dict[int, ConnectFour]() for root in root_list}
    for root, frontier in frontiers.items():
        own_turn(ConnectFour.from_moves(root), root, frontier)
    if solver_nodes is not None:
        try:
            for root, frontier in frontiers.items():
                say(f"root {root or '(empty)'!r}: {len(frontier):,} positions where the book ends")
                if all(extend(frontier[key]) for key in sorted(frontier)):
                    extended.append(root)
                say(f"root {root or '(empty)'!r} extended" if root in extended else "out of time")
        except KeyboardInterrupt:
            # Stopped by hand: what is known so far is consistent (an entry whose replies were not all
            # checked yet is checked again on resuming), so keep it.
            save_progress()
            raise
    save_progress()
    return book()
