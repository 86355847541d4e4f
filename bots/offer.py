"""What a fleet offers: which bots, at which levels, and whether it has room, as a retained message.

Which levels a fleet offers is its ``--levels`` (:func:`parse_levels`), less those whose outside engine
it does not run.

A fleet publishes its offer, retained, on ``plyarena/v1/bots/{fleet_id}``: on
the MQTT broker when it has one, or on the server's own bus when the
composition root starts both in one process (``make run``). Servers read these
topics to answer ``GET /api/bots`` without knowing anything of ``bots/``. The
payload is documented in docs/bots.md; an empty payload withdraws the offer
(published on a clean stop, and by the MQTT will when a fleet dies).
"""

from __future__ import annotations

from collections.abc import Collection

import msgspec

from bots.client import BotSpec
from bots.levels import LEVEL_COUNT, level_table
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


def parse_levels(text: str | None, engines: Collection[str] | None = ()) -> dict[str, tuple[int, ...]]:
    """The levels a fleet offers, from ``--levels``.

    ``None`` or ``""``: every level of every game. Otherwise comma-separated items,
    each ``GAME:SPEC`` or a bare ``SPEC`` for every game, a ``SPEC`` being a level
    (``3``) or a range (``1-5``): ``connect4:1-8,othello:3`` or ``1-4``.

    A level that an outside engine plays (chess's level 8 is Stockfish) is offered only by a fleet that
    runs that engine, named in ``engines`` (``None``: take any engine as run): without it, every game's
    levels leave it out, and an item of its own game that asks for it is refused.
    """
    table = level_table()

    def playable(game: str, number: int) -> bool:
        engine = table[game][number - 1].engine
        return engine is None or engines is None or engine.name in engines

    if not text:
        every = {
            game: tuple(n for n in range(1, len(rows) + 1) if playable(game, n))
            for game, rows in table.items()
        }
        return {game: levels for game, levels in sorted(every.items()) if levels}
    offer: dict[str, set[int]] = {}
    for item in (part.strip() for part in text.split(",")):
        game, _, spec = item.rpartition(":")
        games = [game] if game else sorted(table)
        if game and game not in table:
            known = ", ".join(sorted(table))
            raise ValueError(f"--levels item {item!r}: unknown game {game!r}; games: {known}")
        low, _, high = spec.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            raise ValueError(f"--levels item {item!r}: expected a level or a range like 1-5") from None
        if not 1 <= first <= last <= LEVEL_COUNT:
            raise ValueError(f"--levels item {item!r}: levels run from 1 to {LEVEL_COUNT}")
        for name in games:
            unplayable = [n for n in range(first, last + 1) if not playable(name, n)]
            if game and unplayable:
                engine = table[name][unplayable[0] - 1].engine
                assert engine is not None
                raise ValueError(
                    f"--levels item {item!r}: level {unplayable[0]} of {name} is played by the outside "
                    f"engine {engine.name!r}: run it with --engine {engine.name}=COMMAND"
                )
            offer.setdefault(name, set()).update(n for n in range(first, last + 1) if n not in unplayable)
    return {game: tuple(sorted(levels)) for game, levels in sorted(offer.items()) if levels}


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
