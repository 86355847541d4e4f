"""Quick pairing's I/O: the ``pool.*`` requests, the pool's tick, and pools shared over the bus.

The decisions are :class:`server.pool.Pool`'s; this module feeds it joins, leaves, lost connections and
other instances' waiters, and carries out its pairs. A pair is made by the instance of its longer waiter,
which hosts the match. When the other waiter waits at another instance, that instance is asked first (a
:class:`~server.pool_protocol.Claim` in its inbox): it takes its waiter out of its pool if they still wait
there and answers, and only then is the match made and both told. So a waiter is taken out of a pool by
their own instance alone, once: no one is paired twice (docs/scaling.md, "Quick pairing").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import msgspec

from games import GAMES
from server.bot_catalog import BotCatalog
from server.bus import EventBus
from server.clock import TimeControl, describe
from server.config import ServerConfig
from server.connection import Connection
from server.errors import ErrorCode, ProtocolError
from server.ids import new_id, new_match_id
from server.live import LiveMatch, MatchHost, player_info
from server.match import Match
from server.pool import DEFAULT_DEVIATION, DEFAULT_RATING, Pair, Pool, PoolView, Waiter
from server.pool_protocol import (
    INSTANCES_PATTERN,
    WAITERS_PATTERN,
    AcceptPoolBot,
    Answer,
    BotOffer,
    BusWaiter,
    Claim,
    InboxMessage,
    JoinPool,
    LeavePool,
    Made,
    Paired,
    PoolLeft,
    PoolWaiting,
    inbox_topic,
    waiter_topic,
)
from server.protocol import BotRequest, MatchOptions, Ok, PlayerInfo, Request

log = logging.getLogger(__name__)

RatingOf = Callable[[str, str], Awaitable[tuple[float, float]]]
"""``rating_of(player_id, game) -> (rating, deviation)``: the ratings' lookup (Glicko-2, once wired)."""

TICK_S = 1.0
"""How often the pool pairs, drops the long gone and tells waiters how it looks."""
CLAIM_TIMEOUT_S = 5.0
"""How long a claim waits for the other instance's answer before its waiter waits on without it."""


async def default_rating(player_id: str, game: str) -> tuple[float, float]:
    """Everyone's rating until ratings are wired in: a new player's."""
    return DEFAULT_RATING, DEFAULT_DEVIATION


class _Status(msgspec.Struct, frozen=True):
    online: bool = False


_waiter_decoder = msgspec.json.Decoder(BusWaiter)
_inbox_decoder = msgspec.json.Decoder(InboxMessage)
_status_decoder = msgspec.json.Decoder(_Status)
_encode = msgspec.json.Encoder().encode


@dataclass
class _Claimed:
    """A claim this instance made: its own waiter and the other instance's, until the answer."""

    first: Waiter
    second: Waiter
    due: float


