"""How the engine benchmark runs Pons' C++ solver: the fastest run of each position counts, its answers are
checked, and a program that does not answer in his timed format is refused in words.

A stand-in plays his c4solver here (tests/support/pons.py), so these run on any checkout.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support.pons import fake_pons_solver

from bench.pons import (
    PROBE_LINE,
    PROBE_SCORE,
    ReferenceSolverError,
    check_reference_solver,
    describe_reference,
    run_reference,
)

LINES = [("445566", 18), ("4455661", -18), ("44", 1)]
"""Positions and the scores the stand-in is expected to give; it need not solve them, only answer."""


def test_each_position_counts_its_fastest_run_and_the_answers_are_checked(tmp_path: Path) -> None:
    answers = {moves: score for moves, score in LINES} | {"44": 0}  # one answer wrong
    solver = fake_pons_solver(tmp_path, answers, microseconds=[300, 100, 200])
    ticks = []
    row = run_reference(solver, LINES, runs=3, tick=lambda: ticks.append(1))
    assert len(ticks) == 3  # one tick per run over the set
    assert (row.positions, row.correct) == (3, 2)
    assert (
        row.mean_ms == row.median_ms == row.max_ms == pytest.approx(0.1)
    )  # the second run's 100 us, the fastest
    assert row.mean_nodes == pytest.approx(10 * sum(len(moves) for moves, _ in LINES) / 3)


def test_the_probe_accepts_a_solver_that_scores_a_win_at_once_right(tmp_path: Path) -> None:
    check_reference_solver(fake_pons_solver(tmp_path, {PROBE_LINE: PROBE_SCORE}, microseconds=[5]))
    wrong = fake_pons_solver(tmp_path, {PROBE_LINE: 0}, microseconds=[5])
    with pytest.raises(ReferenceSolverError, match=f"scores {PROBE_LINE} as 0, not {PROBE_SCORE}"):
        check_reference_solver(wrong)


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("print('445566 18')", "not 'moves score nodes microseconds'"),  # Pons' current main
        ("pass", "answered 0 lines for 1 positions"),
        ("raise SystemExit(3)", "exited with status 3"),
    ],
)
def test_a_program_that_does_not_answer_as_the_timed_c4solver_is_refused(
    tmp_path: Path, program: str, message: str
) -> None:
    script = tmp_path / "c4solver"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stdin.read()\n{program}\n")
    script.chmod(0o755)
    with pytest.raises(ReferenceSolverError, match=message):
        check_reference_solver(script)


def test_the_description_says_how_the_reference_ran() -> None:
    text = describe_reference(3)
    assert "d7acbd6" in text and "`Solver::reset`" in text and "no opening book" in text
    assert "the fastest of 3 runs of each position" in text
    assert "one run of each position" in describe_reference(1)
