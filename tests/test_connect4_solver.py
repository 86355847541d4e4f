"""The exact Connect Four solver against Pascal Pons' test sets, a brute-force oracle, and its command.

The tests on Pons' sets skip without them (see tests/support/pons.py); the brute-force oracles here and
in test_connect4_plain_negamax.py check the solver on any checkout.
"""

from __future__ import annotations

import io
import pickle
import random
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.pons import pons_sample, pons_set

from bots.connect4_solver import Solution, SolverBudgetExceeded, WeakSolver, analyze, solve
from games.connect4 import CELLS, ConnectFour
from plyarena.cli import main

SAMPLE_SIZE = 100


def check_solution(moves: str, expected: int) -> None:
    """The score is exact and the move is legal and keeps it."""
    position = ConnectFour.from_moves(moves)
    solution = solve(position)
    assert solution.score == expected, moves
    assert solution.move in position.legal_moves(), moves
    assert solution.nodes > 0
    child = position.play(solution.move)
    assert -solve(child).score == expected, f"{moves}: column {solution.move + 1} does not keep the score"


def test_every_position_of_the_end_game_set_solves_exactly() -> None:
    positions = pons_set("Test_L3_R1")
    assert len(positions) == 1000
    for moves, expected in positions:
        check_solution(moves, expected)


@pytest.mark.parametrize("index", range(SAMPLE_SIZE))
def test_a_sample_of_the_middle_game_set_solves_exactly(index: int) -> None:
    check_solution(*pons_sample("Test_L2_R1", SAMPLE_SIZE)[index])


@pytest.mark.parametrize("index", range(SAMPLE_SIZE))
def test_a_sample_of_the_opening_set_solves_exactly(index: int) -> None:
    check_solution(*pons_sample("Test_L1_R1", SAMPLE_SIZE)[index])


@cache
def oracle(position: ConnectFour) -> int:
    """Pons' score by plain minimax over every line of play: slow, simple and independent."""
    best = -CELLS
    for move in position.legal_moves():
        child = position.play(move)
        outcome = child.outcome()
        if outcome is None:
            score = -oracle(child)
        elif outcome.is_draw:
            score = 0
        else:
            score = 22 - child.stones(outcome.winner).bit_count()  # 22 minus the winner's stones
        best = max(best, score)
    return best


def endgame(seed: int, empty_cells: int) -> ConnectFour:
    """A random position with ``empty_cells`` cells left (fewer if every move would end the game)."""
    rng = random.Random(seed)
    position = ConnectFour()
    while position.ply < CELLS - empty_cells:
        going_on = [move for move in position.legal_moves() if position.play(move).outcome() is None]
        if not going_on:
            break
        position = position.play(rng.choice(going_on))
    return position


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), empty_cells=st.integers(1, 14))
def test_every_move_scores_as_plain_minimax_scores_it(seed: int, empty_cells: int) -> None:
    position = endgame(seed, empty_cells)
    scores = analyze(position)
    assert set(scores) == set(position.legal_moves())
    for move, score in scores.items():
        child = position.play(move)
        outcome = child.outcome()
        expected = (
            -oracle(child) if outcome is None else 0 if outcome.is_draw else 22 - (position.ply + 2) // 2
        )
        assert score == expected, (move, position)
    solution = solve(position)
    assert solution.score == max(scores.values()) == oracle(position)
    assert scores[solution.move] == solution.score


@pytest.mark.parametrize("index", range(30))
def test_analyze_agrees_with_solve(index: int) -> None:
    moves, expected = pons_sample("Test_L3_R1", SAMPLE_SIZE)[index]
    scores = analyze(moves)
    solution = solve(moves)
    assert max(scores.values()) == solution.score == expected
    assert scores[solution.move] == solution.score
    assert set(scores) == set(ConnectFour.from_moves(moves).legal_moves())


