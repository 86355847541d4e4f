"""Tournaments: who plays whom, twins that share openings, real games, and a results file that rates."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

import bots.tournament
from bots.levels import level
from bots.tournament import GameSpec, pairings, parse_levels, play_game, read_records, schedule, write_record
from games import get_game
from plyarena.cli import main


def test_levels_are_read_from_ranges_and_lists() -> None:
    assert parse_levels("1-8") == (1, 2, 3, 4, 5, 6, 7, 8)
    assert parse_levels("2,4,6") == (2, 4, 6)
    assert parse_levels("1-3,7") == (1, 2, 3, 7)
    for bad, message in [("0-3", "outside"), ("3-1", "backwards"), ("x", "'x' is not a level"), ("4", "two")]:
        with pytest.raises(ValueError, match=message):
            parse_levels(bad)


def test_span_keeps_the_pairs_that_are_close() -> None:
    assert pairings([1, 2, 3]) == [(1, 2), (1, 3), (2, 3)]
    assert pairings([1, 2, 3, 4], span=1) == [(1, 2), (2, 3), (3, 4)]
    assert pairings([2, 4, 8], span=1) == [(2, 4), (4, 8)]  # neighbours in the list, not in number
    assert len(pairings(range(1, 9), span=2)) == 7 + 6
    assert pairings(range(1, 9), span=2, involving=3) == [(1, 3), (2, 3), (3, 4), (3, 5)]
    with pytest.raises(ValueError, match="level 9 is not among"):
        pairings(range(1, 9), involving=9)


def test_a_schedule_pairs_colour_swapped_twins_on_varied_openings() -> None:
    specs = schedule("connect4", [1, 2, 3], 6, seed=5, span=1)
    assert len(specs) == 2 * 6
    assert Counter((spec.first, spec.second) for spec in specs) == {
        (1, 2): 3,
        (2, 1): 3,
        (2, 3): 3,
        (3, 2): 3,
    }
    for one, other in zip(specs[::2], specs[1::2], strict=True):
        assert (one.first, one.second) == (other.second, other.first)
        assert one.opening == other.opening and len(one.opening) == 2
        assert one.seed != other.seed
    assert len({spec.opening for spec in specs if {spec.first, spec.second} == {1, 2}}) == 3
    assert schedule("connect4", [1, 2, 3], 6, seed=5, span=1) == specs  # the seed replays it


def test_an_odd_number_of_games_alternates_colours_from_pair_to_pair() -> None:
    specs = schedule("tictactoe", [1, 2, 3], 1, seed=1)
    assert [(spec.first, spec.second) for spec in specs] == [(1, 2), (3, 1), (2, 3)]


def test_a_game_is_played_to_the_end_from_its_opening() -> None:
    spec = GameSpec("tictactoe", 1, 8, ("b2",), seed=3)
    record = play_game(spec)
    assert record.moves[0] == "b2" and record.opening_plies == 1
    final = get_game("tictactoe").replay(record.moves)
    outcome = final.outcome()
    assert outcome is not None
    assert record.result == {0: "1-0", 1: "0-1", None: "1/2-1/2"}[outcome.winner]
    assert record.reason == outcome.reason
    assert record.result != "1-0"  # level 1 moves first but cannot beat the perfect level 8
    assert play_game(spec).moves == record.moves  # depth-bound levels replay exactly from the seed


def test_a_tiny_tournament_writes_a_results_file_that_rates(tmp_path: Path) -> None:
    results = tmp_path / "ttt.jsonl"
    argv = ["tournament", "--game", "tictactoe", "--levels", "1,8", "--games-per-pair", "4", "--workers", "1"]
    assert main([*argv, "--output", str(results), "--seed", "2"]) == 0
    lines = results.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4
    for line in lines:
        game = json.loads(line)
        assert {game["first"], game["second"]} == {1, 8}
        assert game["result"] in ("1-0", "0-1", "1/2-1/2") and game["reason"]
        position = get_game("tictactoe").replay(game["moves"])
        assert position.outcome() is not None
    records = read_records(results)
    assert Counter(record.first for record in records) == {1: 2, 8: 2}
    packed = tmp_path / "ttt.jsonl.gz"
    packed.write_bytes(gzip.compress(results.read_bytes()))
    assert read_records(packed) == records
    assert all(record.points_of(8) >= 0.5 for record in records)

    table = tmp_path / "ratings.json"
    assert main(["ratings", str(results), "--write", str(table), "--anchor-rating", "800"]) == 0
    shipped = json.loads(table.read_text(encoding="utf-8"))["games"]["tictactoe"]
    assert [row["level"] for row in shipped["levels"]] == [1, 8]
    assert shipped["levels"][0]["rating"] == 800 and shipped["levels"][1]["rating"] > 800
    assert shipped["games"] == 4


def test_a_bad_results_line_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "bad.jsonl"
    good = play_game(GameSpec("tictactoe", 1, 2, (), seed=1))
    with results.open("w", encoding="utf-8") as stream:
        write_record(stream, good)
        stream.write('{"game": "tictactoe"}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl, line 2: not a game record"):
        read_records(results)
    assert main(["ratings", str(results)]) == 1
    assert "line 2" in capsys.readouterr().err


def test_bad_tournament_options_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tournament", "--game", "tictactoe", "--levels", "1-9"]) == 1
    assert "'1-9' is outside 1-8" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["tournament", "--game", "tictactoe", "--games-per-pair", "0"])
    assert exit_.value.code == 2
    assert "argument --games-per-pair: 0 is too small" in capsys.readouterr().err


def test_an_untimed_game_plays_its_levels_without_their_time_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Othello's level 8 has a depth and a second a move: untimed, only the depth bounds it."""
    played = bots.tournament.choose_move
    budgets: set[int | None] = set()

    def spy(position, row, rng, time_ms=None):  # type: ignore[no-untyped-def]
        budgets.add(row.time_ms)
        return played(position, replace(row, depth=1), rng, time_ms)  # depth 1: a quick game

    monkeypatch.setattr(bots.tournament, "choose_move", spy)
    assert level("othello", 8).time_ms is not None
    record = play_game(GameSpec("othello", 7, 8, (), 5, untimed=True))
    assert budgets == {None} and record.untimed
    assert all(spec.untimed for spec in schedule("othello", [7, 8], 2, seed=1, untimed=True))
    budgets.clear()
    assert not play_game(GameSpec("othello", 7, 8, (), 5)).untimed
    assert level("othello", 8).time_ms in budgets