@dataclass
class _Handed:
    """A waiter of ours that another instance's claim took: told when the match is made."""

    waiter: Waiter
    connection: Connection
    due: float


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
        rating_of: RatingOf = default_rating,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.host = host
        self.bus = bus
        self.bot_catalog = bot_catalog
        self.rng = rng
        self.rating_of = rating_of
        """Wired to the ratings by whoever has them (``Server``); everyone is 1500 until then."""
        self.clock = clock
        self.pool = Pool()
        self.connections: dict[str, Connection] = {}
        """The connection each of this instance's waiters waits on."""
        self.offline: set[str] = set()
        self._claims: dict[str, _Claimed] = {}
        self._handed: dict[str, _Handed] = {}
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
            self._withdraw(waiter)
        for task in [self._runner, *self._tasks]:
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self._follow(INSTANCES_PATTERN, self._on_status))
            group.create_task(self._follow(WAITERS_PATTERN, self._on_waiter))
            group.create_task(self._follow(inbox_topic(self.instance), self._on_inbox))
            while True:
                await asyncio.sleep(TICK_S)
                try:
                    self.tick()
                except Exception:
                    log.exception("the pool's tick failed; trying again")

    async def _follow(self, pattern: str, handle: Callable[[str, bytes], None]) -> None:
        async with self.bus.subscribe(pattern) as messages:
            async for topic, payload in messages:
                try:
                    handle(topic, payload)
                except (msgspec.DecodeError, ValueError) as error:
                    log.warning("dropped a bad message on %s: %s", topic, str(error)[:200])
                except Exception:
                    log.exception("ignoring a message on %s", topic)

    # ----------------------------------------------------------------- requests

    async def join(self, connection: Connection, request: JoinPool) -> None:
        assert connection.player is not None
        game = GAMES.get(request.game)
        if game is None:
            raise ProtocolError(
                ErrorCode.NOT_FOUND, f"unknown game {request.game!r}; known games: {', '.join(sorted(GAMES))}"
            )
        try:
            control = TimeControl.parse(request.time_control)
        except ValueError as error:
            raise ProtocolError(ErrorCode.BAD_FIELD, str(error)) from None
        player = player_info(connection.player)
        if self._is_handed(player.id):
            raise ProtocolError(ErrorCode.NOT_ALLOWED, "you have just been paired: your match is being made")
        rating, _deviation = await self.rating_of(player.id, game.name)
        waiter = Waiter(
            player, self.instance, game.name, describe(control), request.rated, rating, self.clock()
        )
        before = self.pool.waiters.get(player.id)
        if before is not None and before.instance != self.instance:
            self.pool.leave(player.id)  # (joined here after another instance: the newer wins)
        kept = self.pool.join(waiter)
        self.pool.release(player.id)
        old = self.connections.get(player.id)
        if old is not None and old is not connection:
            old.send(
                PoolLeft(game=kept.game, time_control=kept.time_control, reason="you wait elsewhere now")
            )
        self.connections[player.id] = connection
        self._announce(kept)
        self._told.pop(player.id, None)
        connection.send(self._waiting(kept, request.id))

    async def leave(self, connection: Connection, request: LeavePool) -> None:
        player_id = connection.player_id
        if player_id is None or self.connections.get(player_id) is not connection:
            raise ProtocolError(ErrorCode.NOT_FOUND, "you wait in no pool")
        self._take_out(player_id)
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
        self._take_out(player_id)
        bot = BotRequest(level=offer.level, style=offer.style)
        options = MatchOptions(time_control=waiter.time_control, visibility="public", bot=bot)
        match = Match.open(new_match_id(), GAMES[waiter.game], options, self.config.grace_s)
        await self.host.create(match, connection, self.rng.choice((0, 1)), request.id)

    def disconnected(self, connection: Connection) -> None:
        """A connection closed: its waiter keeps their place for the grace period, but is not paired."""
        player_id = connection.player_id
        if player_id is not None and self.connections.get(player_id) is connection:
            self.pool.away(player_id, self.clock())

    # ----------------------------------------------------------------- the tick

    def tick(self) -> None:
        """Drop the gone and the seated elsewhere, settle late claims, pair, and tell waiters how it looks."""
        now = self.clock()
        for waiter in self.pool.drop_away(now, self.config.grace_s, self.instance):
            self.connections.pop(waiter.player.id, None)
            self._withdraw(waiter)
        for waiter in self.pool.local(self.instance):
            if self.host.unfinished_of(waiter.player.id) and waiter.player.id not in self.pool.held:
                self._take_out(waiter.player.id, "you took a seat in a match")
        self._expire(now)
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
                self._take_out(waiter.player.id)
            self._spawn(self._make(first, second, connections[0], connections[1], None))
            return
        claim_id = new_id()
        self.pool.hold(first.player.id)
        self.pool.hold(second.player.id)
        self._claims[claim_id] = _Claimed(first, second, now + CLAIM_TIMEOUT_S)
        claim = Claim(claim_id=claim_id, from_instance=self.instance, player_id=second.player.id)
        self.bus.publish_nowait(inbox_topic(second.instance), _encode(claim))

    def _expire(self, now: float) -> None:
        """Claims unanswered in time: our waiter waits on, and the other, perhaps gone, is forgotten."""
        for claim_id, claimed in list(self._claims.items()):
            if now >= claimed.due:
                del self._claims[claim_id]
                self.pool.release(claimed.first.player.id)
                if self.pool.waiters.get(claimed.second.player.id) == claimed.second:
                    self.pool.leave(claimed.second.player.id)
        for claim_id, handed in list(self._handed.items()):
            if now >= handed.due:  # (the instance that claimed them never said: they wait again)
                del self._handed[claim_id]
                self._rejoin(handed.waiter, handed.connection)

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
                self._rejoin(first, first_connection)
            if second_connection is not None:
                self._rejoin(second, second_connection)
            if claim_id is not None:
                self.bus.publish_nowait(
                    inbox_topic(second.instance), _encode(Made(claim_id=claim_id, paired=None))
                )
            return
        first_connection.send(self._paired(live, first, seat, second.player))
        paired = self._paired(live, second, 1 - seat, first.player)
        if second_connection is not None:
            second_connection.send(paired)
        if claim_id is not None:
            self.bus.publish_nowait(
                inbox_topic(second.instance), _encode(Made(claim_id=claim_id, paired=paired))
            )

    async def _seat_both(
        self,
        first: Waiter,
        second: Waiter,
        first_connection: Connection,
        second_connection: Connection | None,
        seat: int,
    ) -> LiveMatch:
        # Private: listed nowhere, so that nobody else takes the second seat before its waiter has it.
        options = MatchOptions(time_control=first.time_control, visibility="private", bot=None)
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

    # ----------------------------------------------------------------- the bus

    def _on_status(self, topic: str, payload: bytes) -> None:
        """An instance that went offline takes its waiters with it."""
        instance = topic.rsplit("/", 1)[-1]
        if instance == self.instance:
            return
        status = _status_decoder.decode(payload) if payload else _Status(online=True)
        if status.online:
            self.offline.discard(instance)
        else:
            self.offline.add(instance)
            self.pool.drop_instance(instance)

    def _on_waiter(self, topic: str, payload: bytes) -> None:
        """Another instance's waiter (or its withdrawal); a leftover of ours from a restart is cleared."""
        *_, instance, player_id = topic.split("/")
        known = self.pool.waiters.get(player_id)
        if instance == self.instance:
            if payload and (known is None or known.instance != self.instance):
                self.bus.publish_nowait(topic, b"", True)
            return
        if not payload:
            if known is not None and known.instance == instance:
                self.pool.leave(player_id)
            return
        if instance in self.offline:
            return
        announced = _waiter_decoder.decode(payload)
        if announced.player.id != player_id:
            raise ValueError(f"a waiter {announced.player.id} on the topic of {player_id}")
        waiter = Waiter(
            announced.player,
            instance,
            announced.game,
            announced.time_control,
            announced.rated,
            announced.rating,
            announced.since,
        )
        if known is not None and known.instance == self.instance:
            if known.order() > waiter.order():  # (ours is newer: theirs is dropped there)
                return
            self._take_out(player_id, "you joined a pool on another server since")
        self.pool.join(waiter)

    def _on_inbox(self, topic: str, payload: bytes) -> None:
        message = _inbox_decoder.decode(payload)
        if isinstance(message, Claim):
            self._on_claim(message)
        elif isinstance(message, Answer):
            self._on_answer(message)
        else:
            self._on_made(message)

    def _on_claim(self, claim: Claim) -> None:
        """Another instance pairs our waiter: take them out if they still wait, and say so."""
        waiter = self.pool.waiters.get(claim.player_id)
        connection = self.connections.get(claim.player_id)
        free = (
            waiter is not None
            and connection is not None
            and waiter.instance == self.instance
            and self.pool.pairable(waiter)
            and not self.host.unfinished_of(claim.player_id)
        )
        if free:
            assert waiter is not None and connection is not None
            self._take_out(claim.player_id)
            self._handed[claim.claim_id] = _Handed(waiter, connection, self.clock() + 3 * CLAIM_TIMEOUT_S)
        answer = Answer(claim_id=claim.claim_id, free=free)
        self.bus.publish_nowait(inbox_topic(claim.from_instance), _encode(answer))

    def _on_answer(self, answer: Answer) -> None:
        claimed = self._claims.pop(answer.claim_id, None)
        if claimed is None:  # (too late: ours waits on; theirs waits again once their claim lapses)
            return
        first, second = claimed.first, claimed.second
        self.pool.release(first.player.id)
        if not answer.free:
            if self.pool.waiters.get(second.player.id) == second:
                self.pool.leave(second.player.id)
            return
        if self.pool.waiters.get(second.player.id) == second:
            self.pool.leave(second.player.id)
        connection = self.connections.get(first.player.id)
        still = self.pool.waiters.get(first.player.id)
        if still is None or not self.pool.pairable(still) or connection is None:
            made = Made(claim_id=answer.claim_id, paired=None)
            self.bus.publish_nowait(inbox_topic(second.instance), _encode(made))
            return
        self._take_out(first.player.id)
        self._spawn(self._make(first, second, connection, None, answer.claim_id))

    def _on_made(self, made: Made) -> None:
        handed = self._handed.pop(made.claim_id, None)
        if handed is None:
            return
        if made.paired is None:
            self._rejoin(handed.waiter, handed.connection)
        else:
            handed.connection.send(made.paired)

    # ----------------------------------------------------------------- helpers

    def _is_handed(self, player_id: str) -> bool:
        return any(handed.waiter.player.id == player_id for handed in self._handed.values())

    def _take_out(self, player_id: str, reason: str | None = None) -> None:
        """Take a waiter of ours out of the pool and off the bus; tell them ``reason`` if it is not theirs."""
        waiter = self.pool.leave(player_id)
        connection = self.connections.pop(player_id, None)
        self._told.pop(player_id, None)
        if waiter is None:
            return
        self._withdraw(waiter)
        if reason is not None and connection is not None:
            connection.send(PoolLeft(game=waiter.game, time_control=waiter.time_control, reason=reason))

    def _rejoin(self, waiter: Waiter, connection: Connection) -> None:
        """A waiter whose pairing failed waits again, in their place."""
        kept = self.pool.join(replace(waiter, away_since=None))
        self.connections[kept.player.id] = connection
        self._announce(kept)

    def _announce(self, waiter: Waiter) -> None:
        announced = BusWaiter(
            player=waiter.player,
            game=waiter.game,
            time_control=waiter.time_control,
            rated=waiter.rated,
            rating=waiter.rating,
            since=waiter.since,
        )
        self.bus.publish_nowait(waiter_topic(self.instance, waiter.player.id), _encode(announced), True)

    def _withdraw(self, waiter: Waiter) -> None:
        self.bus.publish_nowait(waiter_topic(self.instance, waiter.player.id), b"", True)

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
        await host._apply(live, live.match.join(player, seat, now))
        with contextlib.suppress(ProtocolError):
            await host._apply(live, live.match.disconnect(player.id, now))
