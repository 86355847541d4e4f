"""``plyarena book connect4 --plies N --out FILE``: build the Connect Four opening book offline.

The book (see :mod:`bots.connect4_book`) holds, for the positions a player meets
before ``--plies`` stones while it follows the book, a move that keeps the
position's value. By default it is built for the first player from the empty
board and for the second player after each first move; ``--root`` picks other
positions. Built by the exact solver alone, it weakly solves the opening: days
of one core for the empty board in pure Python, and gigabytes for the
transposition table (``--table`` entries, 8 bytes each compiled, about 80 in
pure Python). With ``--database``, the values of
every 12-stone position come from that file and a plain minimax above them
builds a book to 12 stones in seconds.

With ``--solver-nodes``, the book goes on past ``--plies`` wherever the live
level, with that node budget, could not settle a position where the book ends
(for the shipped book: level 8's budget), root by root until ``--seconds`` run
out. That pass saves the book every few minutes and records the positions it
found to settle live beside it (``connect4_book.settled.txt.gz``), so
``--resume`` goes on where an earlier run stopped.

``--check N`` builds nothing: it samples where the book at ``--out`` ends and
tries the live level there and two plies on, which is as far as the extension
pass's guarantee reaches.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from rich.console import Console
from rich.progress import Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bots.connect4_book import (
    BOOK_PATH,
    Book,
    ValueTable,
    build,
    check_edges,
    load,
    read_settled,
    record_settled,
    settled_path,
)
from games import IllegalMoveError
from games.connect4 import CELLS, ConnectFour
from plyarena.options import CommandError, check_writable, non_negative_float, non_negative_int, positive_int

HELP = "build the Connect Four opening book that the perfect level plays from"
DEFAULT_ROOTS = ("", "1", "2", "3", "4")
"""The empty board, and the second player's turn after each first move (the mirror images, 5 to 7,
share their entries). After a centre opening the second player loses, and the book plays on for
the first player's mistakes."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("game", choices=("connect4",))
    parser.add_argument(
        "--plies",
        type=int,
        default=None,
        help="leave positions with this many stones to the solver (to build)",
    )
    parser.add_argument(
        "--check",
        type=positive_int,
        default=None,
        metavar="N",
        help="instead of building: sample N positions per root where the book at --out ends, and try the "
        "live level there and two plies on, with the book's solver budget (or --solver-nodes)",
    )
    parser.add_argument("--seed", type=int, default=1, help="with --check: seeds the samples (default 1)")
    parser.add_argument(
        "--out",
        type=Path,
        default=BOOK_PATH,
        help=f"the book to build, or to check or resume (default: the shipped book, {BOOK_PATH}, which a "
        "build overwrites, as it is meant to when level 8's book is rebuilt)",
    )
    parser.add_argument(
        "--root", action="append", default=None, help="a position (column digits) to build from; repeatable"
    )
    parser.add_argument(
        "--table",
        type=positive_int,
        default=1 << 27,
        help="transposition table entries, about 80 bytes each (2**27)",
    )
    parser.add_argument(
        "--solver-nodes",
        type=positive_int,
        default=None,
        help="go on past --plies wherever the live level cannot settle a position within this node budget",
    )
    parser.add_argument(
        "--until", type=non_negative_int, default=CELLS, help="with --solver-nodes: stop at this many stones"
    )
    parser.add_argument(
        "--seconds",
        type=non_negative_float,
        default=None,
        help="with --solver-nodes: stop going on after this",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="with --solver-nodes: go on from the book at --out and the positions recorded as settled",
    )
    parser.add_argument(
        "--database",
        type=Path,
        default=None,
        help="values of every 12-stone position (book_12ply.dat of the bitbully-databases package) "
        "instead of solving the opening: seconds instead of days",
    )


