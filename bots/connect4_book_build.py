"""Building the Connect Four opening book offline, with the exact solver.

For each root (the side to move there is the book's side), the book holds every
position the side meets while it plays the book's moves and the opponent plays
anything: at the side's turns one move of the best exact score (the quickest win,
a draw kept, the longest loss) with that score; at the opponent's turns every
reply is followed. Positions with ``plies`` stones or more are left to the live
solver.

The scores come from one compiled exact search (:mod:`bots.connect4_solver`)
whose transposition table is shared by every position, so that a position's
search answers much of its neighbours'; that takes hours of one core from the
empty board, so a build saves itself every few minutes and a later one given
``earlier`` takes what that one solved as it is. Given BitBully's database of
every 12-stone position (:mod:`bots.connect4_database`), a plain minimax down to
it scores the positions above in minutes instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from bots.connect4_book import Book, mirror_key
from bots.connect4_database import PLIES as DATABASE_PLIES
from bots.connect4_database import DatabaseMinimax, ScoreDatabase
from bots.connect4_solver import Search
from games.connect4 import WIDTH, ConnectFour

DEFAULT_TABLE = 1 << 26
"""Transposition table entries: 512 MiB compiled, which keeps the bounds of a whole root's searches."""


class _OutOfTime(Exception):
    """The build's ``seconds`` ran out: it stops where it is, with a partial book."""


def build(
    roots: Iterable[str],
    plies: int,
    *,
    table_capacity: int = DEFAULT_TABLE,
    earlier: Book | None = None,
    database: ScoreDatabase | None = None,
    progress: Callable[[str], None] | None = None,
    checkpoint: Callable[[Book], None] | None = None,
    checkpoint_seconds: float = 300.0,
    seconds: float | None = None,
) -> Book:
    """The book for the side to move at each root, to ``plies`` stones (see the module docstring).

    Each root is column digits ("" is the empty board, "3" the second player's turn
    after the first opened in column 3). ``earlier``'s entries are taken as they are,
    their replies still followed. With ``database``, positions with fewer stones than
    it holds are scored by minimax down to it. ``checkpoint`` hears the book so far every
    ``checkpoint_seconds`` and at the end; with ``seconds`` the build stops after
    that long with a partial book whose ``complete`` is false.
    """
    if database is not None and plies > DATABASE_PLIES:
        raise ValueError(f"the database scores positions up to {DATABASE_PLIES} stones, not {plies}")
    search = Search(None, table_capacity) if database is None else DatabaseMinimax(database)
    entries: dict[int, tuple[int, int]] = {}
    root_list = tuple(roots)
    started = time.perf_counter()
    deadline = None if seconds is None else started + seconds
    next_checkpoint = started + checkpoint_seconds
    solved_here = 0

    def book(complete: bool) -> Book:
        # A resumed build counts the work and the time of the runs before it too.
        nodes, elapsed = search.nodes(), time.perf_counter() - started
        if earlier is not None:
            nodes, elapsed = nodes + earlier.nodes, elapsed + earlier.seconds
        return Book(entries, plies, root_list, nodes, elapsed, complete)

    def say(text: str) -> None:
        if progress is not None:
            elapsed = time.perf_counter() - started
            progress(f"{elapsed:8.0f}s {text}: {len(entries):,} entries ({solved_here:,} scored in this run)")

    def enter(position: ConnectFour, moves: str) -> int:
        """The book's move from ``position``, solved unless ``earlier`` has it, and entered."""
        nonlocal solved_here
        key = position.key()
        mirrored = mirror_key(key)
        found = None if earlier is None else earlier.entries.get(min(key, mirrored))
        if found is not None:
            move, score = WIDTH - 1 - found[0] if mirrored < key else found[0], found[1]
        else:
            score = search.score(position)
            best = search.best_move(position, score)
            assert best is not None  # the game goes on here
            move, solved_here = best, solved_here + 1
        entries[min(key, mirrored)] = (WIDTH - 1 - move if mirrored < key else move, score)
        if len(moves) <= 5:
            say(f"{moves or '(empty)':>8} plays {move + 1} score {score:+d}")
        return move

    def own_turn(position: ConnectFour, moves: str) -> None:
        nonlocal next_checkpoint
        if position.outcome() is not None or position.ply >= plies:
            return
        key = position.key()
        if min(key, mirror_key(key)) in entries:
            return  # reached before by another order of the same moves
        now = time.perf_counter()
        if deadline is not None and now > deadline:
            raise _OutOfTime
        if checkpoint is not None and now > next_checkpoint:
            checkpoint(book(complete=False))
            next_checkpoint = time.perf_counter() + checkpoint_seconds
        move = enter(position, moves)
        after = position.play(move)
        if after.outcome() is None:
            for reply in after.legal_moves():
                own_turn(after.play(reply), f"{moves}{move + 1}{reply + 1}")

    complete = True
    try:
        for root in root_list:
            own_turn(ConnectFour.from_moves(root), root)
            say(f"root {root or '(empty)'!r} done")
    except _OutOfTime:
        complete = False
    except KeyboardInterrupt:
        if checkpoint is not None:
            checkpoint(book(complete=False))  # what is known so far is sound: keep it
        raise
    result = book(complete)
    if checkpoint is not None:
        checkpoint(result)
    return result
