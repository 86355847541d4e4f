"""Pascal Pons' Connect Four test sets, for the tests that check our solver and evaluation against them.

They are not ours to commit, so they are found where ``PLYARENA_PONS_SETS``
points, as the engine benchmark finds them. A test that reads them skips when
they are not there, or fails when ``PLYARENA_REQUIRE_PONS_SETS=1`` (as
``.ci/run`` sets it). Parametrized tests take an index into a set rather than
its lines, so that a checkout without the sets collects them and skips them.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from bench.pons import pons_lines, pons_sets_from_environment, pons_sets_problem
from support.services import missing

PONS_SETS_REQUIRED = "PLYARENA_REQUIRE_PONS_SETS"
SAMPLE_SEED = 20240601


def pons_sets_directory() -> Path:
    """The directory of the sets; skips the test (or fails it, when required) if it is not there."""
    directory = pons_sets_from_environment()
    problem = pons_sets_problem(directory)
    if problem is not None:
        missing("The directory of Pascal Pons' Connect Four test sets", str(problem), PONS_SETS_REQUIRED)
    assert directory is not None
    return directory


@cache
def _read(directory: Path, name: str) -> tuple[tuple[str, int], ...]:
    return tuple(pons_lines(name, None, directory))


def pons_set(name: str) -> list[tuple[str, int]]:
    """The (moves, exact score) lines of one of Pons' sets, such as ``Test_L3_R1``."""
    return list(_read(pons_sets_directory(), name))


def pons_sample(name: str, size: int) -> list[tuple[str, int]]:
    """A fixed random sample of ``size`` lines of a set, the same in every run."""
    return random.Random(SAMPLE_SEED).sample(pons_set(name), size)


def fake_pons_solver(directory: Path, scores: dict[str, int], microseconds: Sequence[int]) -> Path:
    """An executable answering as Pons' timed c4solver does (``moves score nodes microseconds``), for the
    benchmark's tests: ``scores`` are its answers, its nodes ten per stone, and its time per position is
    ``microseconds[k]`` on its k-th run (cycling), so that tests can tell which run counted."""
    answers = directory / "fake-c4solver-scores.json"
    answers.write_text(json.dumps(scores))
    runs = directory / "fake-c4solver-runs"
    script = directory / "fake-c4solver"
    script.write_text(
        f"""#!{sys.executable}
import json, pathlib, sys
scores = json.loads(pathlib.Path({str(answers)!r}).read_text())
runs = pathlib.Path({str(runs)!r})
run = int(runs.read_text()) if runs.exists() else 0
runs.write_text(str(run + 1))
for line in sys.stdin:
    moves = line.strip()
    print(moves, scores[moves], 10 * len(moves), {list(microseconds)!r}[run % {len(microseconds)}])
"""
    )
    script.chmod(0o755)
    return script
