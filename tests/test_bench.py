"""``plyarena bench engine``, ``store``, ``moves`` and ``variety``, quick, and the benchmarks file they
share."""

from __future__ import annotations

import importlib.util
import re
import sqlite3
from pathlib import Path

import pytest
from support.pons import fake_pons_solver, pons_set

from bench.moves import MovesPlan, run_moves_benchmark
from bench.pons import PONS_SETS, PROBE_LINE, PROBE_SCORE
from bench.solving import PONS, our_searches
from bench.store import WAYS, StorePlan, run_store_benchmark
from bench.variety import VarietyPlan, play_match
from bots.levels import level
from bots.speedups import compiled_games
from plyarena.cli import main
from plyarena.commands.bench.output import write_section

TITLES = (
    "Search speed",
    "Connect Four: exact solving on Pascal Pons' test sets",
    "Pruning: minimax against alpha-beta, by depth",
    "Effective branching factor",
)
KERNEL_TITLES = (
    "perft beside small C bitboard programs",
    "the same searches in C and in Python",
    "the top levels",
    "Othello's exact endgame",
    "easyAI's Negamax at depth 8",
)
HAVE_EASYAI = importlib.util.find_spec("easyAI") is not None
"""easyAI is an optional bench dependency: without it the comparison is skipped with a note."""


def test_quick_engine_benchmark_writes_its_section(tmp_path: Path, pons_sets: Path) -> None:
    output = tmp_path / "benchmarks.md"
    output.write_text(
        "# Benchmarks\n\n<!-- plyarena bench server: start -->\nserver figures\n"
        "<!-- plyarena bench server: end -->\n"
    )
    assert main(["bench", "engine", "--quick", "--pons-sets", str(pons_sets), "--output", str(output)]) == 0
    text = output.read_text()
    assert "server figures" in text  # another mode's section is left alone
    for title in TITLES:
        assert f"### {title}" in text
    if HAVE_EASYAI:
        assert "### Side by side with easyAI" in text
    else:
        assert "easyAI comparison skipped" in text
    if compiled_games():  # the kernel beside Python: the same searches, and each target met or not
        for title in KERNEL_TITLES[: 5 if HAVE_EASYAI else 4]:
            assert f"### Compiled kernel: {title}" in text
        assert re.search(r"^\| othello \| 2 \| [0-9.]+ \| [0-9,]+ \| yes \|", text, re.MULTILINE)
    else:
        assert "The compiled kernel is not loaded" in text
    assert f"plyarena bench engine --quick --pons-sets {pons_sets}`" in text
    for name in PONS_SETS:  # each of our searches, and no reference given: no figure invented
        for search in our_searches():
            assert re.search(
                rf"^\| {name} \| {re.escape(search)} \| 5 \| 5 \| 0 \| .* \| - \| - \|$", text, re.M
            )
        assert f"| {name} | {PONS} |" not in text
    assert "not measured in this run; `--pons-solver PATH`" in text
    assert "| tictactoe |" in text and "| connect4 |" in text
    # Every table row has as many cells as its header.
    for block in text.split("### ")[1:]:
        rows = [line for line in block.splitlines() if line.startswith("|")]
        assert rows and len({row.count("|") for row in rows}) == 1, block


def test_quick_engine_benchmark_times_a_reference_solver_beside_ours(tmp_path: Path, pons_sets: Path) -> None:
    """A stand-in for Pons' c4solver, answering the sets' own scores in 1 ms each: its column, the ratio
    and how it was run appear in the section."""
    scores = {moves: score for name in PONS_SETS for moves, score in pons_set(name)}
    scores[PROBE_LINE] = PROBE_SCORE  # the position the command asks first, to check the solver works
    solver = fake_pons_solver(tmp_path, scores, microseconds=[1000])
    output = tmp_path / "benchmarks.md"
    argv = ["bench", "engine", "--quick", "--pons-sets", str(pons_sets), "--pons-solver", str(solver)]
    assert main([*argv, "--output", str(output)]) == 0
    text = output.read_text()
    assert f"--pons-solver {solver}`" in text
    assert "its transposition table reset (`Solver::reset`) before each position" in text
    assert "one run of each position" in text
    for name in PONS_SETS:
        his = r"5 \| 5 \| 0 \| 1\.0000 \| 1\.0000 \| 1\.0 \| [0-9,]+ \| - \| - \|$"  # his 1 ms, no ratio
        assert re.search(rf"^\| {name} \| {re.escape(PONS)} \| {his}", text, re.M), text
        for search in our_searches():
            times = r"([0-9.]+) \| ([0-9.]+) \| .* \| (.+) \| (.+)"  # mean, median, ..., their ratios
            row = re.search(rf"^\| {name} \| {re.escape(search)} \| 5 \| 5 \| 0 \| {times} \|$", text, re.M)
            assert row is not None, text
            for time_ms, ratio in ((row[1], row[3]), (row[2], row[4])):  # ours over his 1 ms, as shown
                assert ratio.endswith("x") and float(ratio[:-1]) == pytest.approx(
                    float(time_ms), rel=0.1, abs=0.06
                )


