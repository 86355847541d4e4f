"""Rated matches: the ``rated`` option at creation, and people's ratings updated after every rated game.

A match is rated or casual from its creation (``match.create``'s ``rated``). Against a bot, a person is
rated against the rating the bot's fleet announces for its level (``OfferedBot.rating.elo`` in
:mod:`server.bot_catalog`): a rated match is refused at creation when no fleet announces one, and the
rating announced then is kept in the match's options, so the result counts even if the fleet is gone by
the end. The bot's own rating never changes.

The update runs after the result is committed, never on the move path: :meth:`Rater.notice` rates a
match as it ends, and :meth:`Rater.run` sweeps for finished rated matches not rated yet (after a crash,
an outage of the database, or ended on another instance). :meth:`RatingBook.rate
<server.storage.ratings.RatingBook.rate>` makes each match count once, whoever rates it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime, timedelta

import msgspec

from server.bot_catalog import BotCatalog
from server.errors import ErrorCode, ProtocolError
from server.glicko2 import MIN_DEVIATION, Glicko
from server.match import Match
from server.protocol import BotRequest, CreateMatch, MatchOptions
from server.storage import MatchRecord, StorageError, Store
from server.storage.ratings import Side

log = logging.getLogger(__name__)

SWEEP_S = 30.0
"""How often every instance looks for finished rated matches whose ratings are not stored yet."""
SWEEP_WINDOW = timedelta(days=7)
"""How far back a sweep looks: a database down longer than this leaves older results unrated."""
BOT_DEVIATION = MIN_DEVIATION
"""A bot's strength does not drift as a person's does: its ladder rating counts as settled as can be."""


def announced_rating(catalog: BotCatalog, game: str, bot: BotRequest) -> int | None:
    """The rating a fleet announces for ``bot``'s level (and style, if it names one) in ``game``."""
    for offer in sorted(catalog.offers.values(), key=lambda offer: offer.fleet):
        for offered in offer.games.get(game, ()):
            if offered.level != bot.level or (bot.style is not None and offered.style != bot.style):
                continue
            if offered.rating is not None:
                return offered.rating.elo
    return None


def with_rated(options: MatchOptions, request: CreateMatch, catalog: BotCatalog) -> MatchOptions:
    """``options`` of a new match with ``request``'s ``rated`` choice, and for a bot its announced rating.

    Raises :class:`ProtocolError` (``bad_field``) for a rated match against a bot no fleet rates.
    """
    if not request.rated:
        return options
    if request.bot is None:
        return msgspec.structs.replace(options, rated=True)
    elo = announced_rating(catalog, request.game, request.bot)
    if elo is None:
        raise ProtocolError(
            ErrorCode.BAD_FIELD,
            f"no bot fleet announces a rating for {request.game} level {request.bot.level}, so a game "
            "against it cannot be rated: ask for another level or create the match with rated false",
        )
    return msgspec.structs.replace(options, rated=True, bot_rating=elo)


class Rater:
    """Applies each finished rated match to its people's ratings, once, soon after it ends."""

    def __init__(self, store: Store, catalog: BotCatalog, *, sweep_s: float = SWEEP_S) -> None:
        self.store = store
        self.catalog = catalog
        self.sweep_s = sweep_s
        self._lock = asyncio.Lock()
        """One rating at a time per instance: they are rare, and each locks rows of the database anyway."""
        self._tasks: set[asyncio.Task[bool]] = set()
        self._unratable: set[str] = set()
        """Matches this instance cannot rate (no person seated, a bot without a rating): tried once."""

    def notice(self, match: Match) -> None:
        """``match`` has just ended (its result committed): rate it now if it is a rated one."""
        if match.options.rated and match.status == "finished":
            task = asyncio.create_task(self._rate_logged(match.id), name=f"plyarena-rate-{match.id}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def run(self) -> None:
        """Sweep for finished rated matches not yet rated, now and every ``sweep_s``, until cancelled."""
        while True:
            try:
                await self.sweep()
            except StorageError as error:
                log.warning("could not look for unrated matches: %s", error)
            await asyncio.sleep(self.sweep_s)

    async def sweep(self) -> int:
        """Rate every finished rated match whose ratings are not stored; how many this rated."""
        rated = 0
        since = datetime.now(UTC) - SWEEP_WINDOW
        for match_id in await self.store.ratings.unrated_matches(since):
            if match_id not in self._unratable and await self._rate_logged(match_id):
                rated += 1
        return rated

    async def close(self) -> None:
        """Stop the ratings under way (the sweep of the next start does them)."""
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def rate(self, match_id: str) -> bool:
        """Apply match ``match_id``'s result to its people's ratings; ``False`` if it was rated already
        or cannot be."""
        async with self._lock:
            record = await self.store.get_match(match_id)
            if record is None or not record.options.get("rated") or record.status != "finished":
                return False
            sides = self._sides(record)
            if sides is None or record.finished_at is None:
                self._unratable.add(match_id)
                return False
            return await self.store.ratings.rate(match_id, record.game, sides, record.finished_at)

    async def _rate_logged(self, match_id: str) -> bool:
        try:
            return await self.rate(match_id)
        except StorageError as error:
            log.warning("could not rate match %s yet (the next sweep tries again): %s", match_id, error)
        except Exception:
            log.exception("rating match %s failed", match_id)
        return False

    def _sides(self, record: MatchRecord) -> list[Side] | None:
        """The two sides of ``record`` as the update sees them; ``None`` when there is nothing to rate: no
        person seated, one person in both seats, or a bot whose rating is not known."""
        if len(record.seats) != 2:
            return None
        sides = []
        for seat in sorted(record.seats, key=lambda seat: seat.seat):
            score = 0.5 if record.winner is None else float(record.winner == seat.seat)
            if not seat.is_bot:
                sides.append(Side(score, player_id=seat.player_id))
                continue
            elo = self._bot_elo(record, seat.player_name)
            if elo is None:
                log.warning("match %s: bot %r has no known rating; unrated", record.id, seat.player_name)
                return None
            sides.append(Side(score, rating=Glicko(float(elo), BOT_DEVIATION)))
        people = [side.player_id for side in sides if side.player_id is not None]
        return sides if people and len(set(people)) == len(people) else None

    def _bot_elo(self, record: MatchRecord, name: str) -> int | None:
        """The rating announced for the bot that played (its fleet's offer names its player), else the one
        announced for the level asked when the match was made."""
        for offer in self.catalog.offers.values():
            for offered in offer.games.get(record.game, ()):
                if offered.player == name and offered.rating is not None:
                    return offered.rating.elo
        stored = record.options.get("bot_rating")
        return stored if isinstance(stored, int) else None
