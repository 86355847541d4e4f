"""``plyarena book connect4 --plies N``: build the Connect Four opening book offline, or check one.

The book (see :mod:`bots.connect4_book`) holds, for the positions a player meets
before ``--plies`` stones while it follows the book against any reply, a move of
the best exact score and that score (:mod:`bots.connect4_book_build`). By default
it is built for the first player from the empty board and for the side to move
after every opening of one, two and three moves; ``--root`` picks other
positions. Solved by the compiled exact solver, a book to 12 stones takes hours:
the build saves the book every few minutes, ``--seconds`` stops it with a partial
book, and ``--resume`` goes on from the book at ``--out``. With ``--database``
(BitBully's scores of every 12-stone position, :mod:`bots.connect4_database`),
the same book takes minutes.

``--check N`` builds nothing: it samples N positions per root where the book at
``--out`` ends and times level 8's move there, which is what the live solver must
answer within a move's time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bots.connect4_book import BOOK_PATH, Book, book_ends, load
from bots.connect4_book_build import DEFAULT_TABLE, build
from bots.connect4_database import PLIES as DATABASE_PLIES
from bots.connect4_database import ScoreDatabase
from bots.levels import choose_move, level
from games import IllegalMoveError
from games.connect4 import CELLS, ConnectFour
from plyarena.options import CommandError, check_writable, non_negative_float, positive_int

HELP = "build the Connect Four opening book that the perfect level plays from"
COLUMNS = "4352617"
"""Centre first."""
DEFAULT_ROOTS = (
    "",
    *("4321"),
    *(first + second for first in "4321" for second in COLUMNS),
    *(first + second + third for first in "4321" for second in COLUMNS for third in COLUMNS),
)
"""The empty board, then each side's turn after every opening of one, two and three moves (the mirror
images of first moves 5 to 7 share their entries): the tournaments open with two random plies, after which
level 8 plays either side, and plays perfectly from every one of them."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("game", choices=("connect4",))
    parser.add_argument(
        "--plies", type=int, default=None, help="leave positions with this many stones to the solver"
    )
    parser.add_argument(
        "--check",
        type=positive_int,
        default=None,
        metavar="N",
        help="instead of building: time level 8's move at N positions per root where the book at --out ends",
    )
    parser.add_argument("--seed", type=int, default=1, help="with --check: seeds the samples (default 1)")
    parser.add_argument(
        "--out",
        type=Path,
        default=BOOK_PATH,
        help=f"the book to build, resume or check (default: the shipped book, {BOOK_PATH}, which a build "
        "overwrites, as it is meant to when level 8's book is rebuilt)",
    )
    parser.add_argument(
        "--root", action="append", default=None, help="a position (column digits) to build from; repeatable"
    )
    parser.add_argument(
        "--table", type=positive_int, default=DEFAULT_TABLE, help="transposition table entries, 8 bytes each"
    )
    parser.add_argument(
        "--seconds", type=non_negative_float, default=None, help="stop after this long with a partial book"
    )
    parser.add_argument("--resume", action="store_true", help="go on from the book at --out")
    parser.add_argument(
        "--database",
        type=Path,
        default=None,
        help="the exact score of every 12-stone position (book_12ply_distances.dat of the bitbully-databases "
        "package) instead of solving the opening: minutes instead of hours",
    )


def run(args: argparse.Namespace) -> int:
    roots = tuple(args.root) if args.root is not None else DEFAULT_ROOTS
    for root in roots:
        try:
            ConnectFour.from_moves(root)
        except IllegalMoveError as error:
            raise CommandError(f"bad root {root!r}: {error.reason}") from None
    if args.check is not None:
        return _check(args, roots if args.root is not None else None)
    if args.plies is None:
        raise CommandError("--plies is needed to build a book (or --check N to check one)")
    if not 0 <= args.plies <= CELLS:
        raise CommandError(f"--plies must be from 0 to {CELLS}, got {args.plies}")
    check_writable(args.out)  # before a build of hours, not after
    database = None
    if args.database is not None:
        try:
            database = ScoreDatabase.read(args.database)
        except (OSError, ValueError) as error:
            raise CommandError(f"cannot read the database: {error}") from None
        if args.plies > DATABASE_PLIES:
            raise CommandError(f"--plies {args.plies} goes past the database's {DATABASE_PLIES} stones")
    earlier = None
    if args.resume:
        try:
            earlier = load(args.out)
        except (OSError, ValueError) as error:
            raise CommandError(f"cannot resume: {error}") from None
        print(f"resuming: {len(earlier.entries):,} entries", flush=True)

    def checkpoint(book: Book) -> None:
        book.save(args.out)

    book = build(
        roots,
        args.plies,
        table_capacity=args.table,
        earlier=earlier,
        database=database,
        progress=lambda line: print(line, flush=True),
        checkpoint=checkpoint,
        seconds=args.seconds,
    )
    state = "" if book.complete else " (stopped before the end: --resume goes on)"
    print(
        f"{len(book.entries):,} entries to ply {book.plies} from {len(roots)} root(s){state}, "
        f"{book.nodes:,} nodes in {book.seconds:.0f} s: {args.out}",
        flush=True,
    )
    return 0


def _check(args: argparse.Namespace, roots: tuple[str, ...] | None) -> int:
    """Print, root by root, how long level 8 takes where the book ends, and how it found its moves."""
    try:
        book = load(args.out)
    except (OSError, ValueError) as error:
        raise CommandError(f"cannot read the book: {error}") from None
    perfect = level("connect4", 8)
    table = Table(title=f"Level 8 where the book ends (ply {book.plies}): its move's time")
    table.add_column("root", no_wrap=True)
    for column in ("positions", "sampled", "exact", "median ms", "max ms"):
        table.add_column(column, justify="right")
    rng = random.Random(args.seed)
    for root in roots or book.roots:
        ends = book_ends(book, root)
        sample = rng.sample(ends, min(args.check, len(ends)))
        times, exact = [], 0
        for position in sample:
            started = time.perf_counter()
            _, result = choose_move(position, perfect, rng)
            times.append((time.perf_counter() - started) * 1000)
            exact += result.source == "solved"
        median = f"{statistics.median(times):.0f}" if times else "-"
        longest = f"{max(times):.0f}" if times else "-"
        table.add_row(root or "(empty)", f"{len(ends):,}", str(len(sample)), str(exact), median, longest)
    Console().print(table)
    return 0
