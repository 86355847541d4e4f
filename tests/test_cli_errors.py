"""Wrong input to the offline commands (book, perft, search, solve, tournament, ratings, bench) is refused
in one line, before any work, never with a traceback."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from bench.pons import PONS_SETS_VARIABLE, REFERENCE_COMMIT
from bots.connect4_book import BOOK_PATH
from bots.deadline import Deadline
from bots.tournament import schedule
from plyarena.cli import main
from plyarena.commands.bench.output import DEFAULT_OUTPUT

Capture = pytest.CaptureFixture[str]
REPOSITORY = Path(__file__).resolve().parents[1]
SHIPPED_RESULTS = REPOSITORY / "docs" / "ratings" / "tictactoe-1.jsonl.gz"
HELP_WIDTH = 100_000
"""Wider than any help paragraph, so that argparse breaks none of them."""


def exit_status(argv: Sequence[str]) -> int:
    """What ``plyarena ARGV`` exits with, whether argparse or the command decides it."""
    try:
        return main(list(argv))
    except SystemExit as exit_:
        return int(exit_.code or 0)


def assert_refused(capsys: Capture, argv: Sequence[str], status: int, fragment: str) -> None:
    """``argv`` exits with ``status`` and its last line of stderr is the error, naming ``fragment``.

    Status 2 is argparse's (usage lines come first), 1 a :class:`CommandError` (the one line alone).
    """
    assert exit_status(argv) == status
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    if status == 1:
        assert len(lines) == 1, err
    last = lines[-1]
    command = " ".join(argv[:2]) if argv[0] == "bench" else argv[0]  # bench's modes speak for themselves
    assert last.startswith(f"plyarena {command}: error: "), err
    assert fragment in last, err


def help_of(capsys: Capture, argv: Sequence[str]) -> str:
    """The help text of a command on one line, so that paths can be looked for whole: argparse wraps at
    the terminal's width (``COLUMNS``), and breaks a long path after any hyphen in it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", str(HELP_WIDTH))
        assert exit_status([*argv, "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())


# 1. book


def test_book_help_says_the_default_out_is_the_shipped_book_and_a_build_overwrites_it(
    capsys: Capture,
) -> None:
    text = help_of(capsys, ["book"])
    assert str(BOOK_PATH) in text and "overwrites" in text


def test_book_refuses_an_unwritable_out_before_building(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("the book was built before its output was checked")

    monkeypatch.setattr("plyarena.commands.book.build", no_build)
    missing = tmp_path / "missing" / "book.json.gz"
    assert_refused(
        capsys, ["book", "connect4", "--plies", "4", "--out", str(missing)], 1, f"cannot write {missing}"
    )
    assert_refused(
        capsys, ["book", "connect4", "--plies", "4", "--out", str(tmp_path)], 1, "it is a directory"
    )
    assert list(tmp_path.iterdir()) == []  # the check leaves nothing behind


@pytest.mark.parametrize(
    ("option", "value", "fragment"),
    [("--check", "-1", "argument --check: -1 is too small"), ("--seconds", "nan", "not a finite number")],
)
def test_book_refuses_bad_counts_and_durations(
    capsys: Capture, option: str, value: str, fragment: str
) -> None:
    assert_refused(capsys, ["book", "connect4", "--plies", "2", option, value], 2, fragment)


# 2. search and the deadline


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_search_refuses_a_time_budget_that_is_not_a_finite_number_of_0_or_more(
    capsys: Capture, value: str
) -> None:
    assert_refused(capsys, ["search", "connect4", "--time-ms", value], 2, "argument --time-ms")


def test_search_refuses_a_depth_below_1_as_an_option(capsys: Capture) -> None:
    assert_refused(capsys, ["search", "connect4", "--depth", "0"], 2, "argument --depth: 0 is too small")


def test_a_deadline_refuses_nan_which_no_clock_would_ever_pass() -> None:
    with pytest.raises(ValueError, match="time budget"):
        Deadline(math.nan)


def test_search_help_shows_the_opponent_defaults(capsys: Capture) -> None:
    text = help_of(capsys, ["search"])
    assert "(default uniform)" in text and "(default 0.2)" in text


# 3. perft


def test_perft_refuses_an_illegal_move_in_one_line(capsys: Capture) -> None:
    assert_refused(
        capsys, ["perft", "connect4", "2", "--moves", "9"], 1, "cannot replay --moves: illegal move '9'"
    )


def test_perft_reads_moves_as_search_does(capsys: Capture) -> None:
    assert main(["perft", "connect4", "2", "--moves", "4453"]) == 0
    digits = capsys.readouterr().out
    assert main(["perft", "connect4", "2", "--moves", "4 4 5 3"]) == 0
    assert capsys.readouterr().out == digits == "49\n"


def test_perft_refuses_a_negative_depth_which_would_never_end(capsys: Capture) -> None:
    assert_refused(capsys, ["perft", "connect4", "-1"], 2, "argument depth: -1 is negative")


def test_perft_help_mentions_the_moves_played_first(capsys: Capture) -> None:
    assert "after --moves" in help_of(capsys, ["perft"])


# 4. solve


def test_solve_refuses_a_file_that_is_not_utf8(tmp_path: Path, capsys: Capture) -> None:
    path = tmp_path / "positions.txt"
    path.write_bytes(b"4453 1\n\xff\xfe\n")
    assert_refused(capsys, ["solve", "connect4", str(path)], 1, f"cannot read {path}: it is not UTF-8 text")


@pytest.mark.parametrize(("name", "fragment"), [("missing.txt", "No such file"), (".", "Is a directory")])
def test_solve_names_a_file_it_cannot_read(tmp_path: Path, capsys: Capture, name: str, fragment: str) -> None:
    assert_refused(capsys, ["solve", "connect4", str(tmp_path / name)], 1, fragment)


# 5. tournament


def test_tournament_refuses_a_negative_time_budget_before_any_worker_starts(capsys: Capture) -> None:
    assert_refused(capsys, ["tournament", "--game", "tictactoe", "--time-ms", "-1"], 2, "argument --time-ms")


def test_a_schedule_refuses_a_time_budget_below_1_ms() -> None:
    with pytest.raises(ValueError, match="at least 1 ms"):
        schedule("tictactoe", [1, 2], 2, seed=1, time_ms=0)


def test_tournament_says_how_many_games_apart_from_the_levels(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("plyarena.commands.tournament.play_all", lambda specs, workers, finished: [])
    output = tmp_path / "results.jsonl"
    argv = [
        "tournament",
        "--game",
        "tictactoe",
        "--levels",
        "1-3",
        "--games-per-pair",
        "2",
        "--output",
        str(output),
    ]
    assert main([*argv, "--workers", "1"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "tictactoe: 6 games between levels 1, 2, 3," in out


# 6. and 7. bench


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["bench", "bots", "--quick", "--game", "go"], "argument --game: invalid choice: 'go'"),
        (["bench", "bots", "--quick", "--level", "9"], "argument --level: invalid choice: 9"),
        (["bench", "bots", "--quick", "--games", "0"], "argument --games: 0 is too small"),
        (["bench", "fuzz", "--db", "nonsense"], "argument --db: malformed database URL"),
        (["bench", "fuzz", "--quick", "--players", "0"], "argument --players: 0 is too small"),
        (["bench", "fuzz", "--quick", "--messages", "0"], "argument --messages: 0 is too small"),
        (["bench", "server", "--game", "go"], "argument --game: invalid choice: 'go'"),
        (["bench", "server", "--time-control", "abc"], "argument --time-control: bad time control 'abc'"),
        (["bench", "server", "--clients", "-5"], "argument --clients: -5 is too small"),
        (["bench", "server", "--duration", "nan"], "argument --duration: 'nan' is not a finite number"),
    ],
)
def test_bench_refuses_bad_options_before_starting(capsys: Capture, argv: list[str], fragment: str) -> None:
    assert_refused(capsys, argv, 2, fragment)


def test_bench_refuses_an_output_it_cannot_write_before_measuring(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_bench(*args: object) -> None:
        raise AssertionError("the bench ran before its output was checked")

    monkeypatch.setattr("plyarena.commands.bench.run_store_benchmark", no_bench)
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a directory\n")
    for output, fragment in [(in_the_way / "benchmarks.md", "cannot write"), (tmp_path, "it is a directory")]:
        assert_refused(capsys, ["bench", "store", "--quick", "--output", str(output)], 1, fragment)


def test_bench_server_says_why_the_server_under_test_did_not_start(tmp_path: Path, capsys: Capture) -> None:
    """The server's own one-line error, passed on: here a database it cannot open."""
    missing = f"sqlite+aiosqlite:///{tmp_path / 'missing' / 'bench.sqlite3'}"
    argv = ["bench", "server", "--clients", "2", "--matches", "1", "--duration", "1", "--no-output"]
    assert_refused(capsys, [*argv, "--db", missing], 1, f"cannot open the database {missing}")


def test_bench_engine_names_a_directory_without_pons_sets(tmp_path: Path, capsys: Capture) -> None:
    argv = ["bench", "engine", "--quick", "--pons-sets", str(tmp_path)]
    assert_refused(capsys, argv, 1, f"no Pons test sets: no Test_L3_R1, Test_L2_R1, Test_L1_R1 in {tmp_path}")


def test_bench_engine_without_pons_sets_says_how_to_give_them(
    capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(PONS_SETS_VARIABLE, raising=False)
    assert_refused(
        capsys, ["bench", "engine", "--quick"], 1, f"with --pons-sets DIR or {PONS_SETS_VARIABLE}=DIR"
    )


def test_bench_engine_finds_pons_sets_where_the_environment_points(
    tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PONS_SETS_VARIABLE, str(tmp_path / "elsewhere"))
    assert_refused(capsys, ["bench", "engine", "--quick"], 1, f"in {tmp_path / 'elsewhere'}")


def test_bench_engine_refuses_a_pons_solver_that_does_not_time_each_position(
    tmp_path: Path, capsys: Capture
) -> None:
    """Pons' current c4solver prints ``moves score`` only, keeping its table from line to line."""
    for name in ("Test_L3_R1", "Test_L2_R1", "Test_L1_R1"):
        (tmp_path / name).write_text("445566 18\n")
    untimed = tmp_path / "c4solver"
    untimed.write_text(
        f"#!{sys.executable}\nimport sys\nfor line in sys.stdin:\n    print(line.strip(), 18)\n"
    )
    untimed.chmod(0o755)
    argv = ["bench", "engine", "--quick", "--pons-sets", str(tmp_path)]
    for solver, fragment in [
        (untimed, f"build Pons' c4solver at commit {REFERENCE_COMMIT}"),
        (tmp_path / "missing", "cannot run the reference solver"),
    ]:
        assert_refused(capsys, [*argv, "--pons-solver", str(solver)], 1, fragment)


def test_bench_help_says_where_its_files_are(capsys: Capture) -> None:
    assert DEFAULT_OUTPUT == REPOSITORY / "docs" / "benchmarks.md"  # not relative to where it runs
    assert str(DEFAULT_OUTPUT) in help_of(capsys, ["bench", "store"])
    engine_help = help_of(capsys, ["bench", "engine"])
    assert (
        f"(default: ${PONS_SETS_VARIABLE})" in engine_help and f"at commit {REFERENCE_COMMIT}" in engine_help
    )
    assert "(default 8; --quick: 2)" in help_of(capsys, ["bench", "fuzz"])


# 8. ratings


def test_ratings_names_a_results_file_that_is_not_gzip_or_not_utf8(tmp_path: Path, capsys: Capture) -> None:
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(b"not gzip")
    assert_refused(capsys, ["ratings", str(broken)], 1, f"{broken}: not a whole gzip file")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\n")
    assert_refused(capsys, ["ratings", str(binary)], 1, f"{binary}: not UTF-8 text")


def test_ratings_refuses_a_plot_it_cannot_draw(tmp_path: Path, capsys: Capture) -> None:
    pytest.importorskip("matplotlib")
    assert_refused(
        capsys, ["ratings", str(SHIPPED_RESULTS), "--plot", str(tmp_path)], 1, f"cannot draw to {tmp_path}"
    )


@pytest.mark.parametrize(
    ("option", "value"), [("--prior-draws", "nan"), ("--prior-draws", "-1"), ("--anchor-rating", "inf")]
)
def test_ratings_refuses_numbers_that_would_fit_nonsense(capsys: Capture, option: str, value: str) -> None:
    assert_refused(capsys, ["ratings", str(SHIPPED_RESULTS), option, value], 2, f"argument {option}")


# serve


@pytest.mark.parametrize("instance_id", ["a+b", "a/b", "#", "", "-leading", "x" * 65])
def test_serve_refuses_an_instance_id_that_cannot_be_a_topic_level(capsys: Capture, instance_id: str) -> None:
    """The id is a level of the MQTT topics the instance publishes on: refused before anything starts."""
    assert_refused(capsys, ["serve", f"--instance-id={instance_id}"], 2, "is not an instance id")