@pytest.mark.parametrize("table_capacity", [1 << 20, 64])
def test_a_weak_solve_gives_the_sign_of_the_exact_score_and_a_move_that_keeps_it(table_capacity: int) -> None:
    """One solver for many positions, with a roomy table and with one so small that it keeps clearing."""
    solver = WeakSolver(table_capacity)
    for moves, expected in pons_sample("Test_L3_R1", SAMPLE_SIZE)[:40]:
        value = solver.value(moves)
        assert value == (expected > 0) - (expected < 0), moves
        move = solver.keeping_move(moves, value)
        assert move is not None
        child_score = solve(ConnectFour.from_moves(moves).play(move)).score
        assert (child_score < 0) - (child_score > 0) == value, f"{moves}: column {move + 1} changes the value"
    assert solver.nodes() > 0
    assert solver.table_size() <= table_capacity


def test_a_weak_solver_keeps_to_its_node_budget() -> None:
    with pytest.raises(SolverBudgetExceeded):
        WeakSolver(max_nodes=100).value("326323127")


def test_an_immediate_win_is_taken() -> None:
    solution = solve("445566")  # Red can complete the bottom row in column 3 or 7
    assert solution.score == 18  # with its fourth stone: 22 - 4
    assert solution.move == 2  # the more central of the two


def test_a_finished_game_has_a_score_and_no_move() -> None:
    won = ConnectFour.from_moves("4455667")  # Red completes the bottom row with its fourth stone
    assert solve(won) == Solution(score=-18, move=None, nodes=0)
    assert analyze(won) == {}
    drawn = ConnectFour.from_moves("441365675334466335442232661515577771217122")
    assert solve(drawn).score == 0 and solve(drawn).move is None


def test_a_node_budget_stops_a_long_search() -> None:
    with pytest.raises(SolverBudgetExceeded, match="100 nodes"):
        solve("326323127", max_nodes=100)


def test_solving_runs_in_a_process_pool() -> None:
    lines = pons_set("Test_L3_R1")[:4]
    with ProcessPoolExecutor(max_workers=1) as pool:
        solutions = list(pool.map(solve, [moves for moves, _ in lines]))
    assert [solution.score for solution in solutions] == [score for _, score in lines]
    assert pickle.loads(pickle.dumps(solutions[0])) == solutions[0]


def test_solve_command_checks_scores_and_counts_the_wrong_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = pons_set("Test_L3_R1")[:5]
    wrong_moves, right_score = lines[2]
    text = "\n".join(
        f"{moves} {right_score + 1 if moves == wrong_moves else score}" for moves, score in lines
    )
    path = tmp_path / "positions"
    path.write_text(text + "\n")
    assert main(["solve", "connect4", str(path), "--check"]) == 1
    captured = capsys.readouterr()
    out = captured.out.strip().split("\n")
    assert len(out) == 6
    for (moves, score), printed in zip(lines, out, strict=False):
        printed_moves, printed_score, column = printed.split()
        assert (printed_moves, int(printed_score)) == (moves, score)
        assert column in "1234567" and len(column) == 1
    assert out[-1].startswith("4 correct, 1 wrong, mean ")
    assert "ms per position" in out[-1]
    assert f"line 3: {wrong_moves} scores {right_score}, not {right_score + 1}" in captured.err


def test_solve_command_passes_when_every_score_is_right(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = pons_set("Test_L3_R1")[:3]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(f"{moves} {score}\n" for moves, score in lines)))
    assert main(["solve", "connect4", "--check"]) == 0
    assert capsys.readouterr().out.strip().split("\n")[-1].startswith("3 correct, 0 wrong, mean ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("4455667 -18\n12x4 3\n", "line 2: bad moves: move 3 ('x')"),
        ("\n4455667 many\n", "line 2: the score 'many' is not an integer"),
        ("4455667 -18 -18\n", "line 1: expected '<moves> [<score>]'"),
        ("44556677 0\n", "line 1: bad moves: move 8 ('7'): the game is over"),
        ("4455667\n", "line 1: --check needs a score"),
    ],
)
def test_solve_command_names_the_malformed_line(
    text: str, message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["solve", "connect4", "--check"]) == 1
    captured = capsys.readouterr()
    assert message in captured.err
    assert captured.out == ""  # nothing is solved when any line is malformed
