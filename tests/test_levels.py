"""The level table: well-formed for every game, strict about mistakes, and a move at every level."""

from __future__ import annotations

import random
from collections import Counter
from itertools import count

import pytest
from random_positions import random_line

from bots.evaluation import evaluator_for
from bots.levels import (
    LEVEL_COUNT,
    EngineSpec,
    LevelTableError,
    choose_move,
    level,
    level_table,
    levels,
    parse_table,
)
from bots.noise import Noise, choose_noisily, points
from bots.perfect import solver_for
from bots.result import WIN
from games import GAMES, Position, get_game

ALL_GAMES = sorted(GAMES)
LATE_PLY = 30
"""Stones on a Connect Four board late enough for its solver to settle the position within a move's time."""


def test_the_table_covers_exactly_the_registered_games() -> None:
    assert set(level_table()) == set(GAMES)


@pytest.mark.parametrize("name", ALL_GAMES)
def test_every_game_has_eight_well_formed_levels(name: str) -> None:
    table = levels(name)
    assert [entry.number for entry in table] == list(range(1, LEVEL_COUNT + 1))
    for entry in table:
        assert entry.game == name
        assert entry.name.strip() and entry.description.strip()
        assert entry.style in ("alphabeta", "expectimax", "engine")
        assert (entry.style == "engine") == (entry.engine is not None)
        assert entry.solver or entry.depth or entry.time_ms
        assert level(name, entry.number) is entry
    evaluator_for(name)  # every level but a solver's needs the game's evaluation
    if any(entry.solver for entry in table):
        solver_for(name)


def test_connect_four_top_level_is_the_exact_solver() -> None:
    top = level("connect4", LEVEL_COUNT)
    assert top.solver and top.noise is None


def test_the_solver_level_searches_where_solving_would_take_too_long() -> None:
    top = level("connect4", LEVEL_COUNT)
    start = get_game("connect4").start()
    move, result = choose_move(start, top, random.Random(0), time_budget_ms=200)
    assert (move, result.source, result.depth, result.nodes) == (3, "book", None, None)  # looked up
    early = get_game("connect4").replay(list("1111"))  # off the book: the first player left the centre
    move, result = choose_move(early, top, random.Random(0), time_budget_ms=200)
    assert move in early.legal_moves()
    assert result.source == "searched" and result.depth is not None and result.depth < 42
    endgame = get_game("connect4").replay("2252576253462244111563365343671351441")  # Pons' Test_L3_R1
    move, result = choose_move(endgame, top, random.Random(0), time_budget_ms=200)
    assert (result.source, result.depth) == ("solved", None) and result.nodes  # solved to the end


@pytest.mark.parametrize("name", ["tictactoe", "connect4"])
def test_solved_games_weaken_their_lower_levels_with_noise(name: str) -> None:
    assert any(entry.noise is not None for entry in levels(name)[:4])


def test_chess_level_eight_is_stockfish_at_full_strength_with_a_second_a_move() -> None:
    top = level("chess", LEVEL_COUNT)
    assert top.style == "engine" and top.engine is not None and top.engine.name == "stockfish"
    assert dict(top.engine.options) == {"UCI_LimitStrength": False} and top.time_ms == 1000
    assert all(entry.engine is None for entry in levels("chess")[:-1]), "levels 1-7 are ours"


def test_an_engine_level_is_not_searched_by_us() -> None:
    with pytest.raises(ValueError, match="played by the outside engine 'stockfish'"):
        choose_move(get_game("chess").start(), level("chess", LEVEL_COUNT), random.Random(0))


def test_unknown_game_or_level_number_is_named() -> None:
    with pytest.raises(KeyError, match="'go'"):
        levels("go")
    with pytest.raises(ValueError, match="got 9"):
        level("tictactoe", 9)


