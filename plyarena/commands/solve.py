"""``plyarena solve connect4 [FILE] [--check]``: exact scores of positions in Pascal Pons' format.

Each input line is ``<moves> [<score>]``: the columns played so far as digits
1-7, and optionally the expected score, as in Pons' test sets. Each output line
is ``<moves> <score> <best column>``, the column as a digit 1-7 (``-`` when the
game is already over). With ``--check`` every line must carry its expected
score; the run ends with a summary and fails if any score was wrong. Every
line is read and checked before the first is solved, so a malformed line
costs nothing. Positions with few stones down (Pons' sets start at 4) can take
the solver a long time when the game has far to go: seconds to minutes
compiled, some thirty times as long in pure Python.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bots.connect4_solver import solve
from games import IllegalMoveError
from games.connect4 import ConnectFour
from plyarena.options import CommandError

HELP = "solve Connect Four positions exactly: lines of '<moves> [<score>]' from FILE or stdin"
SOLVABLE_GAMES = ("connect4",)


class MalformedLineError(ValueError):
    """An input line that is not ``<moves> [<score>]``."""

    def __init__(self, number: int, line: str, reason: str) -> None:
        super().__init__(f"line {number}: {reason}: {line!r}")


@dataclass(frozen=True, slots=True)
class Task:
    """One input line: where it was, the moves and the score it claims, if any."""

    number: int
    moves: str
    position: ConnectFour
    expected: int | None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("game", choices=SOLVABLE_GAMES)
    parser.add_argument("file", nargs="?", type=Path, help="positions, one per line (default: stdin)")
    parser.add_argument(
        "--check", action="store_true", help="compare with the score on each line; exit 1 if any is wrong"
    )


def run(args: argparse.Namespace) -> int:
    source = "stdin" if args.file is None or str(args.file) == "-" else str(args.file)
    try:
        if source == "stdin":
            return _solve_all(sys.stdin, args.check)
        with args.file.open(encoding="utf-8") as lines:
            return _solve_all(lines, args.check)
    except OSError as error:
        raise CommandError(f"cannot read {source}: {error.strerror or error}") from None
    except UnicodeDecodeError:  # every line is read before the first is solved: no work is lost
        raise CommandError(f"cannot read {source}: it is not UTF-8 text") from None
    except MalformedLineError as error:
        raise CommandError(str(error)) from None


def _solve_all(lines: Iterable[str], check: bool) -> int:
    tasks = list(_tasks(lines, check))  # a malformed line anywhere stops the run before any solving
    solved = wrong = nodes = 0
    seconds = 0.0
    for task in tasks:
        started = time.perf_counter()
        solution = solve(task.position)
        seconds += time.perf_counter() - started
        solved += 1
        nodes += solution.nodes
        best = "-" if solution.move is None else task.position.format_move(solution.move)
        print(f"{task.moves} {solution.score} {best}", flush=True)
        if check and solution.score != task.expected:
            wrong += 1
            message = f"line {task.number}: {task.moves} scores {solution.score}, not {task.expected}"
            print(message, file=sys.stderr)
    if check:
        mean_ms = seconds / solved * 1000 if solved else 0.0
        rate = f", {nodes / seconds:,.0f} nodes/s" if seconds else ""
        print(f"{solved - wrong} correct, {wrong} wrong, mean {mean_ms:.3f} ms per position{rate}")
    return 1 if wrong else 0


def _tasks(lines: Iterable[str], check: bool) -> Iterable[Task]:
    """The input's tasks, one per non-blank line; raises :class:`MalformedLineError` on a bad one."""
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) > 2:
            raise MalformedLineError(number, line, "expected '<moves> [<score>]'")
        moves = fields[0]
        try:
            position = ConnectFour.from_moves(moves)
        except IllegalMoveError as error:
            raise MalformedLineError(number, line, f"bad moves: {error.reason}") from None
        expected = None
        if len(fields) == 2:
            try:
                expected = int(fields[1])
            except ValueError:
                raise MalformedLineError(number, line, f"the score {fields[1]!r} is not an integer") from None
        elif check:
            raise MalformedLineError(number, line, "--check needs a score after the moves")
        yield Task(number, moves, position, expected)