def test_a_section_is_replaced_not_repeated(tmp_path: Path) -> None:
    output = tmp_path / "docs" / "benchmarks.md"
    write_section(output, "engine", "## Engine\nfirst run\n")
    write_section(output, "bots", "## Bots\nbots run\n")
    write_section(output, "engine", "## Engine\nsecond run\n")
    text = output.read_text()
    assert text.startswith("# Benchmarks")
    assert "first run" not in text and text.count("second run") == 1 and "bots run" in text
    assert text.index("second run") < text.index("bots run")  # the section stays where it was
    output.write_text(output.read_text() + "\nNotes kept by hand.\n")
    write_section(output, "bots", "## Bots\nthird run\n")
    assert output.read_text().endswith("<!-- plyarena bench bots: end -->\n\nNotes kept by hand.\n")


def test_quick_store_benchmark_commits_every_row_each_way_and_writes_its_section(tmp_path: Path) -> None:
    plan = StorePlan.quick()
    results = run_store_benchmark(plan, tmp_path)

    assert [result.way for result in results] == list(WAYS)
    for result in results:
        assert result.commit_cpu_ms > 0 and result.move_cpu_us > 0
        assert len(result.busy_batch_ms) == plan.busy_batches
    # (each way's first commit, of one move, starts its writer: the writer process, for one)
    rounds = 1 + plan.single_commits + plan.batches + plan.busy_batches
    moves = 1 + plan.single_commits + plan.batches * plan.batch_size
    moves += plan.busy_batches * plan.busy_batch_size
    with sqlite3.connect(tmp_path / "bench.sqlite3") as database:
        stored = database.execute("SELECT count(*), count(DISTINCT ply) FROM moves").fetchone()
    assert stored == (len(WAYS) * moves, len(WAYS) * rounds)

    output = tmp_path / "benchmarks.md"
    assert main(["bench", "store", "--quick", "--output", str(output)]) == 0
    text = output.read_text()
    assert "plyarena bench store --quick" in text
    assert all(f"| {way} |" in text for way in WAYS)


def test_quick_moves_benchmark_commits_every_move_and_writes_its_section(tmp_path: Path) -> None:
    plan = MovesPlan.quick()
    runs = run_moves_benchmark(plan)

    assert [run.thresholds for run in runs] == list(plan.thresholds)
    for run in runs:  # every move played was committed (the bench checks), and cost something
        assert run.moves >= plan.matches and run.cpu_us_per_move > 0 and sum(run.collections) >= 0
        assert sum(run.gc_s_by_generation) == pytest.approx(run.gc_s)  # each pause filed by generation

    output = tmp_path / "benchmarks.md"
    assert main(["bench", "moves", "--quick", "--gc", "900,10,10", "--output", str(output)]) == 0
    text = output.read_text()
    assert "`plyarena bench moves --quick --gc 900,10,10`" in text and "| 900, 10, 10 |" in text
    assert "| of which young / middle / full, us |" in text


@pytest.mark.parametrize(("game", "number", "bot_seat"), [("tictactoe", 8, 1), ("othello", 4, 0)])
def test_a_level_plays_other_games_on_other_seeds_against_one_replayed_line(
    game: str, number: int, bot_seat: int
) -> None:
    """Against the same scripted human, five seeds give at least two games, and a seed its own again."""
    played = [play_match(game, level(game, number), bot_seat, seed, None) for seed in range(5)]
    assert len(set(played)) >= 2
    assert play_match(game, level(game, number), bot_seat, 3, None) == played[3]


def test_quick_variety_benchmark_writes_its_section(tmp_path: Path) -> None:
    output = tmp_path / "benchmarks.md"
    assert main(["bench", "variety", "--quick", "--matches", "2", "--output", str(output)]) == 0
    text = output.read_text()
    assert "`plyarena bench variety --quick --matches 2`" in text
    plan = VarietyPlan.quick()
    for game in plan.games:
        for number in plan.levels:
            assert f"| {game} | {number} {level(game, number).name} |" in text
    assert "| connect4 | 5 | 3 |" in text and text.count("x | 0 |") == 1  # the cost, and no score differs