def _table(**changes: str) -> str:
    """A valid one-game table in TOML, with one level's fields replaced by ``changes``."""
    rows = []
    for number in range(1, LEVEL_COUNT + 1):
        fields = {
            "level": str(number),
            "name": f'"Level {number}"',
            "description": '"Plays."',
            "style": '"alphabeta"',
            "depth": str(number),
        }
        if number == 3:
            fields.update(changes)
        rows.append("[[tictactoe.levels]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items() if v))
    return "[tictactoe]\neval_scale = 10\n\n" + "\n".join(rows)


def test_a_well_formed_table_parses() -> None:
    parsed = parse_table(_table(noise="{ temperature = 0.5 }"))
    assert parsed["tictactoe"][2].noise == Noise(temperature=0.5)
    assert parsed["tictactoe"][2].eval_scale == 10


def test_an_engine_level_names_its_engine_and_uci_options() -> None:
    uci = '{ UCI_LimitStrength = true, UCI_Elo = 1350, "Skill Level" = "5" }'
    row = parse_table(_table(style='"engine"', engine='"stockfish"', depth="", time_ms="100", uci=uci))
    engine = row["tictactoe"][2].engine
    assert engine == EngineSpec(
        "stockfish", (("UCI_LimitStrength", True), ("UCI_Elo", 1350), ("Skill Level", "5"))
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"style": '"random"'}, r"level 3, field 'style': expected one of alphabeta, expectimax"),
        ({"depth": "0"}, r"level 3, field 'depth': expected an integer >= 1, got 0"),
        ({"depth": "", "time_ms": ""}, r"level 3, field 'depth': a search level needs a depth"),
        ({"level": "4"}, r"levels must be listed 1 to 8 in order, got 4"),
        ({"name": '""'}, r"field 'name': expected a non-empty string"),
        ({"colour": '"red"'}, r"level 3: unknown field\(s\): colour"),
        (
            {"noise": "{ rate = 1.5, margin = 1 }"},
            r"field 'rate': expected a number from 0.0 to 1.0, got 1.5",
        ),
        ({"noise": "{ temperature = 1, rate = 0.5 }"}, r"noise: unknown field\(s\): rate"),
        ({"style": '"expectimax"', "noise": "{ temperature = 1 }"}, r"field 'noise': expectimax levels"),
        ({"opponent": '{ model = "uniform" }'}, r"field 'opponent': only expectimax levels"),
        ({"style": '"expectimax"', "opponent": '{ model = "genius" }'}, r"field 'model': expected one of"),
        ({"solver": "true", "style": '"expectimax"'}, r"field 'solver': an exact solver plays the best move"),
        ({"solve_empties": "14"}, r"field 'solve_empties': only othello has an exact endgame solver"),
        ({"depth": "true"}, r"field 'depth': expected an integer >= 1, got True"),
        ({"style": '"engine"'}, r"field 'engine': expected the engine's name"),
        ({"style": '"engine"', "engine": '"Stock Fish"'}, r"field 'engine': expected the engine's name"),
        ({"engine": '"stockfish"'}, r"field 'engine': only a level with style = \"engine\""),
        ({"uci": "{ Hash = 16 }"}, r"field 'uci': only a level with style = \"engine\""),
        (
            {"style": '"engine"', "engine": '"stockfish"', "uci": "{ Hash = 1.5 }"},
            r"field 'uci': option 'Hash': expected true/false, a number or text, got 1.5",
        ),
        (
            {"style": '"engine"', "engine": '"stockfish"', "noise": "{ temperature = 1 }"},
            r"field 'style': an engine level plays the engine's move",
        ),
    ],
)
def test_a_malformed_level_is_named_with_its_field(changes: dict[str, str], message: str) -> None:
    with pytest.raises(LevelTableError, match=message) as caught:
        parse_table(_table(**changes), "test.toml")
    assert str(caught.value).startswith("test.toml, game 'tictactoe'")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"solve_empties": "0"}, r"field 'solve_empties': expected an integer >= 1, got 0"),
        ({"solve_empties": "21"}, r"'solve_empties': at most 20 \(more takes too long a move\), got 21"),
        ({"solve_empties": "14", "noise": "{ temperature = 1 }"}, r"an exact endgame plays the best move"),
        ({"solve_empties": "14", "style": '"expectimax"'}, r"field 'solve_empties': an exact endgame plays"),
    ],
)
def test_an_exact_endgame_is_for_a_best_move_level_in_reach(changes: dict[str, str], message: str) -> None:
    def othello_table(**fields: str) -> str:
        return _table(**fields).replace("tictactoe", "othello")

    with pytest.raises(LevelTableError, match=message) as caught:
        parse_table(othello_table(**changes), "test.toml")
    assert str(caught.value).startswith("test.toml, game 'othello', level 3")
    assert parse_table(othello_table(solve_empties="14"))["othello"][2].solve_empties == 14


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tictactoe\n", "not valid TOML"),
        ("", "no games"),
        ("[tictactoe]\neval_scale = 10\n", r"expected 8 \[\[tictactoe.levels\]\] tables, got 0"),
        ("[tictactoe]\nlevels = []\n", r"field 'eval_scale': expected a number"),
    ],
)
def test_a_malformed_table_is_rejected(text: str, message: str) -> None:
    with pytest.raises(LevelTableError, match=message):
        parse_table(text)


