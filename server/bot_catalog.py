"""The bots that fleets offer, per game and level, for ``GET /api/bots``.

The server never imports ``bots/`` and never searches: bots are other people's
clients. A bot fleet announces what it offers as a retained message on
``plyarena/v1/bots/{fleet_id}`` (payload in docs/bots.md): on the MQTT broker
the instances share, or on this server's in-process bus when one process runs
both (``plyarena run``). This module follows those topics and merges the
offers, so browsers can offer exactly the bots that some running fleet will
seat. An empty payload withdraws a fleet's offer (a clean stop, or its MQTT
will when it dies).
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from server.bus import EventBus

log = logging.getLogger(__name__)

OFFERS_TOPICS = "plyarena/v1/bots/+"


class BotRating(msgspec.Struct, frozen=True):
    """A level's measured Elo and its 95% interval, as the fleet announces it."""

    elo: int
    ci_low: int
    ci_high: int
    games: int = 0


class OfferedBot(msgspec.Struct, frozen=True):
    level: int
    style: str
    name: str
    description: str = ""
    player: str = ""
    rating: BotRating | None = None


class FleetOffer(msgspec.Struct, frozen=True):
    fleet: str
    games: dict[str, list[OfferedBot]]
    max_games: int = 0
    playing: int = 0
    full: bool = False


_offer_decoder = msgspec.json.Decoder(FleetOffer)


class BotCatalog:
    """Every fleet's current offer, by fleet id."""

    def __init__(self) -> None:
        self.offers: dict[str, FleetOffer] = {}

    def receive(self, topic: str, payload: bytes) -> None:
        """One message on an offer topic: an offer, or (empty) its withdrawal."""
        fleet = topic.rsplit("/", 1)[-1]
        if not payload:
            self.offers.pop(fleet, None)
            return
        try:
            offer = _offer_decoder.decode(payload)
        except msgspec.DecodeError as error:
            log.warning("ignoring the bot offer on %s: %s", topic, error)
            return
        self.offers[fleet] = offer

    async def follow(self, bus: EventBus) -> None:
        """Keep up with the offer topics on ``bus`` until cancelled."""
        async with bus.subscribe(OFFERS_TOPICS) as messages:
            async for topic, payload in messages:
                self.receive(topic, payload)

    def as_json(self) -> dict[str, Any]:
        """The body of ``/api/bots``: per game, each offered level once, and whether a fleet has room now."""
        levels: dict[str, dict[tuple[int, str], dict[str, Any]]] = {}
        for offer in self.offers.values():
            for game, bots in offer.games.items():
                for bot in bots:
                    row = levels.setdefault(game, {}).setdefault(
                        (bot.level, bot.style),
                        {
                            "level": bot.level,
                            "style": bot.style,
                            "name": bot.name,
                            "description": bot.description,
                            "player": bot.player,
                            "rating": None if bot.rating is None else msgspec.structs.asdict(bot.rating),
                            "available": False,
                        },
                    )
                    row["available"] = row["available"] or not offer.full
        return {
            "games": {game: [rows[key] for key in sorted(rows)] for game, rows in sorted(levels.items())},
            "fleets": [
                {"fleet": o.fleet, "max_games": o.max_games, "playing": o.playing, "full": o.full}
                for o in sorted(self.offers.values(), key=lambda offer: offer.fleet)
            ],
        }