def run(args: argparse.Namespace) -> int:
    roots = tuple(args.root) if args.root is not None else DEFAULT_ROOTS
    for root in roots:
        try:
            ConnectFour.from_moves(root)
        except IllegalMoveError as error:
            raise CommandError(f"bad root {root!r}: {error.reason}") from None
    if args.check is not None:
        return _check(args)
    if args.plies is None:
        raise CommandError("--plies is needed to build a book (or --check N to check one)")
    if not 0 <= args.plies <= CELLS:
        raise CommandError(f"--plies must be from 0 to {CELLS}, got {args.plies}")
    if args.resume and args.solver_nodes is None:
        raise CommandError("--resume goes on with an extension pass: give --solver-nodes")
    settled_file = settled_path(args.out)
    check_writable(args.out)  # before a build of hours, not after
    if args.solver_nodes is not None:
        check_writable(settled_file)
    values = None
    if args.database is not None:
        try:
            values = ValueTable.read(args.database)
        except (OSError, ValueError) as error:
            raise CommandError(f"cannot read the database: {error}") from None
        if args.plies > values.plies:
            raise CommandError(f"--plies {args.plies} goes past the database's {values.plies} stones")
    earlier, settled = None, None
    if args.solver_nodes is not None:
        if args.resume:
            try:
                earlier = load(args.out)
                settled = read_settled(settled_file)
            except (OSError, ValueError) as error:
                raise CommandError(f"cannot resume: {error}") from None
            if (earlier.plies, earlier.solver_nodes) != (args.plies, args.solver_nodes):
                raise CommandError(
                    f"cannot resume: {args.out} was built to ply {earlier.plies} with solver budget "
                    f"{earlier.solver_nodes}, not {args.plies} and {args.solver_nodes}"
                )
            print(f"resuming: {len(earlier.entries):,} entries, {len(settled):,} positions settled live")
        else:
            settled_file.unlink(missing_ok=True)

    def checkpoint(book: Book, newly_settled: list[int]) -> None:
        record_settled(settled_file, newly_settled)
        book.save(args.out)

    book = build(
        roots,
        args.plies,
        table_capacity=args.table,
        values=values,
        solver_nodes=args.solver_nodes,
        until=args.until,
        seconds=args.seconds,
        progress=lambda line: print(line, flush=True),
        earlier=earlier,
        settled=settled,
        checkpoint=None if args.solver_nodes is None else checkpoint,
    )
    if args.solver_nodes is None:
        book.save(args.out)
    extended = ""
    if book.solver_nodes is not None:
        extended = (
            f", past it where {book.solver_nodes:,} nodes do not settle a position for {len(book.extended)}"
        )
    print(
        f"{len(book.entries):,} entries to ply {book.plies} from {len(roots)} root(s){extended}, "
        f"{book.nodes:,} nodes in {book.seconds:.0f} s: {args.out}",
        flush=True,
    )
    return 0


def _check(args: argparse.Namespace) -> int:
    """Print how the live level fares where the book ends, root by root."""
    try:
        book = load(args.out)
    except (OSError, ValueError) as error:
        raise CommandError(f"cannot read the book: {error}") from None
    max_nodes = args.solver_nodes or book.solver_nodes
    if max_nodes is None:
        raise CommandError("the book was built without a solver budget: give --solver-nodes")
    roots = tuple(args.root) if args.root is not None else book.roots
    table = Table(title=f"Where the book ends: the live level with {max_nodes:,} solver nodes")
    table.add_column("root", no_wrap=True)
    for column in ("extended", "positions", "sampled", "settled", "two plies on", "settled there"):
        table.add_column(column, justify="right")
    rng = random.Random(args.seed)
    with Progress(TextColumn("{task.description}"), TimeElapsedColumn(), transient=True) as progress:
        for root in roots:
            task = progress.add_task(f"root {root or '(empty)'!r}")
            checked = check_edges(book, root, args.check, rng, max_nodes)
            progress.remove_task(task)
            table.add_row(
                root or "(empty)", "yes" if root in book.extended else "no", f"{checked.ends:,}",
                str(checked.sampled), str(checked.settled), str(checked.deeper), str(checked.deeper_settled),
            )  # fmt: skip
    Console().print(table)
    return 0