def _test_position(name: str) -> Position:
    """A position in the middle of a game; for Connect Four a late one, that its solver settles quickly."""
    if name == "connect4":
        long_line = next(line for seed in count() if len(line := random_line(name, seed)) > LATE_PLY)
        return long_line[LATE_PLY]
    line = random_line(name, seed=3)
    return line[len(line) // 2]


@pytest.mark.parametrize("name", ALL_GAMES)
@pytest.mark.parametrize("number", range(1, LEVEL_COUNT + 1))
def test_every_level_chooses_a_legal_move(name: str, number: int) -> None:
    """Every level a search of ours plays; an outside engine's is its fleet's (tests/test_engine.py)."""
    position = _test_position(name)
    if level(name, number).engine is not None:
        with pytest.raises(ValueError, match="outside engine"):
            choose_move(position, level(name, number), random.Random(number), time_budget_ms=40)
        return
    move, result = choose_move(position, level(name, number), random.Random(number), time_budget_ms=40)
    assert move in position.legal_moves()
    assert result.move == move and result.pv[0] == move
    if result.source == "searched":
        assert result.depth is not None and result.depth >= 1
    else:  # a book or a solver sees no horizon: there is no depth to report
        assert result.depth is None


def test_a_noisy_level_varies_its_moves_and_a_perfect_one_plays_only_best_moves() -> None:
    position = get_game("tictactoe").start()
    noisy = Counter(
        choose_move(position, level("tictactoe", 1), random.Random(seed))[0] for seed in range(40)
    )
    perfect = [choose_move(position, level("tictactoe", 8), random.Random(seed))[1] for seed in range(5)]
    assert len(noisy) >= 4
    assert {result.score for result in perfect} == {0}  # every first move draws


@pytest.mark.parametrize(
    ("name", "number"), [("othello", 2), ("othello", 3), ("othello", 7), ("checkers", 5), ("chess", 6)]
)
def test_a_level_without_noise_chooses_at_random_among_equal_moves_and_a_seed_replays(
    name: str, number: int
) -> None:
    """The first positions of Othello (four mirror images), checkers and chess have moves that tie: an
    alpha-beta level (its root proves ties) and an expectimax one (Othello's 3) play several of
    them over a few seeds, the same one for the same seed."""
    position = get_game(name).start()
    chosen = [choose_move(position, level(name, number), random.Random(seed)) for seed in range(8)]
    assert len({move for move, _ in chosen}) >= 2
    assert len({result.score for _, result in chosen}) == 1
    for seed in (0, 5):
        assert choose_move(position, level(name, number), random.Random(seed))[0] == chosen[seed][0]


def test_the_perfect_tictactoe_level_takes_a_win() -> None:
    position = get_game("tictactoe").replay(["a1", "a2", "b2", "a3"])
    move, result = choose_move(position, level("tictactoe", 8), random.Random(0))
    assert position.format_move(move) == "c3" and result.score == WIN - 1


def test_without_noise_only_the_best_moves_are_played() -> None:
    scores = {"a": 5, "b": 5, "c": 1}
    seen = {choose_noisily(scores, Noise(), 10, random.Random(seed)) for seed in range(30)}
    assert seen == {"a", "b"}


def test_a_margin_of_one_can_give_up_a_win_for_a_draw_but_never_for_a_loss() -> None:
    scores = {"win": WIN - 3, "draw": 0, "loss": -(WIN - 2)}
    seen = Counter(
        choose_noisily(scores, Noise(rate=1.0, margin=1.0), 10, random.Random(s)) for s in range(200)
    )
    assert set(seen) == {"win", "draw"}


def test_a_higher_temperature_plays_worse_moves_more_often() -> None:
    scores = {"best": 300, "fair": 100, "poor": -200}

    def share_of_best(temperature: float) -> float:
        rng = random.Random(1)
        picks = [choose_noisily(scores, Noise(temperature=temperature), 100, rng) for _ in range(2000)]
        return picks.count("best") / len(picks)

    assert share_of_best(0.05) > share_of_best(0.3) > share_of_best(3.0) > 1 / 3


def test_points_put_wins_and_losses_beyond_every_evaluation() -> None:
    assert points(WIN - 5, 100) == 1.0 and points(-(WIN - 5), 100) == -1.0
    assert points(0, 100) == 0
    assert points(100, 100) == 0.5
    assert -1 < points(-9_999, 100) < points(9_999, 100) < 1
