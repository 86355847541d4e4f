"""Tournaments: who plays whom, twins that share openings, real games, and a results file that rates."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

import bots.tournament
from bots.levels import level
from bots.tournament import (
    GameRecord,
    GameSpec,
    pairings,
    parse_levels,
    play_game,
    read_records,
    schedule,
    write_record,
)
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


STOCKFISH_1350 = "stockfish@1350"


def test_with_anchors_every_level_plays_every_anchor_and_not_each_other() -> None:
    engines = {"stockfish": ["/usr/games/stockfish"]}
    anchors = (STOCKFISH_1350, "stockfish@1500")
    specs = schedule("chess", [4, 6], 2, seed=3, anchors=anchors, engines=engines, anchor_ms=50)
    pairs = Counter(frozenset((spec.first, spec.second)) for spec in specs)
    assert pairs == {frozenset((level, anchor)): 2 for level in (4, 6) for anchor in anchors}
    assert all(spec.engines == (("stockfish", ("/usr/games/stockfish",)),) for spec in specs)
    assert {spec.anchor_ms for spec in specs} == {50} and len(specs[0].opening) == 4
    with pytest.raises(ValueError, match="span and involving choose between levels only"):
        schedule("chess", [4, 6], 2, seed=3, span=1, anchors=anchors, engines=engines)
    with pytest.raises(ValueError, match="stockfish@1350 is played by the outside engine 'stockfish'"):
        schedule("chess", [4], 2, seed=3, anchors=[STOCKFISH_1350])
    with pytest.raises(ValueError, match="Stockfish is played by the outside engine"):  # level 8's name
        schedule("chess", [7, 8], 2, seed=3)
    assert parse_levels("5", minimum=1) == (5,)


def test_a_level_plays_an_anchor_to_the_end(stockfish_path: str) -> None:
    spec = GameSpec(
        "chess", 1, STOCKFISH_1350, ("e2e4", "e7e5"), seed=4, engines=(("stockfish", (stockfish_path,)),),
        anchor_ms=20,
    )  # fmt: skip
    record = play_game(spec)
    final = get_game("chess").replay(record.moves)
    assert final.outcome() is not None and record.reason == final.outcome().reason  # type: ignore[union-attr]
    assert record.second == STOCKFISH_1350 and record.anchor_ms == 20
    assert record.think_ms[1] > 0 and record.short_searches == (0, 0)


def test_an_anchored_tournament_writes_its_games(tmp_path: Path, stockfish_path: str) -> None:
    results = tmp_path / "chess.jsonl"
    argv = [
        "tournament",
        "--game",
        "chess",
        "--levels",
        "1",
        "--anchors",
        "stockfish@2850",
        "--anchor-ms",
        "10",
    ]
    argv += ["--engine", f"stockfish={stockfish_path}", "--games-per-pair", "1", "--workers", "1"]
    assert main([*argv, "--output", str(results)]) == 0
    (record,) = read_records(results)
    assert {record.first, record.second} == {1, "stockfish@2850"} and record.anchor_ms == 10
    assert record.points_of("stockfish@2850") == 1.0  # level 1 moves almost at random


def test_games_against_anchors_rate_on_the_anchors_scale(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Level 2 scores half against Stockfish at 1350, and level 1 a quarter against level 2 (3 to 1 odds:
    191 Elo), with colours balanced so that the first mover's advantage is nil."""
    results = tmp_path / "chess.jsonl"
    with results.open("w", encoding="utf-8") as stream:
        for first, second, result in [
            (2, STOCKFISH_1350, "1/2-1/2"), (STOCKFISH_1350, 2, "1/2-1/2"),
            (1, 2, "1/2-1/2"), (2, 1, "1/2-1/2"), (1, 2, "0-1"), (2, 1, "1-0"),
        ]:  # fmt: skip
            record = GameRecord(
                "chess", first, second, 0, [], result, "checkmate", 1, None, (0, 0), (0, 0), 100
            )
            write_record(stream, record)
    table = tmp_path / "ratings.json"
    assert main(["ratings", str(results), "--write", str(table), "--prior-draws", "0"]) == 0
    assert "anchors stockfish@1350" in capsys.readouterr().out
    shipped = json.loads(table.read_text(encoding="utf-8"))["games"]["chess"]
    assert shipped["anchor_level"] is None and shipped["anchors"][0]["name"] == STOCKFISH_1350
    assert [(row["level"], row["rating"]) for row in shipped["levels"]] == [(1, 1350 - 191), (2, 1350)]


def test_bad_anchors_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["tournament", "--game", "chess", "--levels", "1", "--anchors", "stockfish-1350"])
    assert "'stockfish-1350' is not an anchor: expected ENGINE@ELO" in capsys.readouterr().err
    assert main(["tournament", "--game", "chess", "--levels", "1", "--anchors", STOCKFISH_1350]) == 1
    assert "give its command" in capsys.readouterr().err
    results = tmp_path / "bad.jsonl"
    line = play_game(GameSpec("tictactoe", 1, 2, (), seed=1))
    with results.open("w", encoding="utf-8") as stream:
        write_record(stream, line)
        write_record(stream, msgspec.structs.replace(line, second="stockfish"))
    with pytest.raises(ValueError, match=r"bad\.jsonl, line 2: 'stockfish' is not an anchor"):
        read_records(results)
