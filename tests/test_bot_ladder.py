"""The shipped ladder (bots/ratings.json): every game rated, monotonic, and on its way to /api/bots."""

from __future__ import annotations

from pathlib import Path

import pytest

from bots.anchors import anchor_elo
from bots.levels import LEVEL_COUNT, levels
from bots.offer import build_offer, encode_offer
from bots.ratings import (
    DEFAULT_ANCHOR_LEVEL,
    DEFAULT_ANCHOR_RATING,
    RATINGS_PATH,
    encounters_of,
    fit_ladder,
    read_ratings,
    shipped_ladder,
)
from bots.tournament import read_records
from games import GAMES
from server.bot_catalog import BotCatalog

SHIPPED = read_ratings(RATINGS_PATH)
RESULTS = Path(__file__).resolve().parents[1] / "docs" / "ratings"
MERGEABLE_AT_THE_TOP = {"tictactoe"}
"""Games where perfect play comes quickly: perfect levels share the top tier (docs/bot-strength.md)."""
NOT_RATED_YET: set[str] = set()
"""Games whose ladder is still to be measured: their levels are offered without a rating; a game leaves
this set when bots/ratings.json rates it."""
ANCHORED = {"chess"}
"""Games whose ladder is on an outside engine's scale: held by anchors at their Elo, not by level 1."""
RATED = sorted(set(GAMES) - NOT_RATED_YET)


def test_every_game_is_rated_at_every_level() -> None:
    assert set(SHIPPED.games) == set(RATED), "a game not rated yet is named in NOT_RATED_YET"
    for game, ladder in SHIPPED.games.items():
        assert [row.level for row in ladder.levels] == list(range(1, LEVEL_COUNT + 1)), game
        assert [(step.lower, step.upper) for step in ladder.steps] == [
            (n, n + 1) for n in range(1, LEVEL_COUNT)
        ], game
        if game in ANCHORED:
            assert ladder.anchor_level is None and ladder.anchors, game
            assert all(
                anchor.rating == anchor_elo(anchor.name) and anchor.games > 0 for anchor in ladder.anchors
            )
        else:
            assert ladder.anchor_level is not None and not ladder.anchors, game
            anchor = ladder.levels[ladder.anchor_level - 1]
            assert anchor.rating == anchor.ci_low == anchor.ci_high == ladder.anchor_rating, game
        for row in ladder.levels:
            assert row.ci_low <= row.rating <= row.ci_high and row.games > 0, (game, row)


@pytest.mark.parametrize("game", RATED)
def test_the_shipped_ladder_is_monotonic(game: str) -> None:
    """Each level is rated above the one below it, by more than the interval of that gap.

    The one exception is the ceiling of a game where perfect play comes quickly:
    levels that lost no game in the tournament cannot be told apart by strength,
    so they share the top tier (docs/bot-strength.md), and must still rate within
    each other's intervals.
    """
    ladder = SHIPPED.games[game]
    rows = {row.level: row for row in ladder.levels}
    for step in ladder.steps:
        lower, upper = rows[step.lower], rows[step.upper]
        assert abs(step.gap - (upper.rating - lower.rating)) <= 1  # each is rounded on its own
        if step.ci_low > 0:
            assert upper.rating > lower.rating
            continue
        ceiling = game in MERGEABLE_AT_THE_TOP and lower.losses == 0 and upper.losses == 0
        assert ceiling, (
            f"{game}: L{step.upper} is not measurably stronger than L{step.lower} "
            f"(gap {step.gap}, interval {step.ci_low} to {step.ci_high})"
        )
        assert all(rows[n].losses == 0 for n in range(step.upper, LEVEL_COUNT + 1)), "a tier at the top only"
        assert upper.ci_high >= lower.rating and lower.ci_high >= upper.rating


@pytest.mark.parametrize("game", RATED)
def test_the_shipped_ratings_are_what_the_shipped_games_say(game: str) -> None:
    """bots/ratings.json is the fit of the results files in docs/ratings, not numbers typed in."""
    files = sorted(RESULTS.glob(f"{game}-*.jsonl.gz"))
    assert files, f"no results files for {game} in {RESULTS}"
    records = [record for path in files for record in read_records(path)]
    assert {record.game for record in records} == {game}
    assert all(sum(record.short_searches) == 0 for record in records), "a time budget shaped some game"
    shipped = SHIPPED.games[game]
    ladder = fit_ladder(
        encounters_of(records),
        anchor_level=shipped.anchor_level or DEFAULT_ANCHOR_LEVEL,
        anchor_rating=DEFAULT_ANCHOR_RATING if shipped.anchor_rating is None else shipped.anchor_rating,
        anchors={anchor.name: anchor.rating for anchor in shipped.anchors} or None,  # these hold, if any
        prior_draws=shipped.prior_draws,
        confidence=shipped.confidence,
    )
    refitted = shipped_ladder(ladder, source=shipped.source)
    assert refitted.levels == shipped.levels and refitted.anchors == shipped.anchors
    assert refitted.steps == shipped.steps
    assert (refitted.games, refitted.first_move_advantage) == (shipped.games, shipped.first_move_advantage)


def test_the_fleets_offer_carries_the_shipped_ratings_to_api_bots() -> None:
    offer = build_offer("fleet-test", {game: tuple(range(1, LEVEL_COUNT + 1)) for game in GAMES}, 4, 0)
    catalog = BotCatalog()
    catalog.receive("plyarena/v1/bots/fleet-test", encode_offer(offer))
    listing = catalog.as_json()["games"]
    for game, ladder in SHIPPED.games.items():
        for row, shipped in zip(listing[game], ladder.levels, strict=True):
            assert row["level"] == shipped.level
            assert row["name"] == levels(game)[shipped.level - 1].name
            assert row["rating"] == {
                "elo": shipped.rating,
                "ci_low": shipped.ci_low,
                "ci_high": shipped.ci_high,
                "games": shipped.games,
            }
    for game in NOT_RATED_YET:
        assert [row["rating"] for row in listing[game]] == [None] * LEVEL_COUNT, game


def test_an_offer_without_ratings_still_reads() -> None:
    """A fleet from before ratings, or of an unrated game, announces none: the level shows without one."""
    catalog = BotCatalog()
    payload = b'{"fleet": "old", "games": {"chess": [{"level": 1, "style": "alphabeta", "name": "One"}]}}'
    catalog.receive("plyarena/v1/bots/old", payload)
    assert catalog.as_json()["games"]["chess"][0]["rating"] is None
