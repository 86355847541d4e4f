"""The Elo fit: it recovers known ratings from simulated games, its intervals shrink, the anchor holds."""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path

import pytest

from bots.anchors import Player
from bots.ratings import (
    Encounter,
    ShippedRatings,
    fit_ladder,
    read_ratings,
    shipped_ladder,
    shipped_rating,
    write_ratings,
)

TRUE_RATINGS = {1: 1000.0, 2: 1180.0, 3: 1300.0, 4: 1520.0, 5: 1610.0}
FIRST_MOVE_ADVANTAGE = 70.0


def simulate(
    ratings: Mapping[Player, float], games_per_pair: int, seed: int, advantage: float = FIRST_MOVE_ADVANTAGE
) -> list[Encounter]:
    """Games whose expected score is exactly Elo's, with draws: each pair plays both colours equally.

    A draw takes half of the smaller of the win and loss chances from each, which
    leaves the expected score where Elo puts it.
    """
    rng = random.Random(seed)
    games = []
    levels = list(ratings)
    for first in levels:
        for second in levels:
            if first == second:
                continue
            expected = 1 / (1 + 10 ** ((ratings[second] - ratings[first] - advantage) / 400))
            draw = 0.6 * min(expected, 1 - expected)
            for _ in range(games_per_pair // 2):
                roll = rng.random()
                points = 1.0 if roll < expected - draw / 2 else 0.5 if roll < expected + draw / 2 else 0.0
                games.append(Encounter(first, second, points))
    return games


def test_the_fit_recovers_known_ratings_within_their_intervals() -> None:
    ladder = fit_ladder(simulate(TRUE_RATINGS, 80, seed=1), prior_draws=0)
    for number, true in TRUE_RATINGS.items():
        row = ladder.rating(number)
        assert row.ci_low <= true <= row.ci_high, (number, true, row)
        assert abs(row.rating - true) < 60
    low, high = ladder.first_move_ci
    assert low <= FIRST_MOVE_ADVANTAGE <= high


def test_most_intervals_cover_the_truth_over_many_runs() -> None:
    """95% intervals should miss about one time in twenty; a rate near half would mean they are too narrow."""
    misses = trials = 0
    for seed in range(30):
        ladder = fit_ladder(simulate(TRUE_RATINGS, 20, seed=seed), prior_draws=0)
        for number, true in TRUE_RATINGS.items():
            if number != 1:
                row = ladder.rating(number)
                trials += 1
                misses += not row.ci_low <= true <= row.ci_high
    assert misses / trials < 0.12


def test_intervals_shrink_with_more_games() -> None:
    few = fit_ladder(simulate(TRUE_RATINGS, 20, seed=2))
    many = fit_ladder(simulate(TRUE_RATINGS, 320, seed=2))
    for number in TRUE_RATINGS:
        if number == 1:
            continue
        few_width = few.rating(number).ci_high - few.rating(number).ci_low
        many_width = many.rating(number).ci_high - many.rating(number).ci_low
        # Sixteen times the games: about a quarter of the width (1/sqrt(16)).
        assert 0.15 < many_width / few_width < 0.35


def test_the_anchor_holds_and_only_shifts_the_scale() -> None:
    games = simulate(TRUE_RATINGS, 40, seed=3)
    at_1000 = fit_ladder(games)
    at_1500 = fit_ladder(games, anchor_rating=1500)
    anchored = at_1000.rating(1)
    assert anchored.rating == anchored.ci_low == anchored.ci_high == 1000
    for number in TRUE_RATINGS:
        assert at_1500.rating(number).rating == pytest.approx(at_1000.rating(number).rating + 500)
    by_level_3 = fit_ladder(games, anchor_level=3, anchor_rating=1300)
    assert by_level_3.rating(3).rating == 1300
    gap = at_1000.rating(5).rating - at_1000.rating(2).rating
    assert by_level_3.rating(5).rating - by_level_3.rating(2).rating == pytest.approx(gap)


def test_steps_measure_each_level_over_the_one_below() -> None:
    ladder = fit_ladder(simulate(TRUE_RATINGS, 200, seed=4))
    steps = ladder.steps()
    assert [(s.lower, s.upper) for s in steps] == [(1, 2), (2, 3), (3, 4), (4, 5)]
    for step in steps:
        true_gap = TRUE_RATINGS[step.upper] - TRUE_RATINGS[step.lower]
        assert step.ci_low <= true_gap <= step.ci_high
        assert step.distinct
    # Errors of neighbours are correlated: the gap's interval is narrower than the two intervals added.
    upper, lower = ladder.rating(5), ladder.rating(4)
    added = (upper.ci_high - upper.ci_low) + (lower.ci_high - lower.ci_low)
    assert steps[-1].ci_high - steps[-1].ci_low < added


def test_equal_levels_are_not_called_distinct() -> None:
    ladder = fit_ladder(simulate({1: 1000.0, 2: 1000.0, 3: 1400.0}, 40, seed=5))
    assert not ladder.step(1, 2).distinct
    assert ladder.step(2, 3).distinct


def test_a_clean_sweep_needs_the_prior() -> None:
    sweep = [Encounter(2, 1, 1.0), Encounter(1, 2, 0.0)] * 10
    with pytest.raises(ValueError, match="unbounded"):
        fit_ladder(sweep, prior_draws=0)
    ladder = fit_ladder(sweep, first_move=False)
    assert 1000 < ladder.rating(2).rating < 2000


def test_games_and_losses_are_counted_per_level() -> None:
    games = [Encounter(1, 2, 0.0), Encounter(2, 1, 0.5), Encounter(1, 2, 1.0), Encounter(3, 2, 1.0)]
    ladder = fit_ladder(games)
    counted = [(row.games, row.losses, row.points) for row in ladder.ratings]
    assert counted == [(3, 1, 1.5), (4, 2, 1.5), (1, 0, 1.0)]


def test_bad_input_is_named() -> None:
    with pytest.raises(ValueError, match="no games"):
        fit_ladder([])
    with pytest.raises(ValueError, match="level 3 cannot play itself"):
        fit_ladder([Encounter(3, 3, 0.5)])
    with pytest.raises(ValueError, match=r"scores 0, 0\.5 or 1, got 0\.7"):
        fit_ladder([Encounter(1, 2, 0.7)])
    with pytest.raises(ValueError, match="the anchor, level 4, played no game"):
        fit_ladder([Encounter(1, 2, 0.5)], anchor_level=4)
    with pytest.raises(ValueError, match=r"levels \[3, 4\] played no game linking them"):
        fit_ladder([Encounter(1, 2, 1.0), Encounter(2, 1, 0.5), Encounter(3, 4, 0.5)], prior_draws=0)


def test_the_shipped_table_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "ratings.json"
    assert read_ratings(path) == ShippedRatings()  # no file yet: an empty table
    ladder = fit_ladder(simulate(TRUE_RATINGS, 40, seed=6))
    write_ratings(ShippedRatings({"connect4": shipped_ladder(ladder, source="test")}), path)
    table = read_ratings(path)
    shipped = table.games["connect4"]
    assert [row.level for row in shipped.levels] == sorted(TRUE_RATINGS)
    assert shipped.levels[1].rating == round(ladder.rating(2).rating)
    assert [(step.lower, step.upper) for step in shipped.steps] == [(1, 2), (2, 3), (3, 4), (4, 5)]
    assert shipped_rating("connect4", 3, table) == shipped.levels[2]
    assert shipped_rating("othello", 3, table) is None
    path.write_text('{"games": {"connect4": {"levels": 3}}}', encoding="utf-8")
    with pytest.raises(ValueError, match="not a ratings table"):
        read_ratings(path)


def test_the_ladder_plot_is_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from bots.ratings_plot import plot_ladder

    path = tmp_path / "plots" / "ladder.png"
    ladder = fit_ladder(simulate({1: 1000.0, 2: 1000.0, 3: 1400.0}, 20, seed=7))
    plot_ladder(ladder, path, title="Test", names={1: "One", 2: "Two", 3: "Three"})
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


ANCHORED = {"stockfish@1350": 1350.0, "stockfish@1700": 1700.0}
"""Anchors held at their Elo, and levels to be placed among them."""
LEVELS_AMONG_ANCHORS = {1: 1150.0, 2: 1400.0, 3: 1600.0, 4: 1850.0}


def test_anchors_put_the_levels_on_their_scale() -> None:
    truth: dict[Player, float] = {**LEVELS_AMONG_ANCHORS, **ANCHORED}
    games = [
        game
        for game in simulate(truth, 60, seed=11)
        if not (isinstance(game.first, str) and isinstance(game.second, str))  # anchors never meet
    ]
    ladder = fit_ladder(games, anchors=ANCHORED, prior_draws=0)
    assert ladder.anchor_level is None and ladder.anchor_rating is None
    assert ladder.scale == "anchors stockfish@1350, stockfish@1700"
    for name, rating in ANCHORED.items():
        row = ladder.rating(name)
        assert row.rating == row.ci_low == row.ci_high == rating
    for number, true in LEVELS_AMONG_ANCHORS.items():
        row = ladder.rating(number)
        assert row.ci_low <= true <= row.ci_high and abs(row.rating - true) < 80, (number, true, row)
    assert [str(row.level) for row in ladder.anchors] == list(ANCHORED)
    assert [(step.lower, step.upper) for step in ladder.steps()] == [(1, 2), (2, 3), (3, 4)]


def test_anchors_unknown_to_the_games_leave_the_scale_to_those_that_played() -> None:
    games = [Encounter(1, "stockfish@1350", 0.5), Encounter("stockfish@1350", 1, 0.5)]
    ladder = fit_ladder(games, anchors={"stockfish@1350": 1350.0, "stockfish@2000": 2000.0})
    assert list(ladder.fixed) == ["stockfish@1350"]
    assert abs(ladder.rating(1).rating - 1350) < 1
    with pytest.raises(ValueError, match=r"none of the anchors \(stockfish@2000\) played"):
        fit_ladder(games, anchors={"stockfish@2000": 2000.0})
    with pytest.raises(
        ValueError, match=r"levels \[2, 3\] played no game linking them to the anchor \(stockfish@1350\)"
    ):
        fit_ladder([*games, Encounter(2, 3, 1.0)], anchors={"stockfish@1350": 1350.0}, prior_draws=0)


def test_an_anchored_ladder_ships_its_anchors_apart_from_its_levels(tmp_path: Path) -> None:
    truth: dict[Player, float] = {**LEVELS_AMONG_ANCHORS, **ANCHORED}
    ladder = fit_ladder(simulate(truth, 20, seed=12), anchors=ANCHORED)
    path = tmp_path / "ratings.json"
    write_ratings(ShippedRatings({"chess": shipped_ladder(ladder)}), path)
    shipped = read_ratings(path).games["chess"]
    assert shipped.anchor_level is None and shipped.anchor_rating is None
    assert [row.level for row in shipped.levels] == [1, 2, 3, 4]
    assert [(anchor.name, anchor.rating) for anchor in shipped.anchors] == [
        ("stockfish@1350", 1350),
        ("stockfish@1700", 1700),
    ]
    assert shipped.anchors[0].games == ladder.rating("stockfish@1350").games


def test_an_anchored_ladder_plots_its_anchors(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from bots.ratings_plot import plot_ladder

    truth: dict[Player, float] = {1: 1300.0, 2: 1500.0, "stockfish@1350": 1350.0}
    ladder = fit_ladder(simulate(truth, 10, seed=13), anchors={"stockfish@1350": 1350.0})
    path = tmp_path / "anchored.png"
    plot_ladder(ladder, path, title="Anchored")
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
