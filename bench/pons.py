"""Pascal Pons' Connect Four test sets and C++ solver: references beside the project, never part of it.

The sets (``Test_L3_R1`` and the others, each line ``moves score``) are found
where ``PLYARENA_PONS_SETS`` points, by the engine benchmark and the tests alike.

His solver is what the engine benchmark's ratio is measured against. Ours
starts every position with an empty transposition table, so his must too. His
current ``main.cpp`` keeps its table from one line to the next and prints no
time; his ``main.cpp`` as of commit ``d7acbd6`` (the last before it was
reduced) calls ``Solver::reset`` before each line, emptying the table (fixed in
``754d3b8``), and prints ``moves score nodes microseconds``, its own wall-clock
time of ``Solver::solve`` alone. That unchanged program is what
``--pons-solver`` runs: one process per set, the lines on its standard input,
in an empty scratch directory so that it finds no opening book. Its times are
wall-clock, so each set is run more than once and every position keeps its
fastest run, which a busy machine can only slow down.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PONS_SETS_VARIABLE = "PLYARENA_PONS_SETS"
"""The environment variable naming the directory of Pons' test sets, for the benchmark and the tests."""
PONS_SETS = ("Test_L3_R1", "Test_L2_R1", "Test_L1_R1")
REFERENCE_COMMIT = "d7acbd6"
"""The commit of github.com/PascalPons/connect4 whose ``c4solver`` resets its table and times each line."""
PROBE_LINE = "445566"
"""The probe's position: Red, to move, has three in the bottom row and wins with its fourth stone."""
PROBE_SCORE = 18
"""22 minus the winner's four stones."""


class ReferenceSolverError(RuntimeError):
    """The reference solver cannot be run, or does not answer in the timed format this benchmark reads."""


@dataclass(frozen=True, slots=True)
class ReferenceRow:
    """Pons' solver on one set: agreement with the set's scores, time and nodes per position."""

    positions: int
    correct: int
    mean_ms: float
    median_ms: float
    max_ms: float
    mean_nodes: float


@dataclass(frozen=True, slots=True)
class _Answer:
    score: int
    nodes: int
    microseconds: int


def pons_sets_from_environment() -> Path | None:
    """The directory ``PLYARENA_PONS_SETS`` names, or ``None`` when it is unset."""
    value = os.environ.get(PONS_SETS_VARIABLE, "")
    return Path(value) if value else None


def pons_sets_problem(directory: Path | None) -> str | None:
    """Why ``directory`` does not hold Pons' three sets, in one line; ``None`` when it does."""
    if directory is None:
        return f"{PONS_SETS_VARIABLE} is not set (a directory holding {', '.join(PONS_SETS)})"
    absent = [name for name in PONS_SETS if not (directory / name).is_file()]
    return f"no {', '.join(absent)} in {directory}" if absent else None


def pons_lines(name: str, limit: int | None, directory: Path) -> list[tuple[str, int]]:
    """(moves, exact score) of a Pons test set, the first ``limit`` lines."""
    lines = (directory / name).read_text().split("\n")
    parsed = [(moves, int(score)) for moves, score in (line.split() for line in lines if line.strip())]
    return parsed[:limit] if limit is not None else parsed


def check_reference_solver(binary: Path) -> None:
    """Ask ``binary`` one easy position now, so that a wrong path fails before minutes of measuring."""
    answer = _solve_all(binary, [PROBE_LINE])[0]
    if answer.score != PROBE_SCORE:
        raise ReferenceSolverError(
            f"{binary} scores {PROBE_LINE} as {answer.score}, not {PROBE_SCORE}: is it Pons' c4solver?"
        )


def run_reference(
    binary: Path, lines: list[tuple[str, int]], runs: int, tick: Callable[[], None]
) -> ReferenceRow:
    """Solve ``lines`` with Pons' solver ``runs`` times; each position counts its fastest run."""
    fastest: list[int] = []
    answers: list[_Answer] = []
    for _ in range(runs):
        answers = _solve_all(binary, [moves for moves, _ in lines])
        times = [answer.microseconds for answer in answers]
        fastest = [min(pair) for pair in zip(fastest, times, strict=True)] if fastest else times
        tick()
    correct = sum(answer.score == expected for answer, (_, expected) in zip(answers, lines, strict=True))
    count = len(lines)
    return ReferenceRow(
        positions=count,
        correct=correct,
        mean_ms=sum(fastest) / count / 1000,
        median_ms=statistics.median(fastest) / 1000,
        max_ms=max(fastest) / 1000,
        mean_nodes=sum(answer.nodes for answer in answers) / count,
    )


def describe_reference(runs: int) -> str:
    """How the reference was run, for the caption beside its figures."""
    fastest = f"the fastest of {runs} runs of each position" if runs > 1 else "one run of each position"
    return (
        f"Pascal Pons' C++ solver (`--pons-solver`: his `c4solver` built with its Makefile from "
        f"github.com/PascalPons/connect4 at commit {REFERENCE_COMMIT}) on the same lines in the same run: "
        "one process per set reading them on its standard input, no opening book, its transposition "
        "table reset (`Solver::reset`) before each position as ours starts empty; its time is its own "
        f"wall-clock time of `Solver::solve` alone (microseconds, gettimeofday), {fastest}"
    )


def _solve_all(binary: Path, lines: list[str]) -> list[_Answer]:
    """One process of ``binary`` over ``lines``; its answers in the same order."""
    with tempfile.TemporaryDirectory(prefix="plyarena-pons-") as scratch:  # (no 7x6.book to find there)
        try:
            finished = subprocess.run(
                [str(binary)], input="".join(f"{line}\n" for line in lines), capture_output=True,
                text=True, cwd=scratch, check=False,
            )  # fmt: skip
        except OSError as error:
            raise ReferenceSolverError(
                f"cannot run the reference solver {binary}: {error.strerror}"
            ) from None
    if finished.returncode != 0:
        raise ReferenceSolverError(f"the reference solver {binary} exited with status {finished.returncode}")
    printed = finished.stdout.splitlines()
    if len(printed) != len(lines):
        raise ReferenceSolverError(f"{binary} answered {len(printed)} lines for {len(lines)} positions")
    return [_parse(binary, line, text) for line, text in zip(lines, printed, strict=True)]


def _parse(binary: Path, line: str, text: str) -> _Answer:
    fields = text.split()
    if len(fields) != 4 or fields[0] != line or not all(_is_integer(field) for field in fields[1:]):
        raise ReferenceSolverError(
            f"{binary} answered {text!r} for {line!r}, not 'moves score nodes microseconds': build Pons' "
            f"c4solver at commit {REFERENCE_COMMIT}, whose main resets its table and times each position "
            "(his current main does neither)"
        )
    return _Answer(int(fields[1]), int(fields[2]), int(fields[3]))


def _is_integer(text: str) -> bool:
    return text.lstrip("-").isdigit()
