"""Quick pairing's I/O: the ``pool.*`` requests, the pool's tick, and the matches of its pairs.

The decisions are :class:`server.pool.Pool`'s; this module feeds it joins, leaves and lost connections,
and every second (:data:`TICK_S`) drops who is gone, pairs, and tells each waiter how the pool looks. A
pair is made by the instance of its longer waiter, which hosts the match: at once when both wait here,
after the other instance confirms its waiter when not (server/pool_exchange.py, which also mirrors the
other instances' waiters into the pool). The match is created the normal way (``MatchHost.create`` and
``join``), both seated and live at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from games import GAMES
from server.bot_catalog import BotCatalog
from server.bus import EventBus
from server.clock import describe
from server.config import ServerConfig
from server.connection import Connection
from server.errors import ErrorCode, ProtocolError
from server.fair_use import BotGameCap
from server.ids import new_match_id
from server.live import LiveMatch, MatchHost, player_info
from server.match import Match, requested_game
from server.pool import Pair, Pool, PoolView, Waiter
from server.pool_exchange import PoolExchange
from server.pool_protocol import (
    AcceptPoolBot,
    BotOffer,
    JoinPool,
    LeavePool,
    Paired,
    PoolLeft,
    PoolWaiting,
)
from server.protocol import BotRequest, MatchOptions, Ok, PlayerInfo, Request

log = logging.getLogger(__name__)

RatingOf = Callable[[str, str], Awaitable[tuple[float, float]]]
"""``rating_of(player_id, game) -> (rating, deviation)``: a person's Glicko-2 rating now
(:meth:`server.storage.Store.rating_of`)."""

TICK_S = 1.0
"""How often the pool pairs, drops the long gone and tells waiters how it looks."""


class PoolService:
    """This instance's side of the shared pools (see the module docstring)."""

    def __init__(
        self,
        config: ServerConfig,
        host: MatchHost,
        bus: EventBus,
        bot_catalog: BotCatalog,
        rng: random.Random,
        *,
        rating_of: RatingOf,
        bot_games: BotGameCap,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.host = host
        self.bus = bus
        self.bot_catalog = bot_catalog
        self.rng = rng
        self.rating_of = rating_of
        self.bot_games = bot_games
        """The cap on a person's bot games, which a bot taken instead of a person counts against."""
        self.clock = clock
        self.pool = Pool()
        self.connections: dict[str, Connection] = {}
        """The connection each of this instance's waiters waits on."""
        self.exchange = PoolExchange(config.instance_id, self.pool, bus, self, clock)
        self._told: dict[str, tuple[Any, ...]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._runner: asyncio.Task[None] | None = None

    @property
    def instance(self) -> str:
        return self.config.instance_id

    def handlers(self) -> dict[type[Request], Callable[[Connection, Any], Awaitable[object]]]:
        return {JoinPool: self.join, LeavePool: self.leave, AcceptPoolBot: self.accept_bot}

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> None:
        self._runner = asyncio.create_task(self._run(), name="plyarena-pool")

    async def close(self) -> None:
        """Stop pairing and withdraw this instance's waiters from the bus."""
        for waiter in self.pool.local(self.instance):
            self.exchange.withdraw(waiter)
        for task in [self._runner, *self._tasks]:
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self.exchange.follow())
            while True:
                await asyncio.sleep(TICK_S)
                try:
                    self.tick()
                except Exception:
                    log.exception("the pool's tick failed; trying again")

    # ----------------------------------------------------------------- requests

    async def join(self, connection: Connection, request: JoinPool) -> None:
        assert connection.player is not None
        game, control = requested_game(request.game, request.time_control)
        player = player_info(connection.player)
        if self.exchange.is_handed(player.id):
            raise ProtocolError(ErrorCode.NOT_ALLOWED, "you have just been paired: your match is being made")
        if self.seated(player.id):
            seats = ", ".join(self.host.unfinished_of(player.id))
            raise ProtocolError(
                ErrorCode.NOT_ALLOWED, f"you hold a seat in match {seats}: finish or leave it, then wait"
            )
        rating, _deviation = await self.rating_of(player.id, game.name)
        waiter = Waiter(
            player, self.instance, game.name, describe(control), request.rated, rating, self.clock()
        )
        before = self.pool.waiters.get(player.id)
        if before is not None and before.instance != self.instance:
            self.pool.leave(player.id)  # (joined here after another instance: the newer wins)
        kept = self.pool.join(waiter)
        old = self.connections.get(player.id)
        if old is not None and old is not connection:
            old.send(
                PoolLeft(game=kept.game, time_control=kept.time_control, reason="you wait elsewhere now")
            )
        self.connections[player.id] = connection
        self.exchange.announce(kept)
        self._told.pop(player.id, None)
        connection.send(self._waiting(kept, request.id))

    async def leave(self, connection: Connection, request: LeavePool) -> None:
        player_id = connection.player_id
        if player_id is None or self.connections.get(player_id) is not connection:
            raise ProtocolError(ErrorCode.NOT_FOUND, "you wait in no pool")
        self.take_out(player_id)
        connection.send(Ok(id=request.id))

    async def accept_bot(self, connection: Connection, request: AcceptPoolBot) -> None:
        """Play the bot offered instead: a match like ``match.create`` with a bot request makes."""
        player_id = connection.player_id
        waiter = None if player_id is None else self.pool.waiters.get(player_id)
        if player_id is None or waiter is None or self.connections.get(player_id) is not connection:
            raise ProtocolError(ErrorCode.NOT_FOUND, "you wait in no pool")
        offer = self._bot_offer(waiter)
        if offer is None:
            raise ProtocolError(
                ErrorCode.NOT_ALLOWED, "no bot is offered to you yet: keep waiting, or leave the pool"
            )
        bot = BotRequest(level=offer.level, style=offer.style)
        options = MatchOptions(
            time_control=waiter.time_control,
            visibility="public",
            bot=bot,
            rated=waiter.rated,
            bot_rating=offer.rating if waiter.rated else None,
        )
        match = Match.open(new_match_id(), GAMES[waiter.game], options, self.config.grace_s)
        with self.bot_games.asked(connection, wants_a_bot=True):
            self.take_out(player_id)
            await self.host.create(match, connection, self.rng.choice((0, 1)), request.id)

    def disconnected(self, connection: Connection) -> None:
        """A connection closed: its waiter keeps their place for the grace period (a ``pool.join`` from a
        new connection takes it back), but is not paired meanwhile."""
        player_id = connection.player_id
        if player_id is not None and self.connections.get(player_id) is connection:
            self.pool.away(player_id, self.clock())
            waiter = self.pool.waiters.get(player_id)
            if waiter is not None:
                self.exchange.withdraw(waiter)  # (no other instance pairs them meanwhile)

    # ----------------------------------------------------------------- the tick

    def tick(self) -> None:
        """Drop the gone and the seated elsewhere, settle late claims, pair, and tell waiters how it looks."""
        now = self.clock()
        for waiter in self.pool.drop_away(now, self.config.grace_s, self.instance):
            self.connections.pop(waiter.player.id, None)
            self.exchange.withdraw(waiter)
        for waiter in self.pool.local(self.instance):
            if self.host.unfinished_of(waiter.player.id) and waiter.player.id not in self.pool.held:
                self.take_out(waiter.player.id, "you took a seat in a match")
        self.exchange.expire(now)
        for pair in self.pool.pairs(now):
            if pair.first.instance == self.instance:
                self._pair(pair, now)
        for waiter in self.pool.local(self.instance):
            connection = self.connections.get(waiter.player.id)
            if connection is not None and waiter.away_since is None:
                self._tell(connection, waiter)

    def _pair(self, pair: Pair, now: float) -> None:
        first, second = pair.first, pair.second
        if second.instance == self.instance:
            connections = self.connections.get(first.player.id), self.connections.get(second.player.id)
            for waiter in (first, second):
                self.take_out(waiter.player.id)
            self._spawn(self._make(first, second, connections[0], connections[1], None))
            return
        self.exchange.claim(pair, now)

    # ----------------------------------------------------------------- making matches

    async def _make(
        self,
        first: Waiter,
        second: Waiter,
        first_connection: Connection | None,
        second_connection: Connection | None,
        claim_id: str | None,
    ) -> None:
        """Seat both in a new match hosted here and tell them; the other instance's waiter (no connection
        here) through its instance, by ``claim_id``. If it cannot be made, the waiters wait again."""
        seat = self.rng.choice((0, 1))
        try:
            if first_connection is None:
                raise RuntimeError(f"the waiter {first.player.id} has no connection here")
            live = await self._seat_both(first, second, first_connection, second_connection, seat)
        except Exception as error:
            log.warning("pairing %s with %s failed: %s", first.player.id, second.player.id, error)
            if first_connection is not None:
                self.rejoin(first, first_connection)
            if second_connection is not None:
                self.rejoin(second, second_connection)
            if claim_id is not None:
                self.exchange.made(second.instance, claim_id, None)
            return
        first_connection.send(self._paired(live, first, seat, second.player))
        paired = self._paired(live, second, 1 - seat, first.player)
        if second_connection is not None:
            second_connection.send(paired)
        if claim_id is not None:
            self.exchange.made(second.instance, claim_id, paired)

    async def _seat_both(
        self,
        first: Waiter,
        second: Waiter,
        first_connection: Connection,
        second_connection: Connection | None,
        seat: int,
    ) -> LiveMatch:
        # Public, so that it is watched and listed in its players' profiles like any game. Nobody else takes
        # the second seat first: the match's lock is taken for it before anything else runs on the loop.
        options = MatchOptions(
            time_control=first.time_control, visibility="public", bot=None, rated=first.rated
        )
        match = Match.open(new_match_id(), GAMES[first.game], options, self.config.grace_s)
        live = await self.host.create(match, first_connection, seat, None)
        if second_connection is not None:
            await self.host.join(live, second_connection, 1 - seat, None)
        else:
            await seat_away(self.host, live, second.player, 1 - seat)
        return live

    def _paired(self, live: LiveMatch, waiter: Waiter, seat: int, opponent: PlayerInfo) -> Paired:
        return Paired(
            match_id=live.id,
            game=waiter.game,
            time_control=waiter.time_control,
            rated=waiter.rated,
            seat=seat,
            opponent=opponent,
            host=self.instance,
            url=self.host.ws_url(),
        )

    def _spawn(self, coroutine: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----------------------------------------------------------------- what the exchange asks

    def connection_of(self, player_id: str) -> Connection | None:
        return self.connections.get(player_id)

    def seated(self, player_id: str) -> bool:
        """Whether ``player_id`` holds a seat in an unfinished match here (then they wait no more)."""
        return bool(self.host.unfinished_of(player_id))

    def make_claimed(self, first: Waiter, second: Waiter, connection: Connection, claim_id: str) -> None:
        """The other instance confirmed ``second``: make the match of ``first`` (ours) with them."""
        self.take_out(first.player.id)
        self._spawn(self._make(first, second, connection, None, claim_id))

    # ----------------------------------------------------------------- helpers

    def take_out(self, player_id: str, reason: str | None = None) -> None:
        """Take a waiter of ours out of the pool and off the bus; tell them ``reason`` if it is not theirs."""
        waiter = self.pool.leave(player_id)
        connection = self.connections.pop(player_id, None)
        self._told.pop(player_id, None)
        if waiter is None:
            return
        self.exchange.withdraw(waiter)
        if reason is not None and connection is not None:
            connection.send(PoolLeft(game=waiter.game, time_control=waiter.time_control, reason=reason))

    def rejoin(self, waiter: Waiter, connection: Connection) -> None:
        """A waiter whose pairing failed waits again, in their place."""
        kept = self.pool.join(replace(waiter, away_since=None))
        self.connections[kept.player.id] = connection
        self.exchange.announce(kept)

    def _bot_offer(self, waiter: Waiter) -> BotOffer | None:
        """The offered bot closest to ``waiter``'s rating, once they waited long enough; ``None`` before."""
        if self.clock() - waiter.since < self.config.pool_bot_offer_s:
            return None
        best: BotOffer | None = None
        for offer in self.bot_catalog.offers.values():
            if offer.full:
                continue
            for bot in offer.games.get(waiter.game, ()):
                if bot.rating is None:
                    continue
                if best is None or abs(bot.rating.elo - waiter.rating) < abs(best.rating - waiter.rating):
                    best = BotOffer(level=bot.level, style=bot.style, name=bot.name, rating=bot.rating.elo)
        return best

    def _waiting(self, waiter: Waiter, request_id: Any = None) -> PoolWaiting:
        view = self.pool.view(waiter.player.id, self.clock())
        assert view is not None
        return _waiting_message(waiter, view, self._bot_offer(waiter), request_id)

    def _tell(self, connection: Connection, waiter: Waiter) -> None:
        """Send ``pool.waiting`` when what it says (but the time waited) changed."""
        message = self._waiting(waiter)
        said = (message.waiting, message.range, message.bot)
        if self._told.get(waiter.player.id) != said:
            self._told[waiter.player.id] = said
            connection.send(message)


def _waiting_message(waiter: Waiter, view: PoolView, bot: BotOffer | None, request_id: Any) -> PoolWaiting:
    return PoolWaiting(
        game=waiter.game,
        time_control=waiter.time_control,
        rated=waiter.rated,
        waiting=view.waiting,
        rating=round(waiter.rating),
        range=(round(view.low), round(view.high)),
        waited_ms=round(view.waited_s * 1000),
        bot=bot,
        id=request_id,
    )


async def seat_away(host: MatchHost, live: LiveMatch, player: PlayerInfo, seat: int) -> None:
    """Seat ``player``, who has no connection here (they wait at another instance), and start their grace
    period at once: they come with ``match.watch``, or lose by absence as anyone who leaves."""
    async with live.lock:
        now = host.now()
        await host.apply(live, live.match.join(player, seat, now))
        with contextlib.suppress(ProtocolError):
            await host.apply(live, live.match.disconnect(player.id, now))
