"""What a fleet offers: which bots, at which levels, and whether it has room, as a retained message.

A fleet publishes its offer, retained, on ``plyarena/v1/bots/{fleet_id}``: on
the MQTT broker when it has one, or on the server's own bus when the
composition root starts both in one process (``make run``). Servers read these
topics to answer ``GET /api/bots`` without knowing anything of ``bots/``. The
payload is documented in docs/bots.md; an empty payload withdraws the offer
(published on a clean stop, and by the MQTT will when a fleet dies).
"""

from __future__ import annotations

import msgspec

from bots.client import BotSpec
from bots.levels import level as level_row
from bots.ratings import shipped_rating

OFFER_TOPIC_ROOT = "plyarena/v1/bots"


def offer_topic(fleet_id: str) -> str:
    return f"{OFFER_TOPIC_ROOT}/{fleet_id}"


class OfferedRating(msgspec.Struct, frozen=True):
    """The level's measured strength (bots/ratings.json): Elo and its 95% interval; docs/bot-strength.md."""

    elo: int
    ci_low: int
    ci_high: int
    games: int


class OfferedBot(msgspec.Struct, frozen=True):
    """One level of one game that the fleet will seat a bot for."""

    level: int
    style: str
    name: str
    """The level's name for people (``Casual``)."""
    description: str
    player: str
    """The name the bot plays under (``alphabeta-c4-L3``)."""
    rating: OfferedRating | None = None
    """``None`` for a game whose levels have not been rated."""


class FleetOffer(msgspec.Struct, frozen=True):
    fleet: str
    games: dict[str, list[OfferedBot]]
    max_games: int
    playing: int
    full: bool
    """True while every place is taken: requests for a bot wait until a game ends."""


def build_offer(
    fleet_id: str, levels: dict[str, tuple[int, ...]], max_games: int, playing: int
) -> FleetOffer:
    """The offer of a fleet that seats bots for ``levels`` (game -> level numbers)."""
    games = {}
    for game, numbers in sorted(levels.items()):
        bots = []
        for number in numbers:
            row = level_row(game, number)
            player = BotSpec.of(game, number).name
            rating = None
            if (rated := shipped_rating(game, number)) is not None:
                rating = OfferedRating(rated.rating, rated.ci_low, rated.ci_high, rated.games)
            bots.append(OfferedBot(number, row.style, row.name, row.description, player, rating))
        games[game] = bots
    return FleetOffer(fleet_id, games, max_games, playing, playing >= max_games)


def encode_offer(offer: FleetOffer) -> bytes:
    return msgspec.json.encode(offer)
