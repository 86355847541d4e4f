"""Glicko-2 (server/glicko2.py): Glickman's worked example, and bounds that hold for any results."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.glicko2 import (
    MAX_DEVIATION,
    MAX_VOLATILITY,
    MIN_DEVIATION,
    NEW_PLAYER,
    RATING_PERIODS_PER_DAY,
    Glicko,
    Result,
    aged,
    periods_since,
    rate,
)


def test_glickmans_worked_example() -> None:
    player = Glicko(1500, 200, 0.06)
    results = [
        Result(Glicko(1400, 30), 1.0),
        Result(Glicko(1550, 100), 0.0),
        Result(Glicko(1700, 300), 0.0),
    ]
    after = rate(player, results, periods=1.0, tau=0.5)
    assert after.rating == pytest.approx(1464.06, abs=0.01)
    assert after.deviation == pytest.approx(151.52, abs=0.01)
    assert after.volatility == pytest.approx(0.05999, abs=0.00001)


def test_a_win_raises_a_rating_and_narrows_its_deviation() -> None:
    after = rate(NEW_PLAYER, [Result(NEW_PLAYER, 1.0)], periods=0.0)
    assert after.rating > NEW_PLAYER.rating
    assert after.deviation < NEW_PLAYER.deviation
    assert rate(NEW_PLAYER, [Result(NEW_PLAYER, 0.5)], periods=0.0).rating == pytest.approx(1500)


def test_deviation_grows_with_time_away_up_to_the_maximum() -> None:
    settled = Glicko(1800, 60, 0.06)
    a_year = aged(settled, periods_since(365))
    assert a_year.deviation == pytest.approx(110, abs=1)  # Lichess: "from 60 to 110 in one year"
    assert a_year.rating == settled.rating
    assert aged(settled, periods_since(365 * 1000)).deviation == MAX_DEVIATION
    assert aged(settled, periods_since(-5)).deviation == 60
    assert periods_since(1) == RATING_PERIODS_PER_DAY


def test_provisional_while_the_deviation_is_high() -> None:
    assert NEW_PLAYER.provisional
    assert not Glicko(1500, 80, 0.06).provisional


ratings = st.builds(
    Glicko,
    rating=st.floats(min_value=-1000, max_value=5000),
    deviation=st.floats(min_value=MIN_DEVIATION, max_value=MAX_DEVIATION),
    volatility=st.floats(min_value=0.01, max_value=MAX_VOLATILITY),
)
results = st.lists(
    st.builds(Result, opponent=ratings, score=st.sampled_from([0.0, 0.5, 1.0])), min_size=0, max_size=5
)


@settings(max_examples=300, deadline=None)
@given(player=ratings, games=st.lists(results, max_size=20), days=st.floats(min_value=0, max_value=5000))
def test_ratings_stay_finite_and_deviations_within_bounds(
    player: Glicko, games: list[list[Result]], days: float
) -> None:
    for period in games:
        player = rate(player, period, periods=periods_since(days))
        assert math.isfinite(player.rating)
        assert MIN_DEVIATION <= player.deviation <= MAX_DEVIATION
        assert 0 < player.volatility <= MAX_VOLATILITY
