"""``plyarena search`` prints one JSON object with the search's result in notation."""

from __future__ import annotations

import json

import pytest

from games import GAMES, get_game
from plyarena.cli import main

FIELDS = {"move", "score", "depth", "nodes", "pv", "time_ms", "source"}


Capture = pytest.CaptureFixture[str]


def run_search(capsys: Capture, *args: str) -> dict:
    assert main(["search", *args]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one object on one line
    return json.loads(out)


@pytest.mark.parametrize("name", sorted(GAMES))
@pytest.mark.parametrize("style", ["alphabeta", "minimax", "expectimax"])
def test_every_game_and_style_prints_the_fields(capsys: Capture, name: str, style: str) -> None:
    result = run_search(capsys, name, "--depth", "2", "--style", style)
    assert set(result) == FIELDS
    start = get_game(name).start()
    assert start.parse_move(result["move"]) in start.legal_moves()
    assert result["pv"][0] == result["move"]
    assert result["depth"] == 2 and result["nodes"] > 0 and result["time_ms"] >= 0


def test_the_tictactoe_win_after_a1_b1(capsys: Capture) -> None:
    result = run_search(capsys, "tictactoe", "--moves", "a1 b1", "--depth", "9")
    assert result["score"] > 900_000
    assert len(result["pv"]) == 1_000_000 - result["score"]


def test_time_budget_and_level(capsys: Capture) -> None:
    assert run_search(capsys, "tictactoe", "--time-ms", "50")["depth"] >= 1
    assert run_search(capsys, "tictactoe", "--level", "8", "--moves", "a1 b1")["score"] > 900_000


def test_the_top_connect_four_level_says_where_its_move_came_from(capsys: Capture) -> None:
    opening = run_search(capsys, "connect4", "--level", "8")
    assert (opening["source"], opening["depth"], opening["nodes"]) == ("book", None, None)
    late = "2252576253462244111563365343671351441"  # Pons' Test_L3_R1
    endgame = run_search(capsys, "connect4", "--level", "8", "--moves", late)
    assert (endgame["source"], endgame["depth"]) == ("solved", None) and endgame["nodes"] > 0


def test_connect_four_takes_pons_digit_strings(capsys: Capture) -> None:
    digits = run_search(capsys, "connect4", "--moves", "4453", "--depth", "3")
    spaced = run_search(capsys, "connect4", "--moves", "4 4 5 3", "--depth", "3")
    assert {key: digits[key] for key in ("move", "score", "pv")} == {
        key: spaced[key] for key in ("move", "score", "pv")
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tictactoe", "--moves", "a1 a1"], "cell a1 is taken"),
        (["tictactoe", "--moves", "a1 a2 b1 b2 c1"], "the game is over"),
        (["tictactoe", "--style", "minimax"], "give --depth"),
        (["tictactoe", "--level", "3", "--depth", "2"], "--level sets its own style and depth"),
    ],
)
def test_bad_requests_fail_with_a_message(capsys: Capture, args: list[str], message: str) -> None:
    assert main(["search", *args]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and message in captured.err
