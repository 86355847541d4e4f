"""``GET /api/players/{name}``: a player's profile as JSON, the page ``/@/{name}`` of the browser client.

Ratings per game (with whether they are provisional and the history of every rated game), wins, draws
and losses per game, and a page of the game history, filtered by ``game``, ``result`` (``win``,
``draw``, ``loss``) and ``rated`` (``true``, ``false``), newest first, paged by ``before`` as
``/api/matches`` is. ``{name}`` is a name (the player seen most recently under it) or ``id:`` and a
player id. docs/player-ratings.md describes it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

from games import GAMES
from server.query import one_value, page_size
from server.storage import Store
from server.storage.profiles import OUTCOMES, GameFilter, Outcome, PlayedGame
from server.storage.ratings import RatingChange, storage_errors
from server.text import name_key

DEFAULT_PAGE = 20
MAX_PAGE = 100
COUNT_NAMES = {"win": "wins", "draw": "draws", "loss": "losses"}


class ProfileNotFound(LookupError):
    """No player by that name or id."""


async def profile_json(store: Store, segment: str, query: dict[str, list[str]]) -> dict[str, Any]:
    """The profile of the player ``segment`` (a path segment, percent-encoded) names.

    Raises :class:`ValueError` for a bad query and :class:`ProfileNotFound` for an unknown player.
    """
    name = unquote(segment)
    where, limit, before = _filter(query)
    async with storage_errors("profile"):
        player = await store.profiles.player_named(name, name_key(name))
        if player is None:
            shown = name if len(name) <= 80 else name[:80] + "..."
            raise ProfileNotFound(f"no player {shown!r}")
        ratings = await store.ratings.ratings_of(player.id, datetime.now(UTC))
        history = await store.ratings.history_of(player.id)
        counts = await store.profiles.counts_of(player.id)
        games = await store.profiles.games_of(player.id, where, limit=limit + 1, before=before)
    return {
        "player": {
            "id": player.id,
            "name": player.name,
            "bot": player.bot,
            "created_at": player.created_at.isoformat(),
            "last_seen_at": player.last_seen_at.isoformat(),
        },
        "ratings": {
            rating.game: {
                "rating": round(rating.rating),
                "deviation": round(rating.deviation),
                "volatility": round(rating.volatility, 5),
                "provisional": rating.provisional,
                "games": rating.games,
                "history": [_point(change) for change in history if change.game == rating.game],
            }
            for rating in ratings
        },
        "counts": {game: _counts(by) for game, by in counts.items()},
        "games": [_game(game) for game in games[:limit]],
        "next_before": games[limit - 1].match_id if len(games) > limit else None,
    }


def _filter(query: dict[str, list[str]]) -> tuple[GameFilter, int, str | None]:
    game, result, rated = one_value(query, "game"), one_value(query, "result"), one_value(query, "rated")
    if game is not None and game not in GAMES:
        raise ValueError(f"unknown game {game!r}; known games: {', '.join(sorted(GAMES))}")
    if result is not None and result not in OUTCOMES:
        raise ValueError(f"unknown result {result!r}; use one of {', '.join(OUTCOMES)}")
    if rated is not None and rated not in ("true", "false"):
        raise ValueError(f"rated must be true or false, not {rated!r}")
    limit = page_size(one_value(query, "limit"), DEFAULT_PAGE, MAX_PAGE)
    outcome: Outcome | None = next((known for known in OUTCOMES if known == result), None)
    rated_only = None if rated is None else rated == "true"
    return GameFilter(game, outcome, rated_only), limit, one_value(query, "before")


def _counts(by_outcome: dict[Outcome, int]) -> dict[str, int]:
    return {COUNT_NAMES[outcome]: count for outcome, count in by_outcome.items()}


def _point(change: RatingChange) -> dict[str, Any]:
    return {
        "match_id": change.match_id or None,  # (a private match's id is not for everyone)
        "at": change.at.isoformat(),
        "rating": round(change.rating_after),
        "deviation": round(change.deviation_after),
    }


def _game(game: PlayedGame) -> dict[str, Any]:
    opponent = None
    if game.opponent_id is not None:
        opponent = {"id": game.opponent_id, "name": game.opponent_name, "bot": game.opponent_bot}
    change = None
    if game.rating_before is not None and game.rating_after is not None:
        change = {"before": round(game.rating_before), "after": round(game.rating_after)}
    return {
        "match_id": game.match_id,
        "game": game.game,
        "status": game.status,
        "rated": game.rated,
        "seat": game.seat,
        "result": game.outcome,
        "reason": game.reason,
        "opponent": opponent,
        "created_at": game.created_at.isoformat(),
        "finished_at": None if game.finished_at is None else game.finished_at.isoformat(),
        "rating": change,
    }
