"""The bus side of quick pairing: instances that share a broker pool their waiters (docs/scaling.md).

Each instance announces its waiters retained at ``plyarena/v1/pool/{instance}/{player_id}`` and withdraws
them (an empty payload) once they leave, are paired or their connection goes; every instance mirrors the
others' into its :class:`~server.pool.Pool`, and forgets an instance's waiters when its status
(``plyarena/v1/instances/{instance}``, set offline by its MQTT will when it dies) says it is gone.

A pair across two instances is made by the instance of the longer waiter, which asks the other first:
a :class:`~server.pool_protocol.Claim` in the other's inbox (``plyarena/v1/pool-inbox/{instance}/{sender}``,
whose last level names the sender: an answer counts only from the instance asked, a report of a match
only from the instance that claimed). The
other takes its waiter out of its pool if they still wait there and answers; only a free answer lets the
claimer make the match, which it then reports (:class:`~server.pool_protocol.Made`) so that the other can
tell its waiter. A waiter is taken out by their own instance alone, once: nobody is paired twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import msgspec

from server.bus import EventBus
from server.connection import Connection
from server.ids import new_id
from server.pool import Pair, Pool, Waiter
from server.pool_protocol import (
    INSTANCES_PATTERN,
    WAITERS_PATTERN,
    Answer,
    BusPlayer,
    BusWaiter,
    Claim,
    InboxMessage,
    Made,
    Paired,
    inbox_pattern,
    inbox_topic,
    waiter_topic,
)
from server.protocol_base import PlayerInfo

log = logging.getLogger(__name__)

CLAIM_TIMEOUT_S = 5.0
"""How long a claim waits for the other instance's answer before its waiter waits on without it."""
HANDED_TIMEOUT_S = 3 * CLAIM_TIMEOUT_S
"""How long a waiter a claim took waits to hear of their match before they wait in the pool again."""


class PoolSide(Protocol):
    """What the exchange asks of this instance's pool service (server/pool_service.py)."""

    def connection_of(self, player_id: str) -> Connection | None: ...

    def seated(self, player_id: str) -> bool: ...

    def take_out(self, player_id: str, reason: str | None = None) -> None: ...

    def rejoin(self, waiter: Waiter, connection: Connection) -> None: ...

    def make_claimed(self, first: Waiter, second: Waiter, connection: Connection, claim_id: str) -> None: ...


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
    claimer: str
    connection: Connection
    due: float


class PoolExchange:
    """This instance's waiters on the bus, the others' in its pool, and the claims between them."""

    def __init__(
        self, instance: str, pool: Pool, bus: EventBus, side: PoolSide, clock: Callable[[], float]
    ) -> None:
        self.instance = instance
        self.pool = pool
        self.bus = bus
        self.side = side
        self.clock = clock
        self.offline: set[str] = set()
        self._claims: dict[str, _Claimed] = {}
        self._handed: dict[str, _Handed] = {}

    async def follow(self) -> None:
        """Follow the instances' statuses, their waiters and this instance's inbox, until cancelled."""
        async with asyncio.TaskGroup() as group:
            group.create_task(self._follow(INSTANCES_PATTERN, self._on_status))
            group.create_task(self._follow(WAITERS_PATTERN, self._on_waiter))
            group.create_task(self._follow(inbox_pattern(self.instance), self._on_inbox))

    async def _follow(self, pattern: str, handle: Callable[[str, bytes], None]) -> None:
        async with self.bus.subscribe(pattern) as messages:
            async for topic, payload in messages:
                try:
                    handle(topic, payload)
                except (msgspec.DecodeError, ValueError) as error:
                    log.warning("dropped a bad message on %s: %s", topic, str(error)[:200])
                except Exception:
                    log.exception("ignoring a message on %s", topic)

    # ----------------------------------------------------------------- this instance's side

    def announce(self, waiter: Waiter) -> None:
        player = waiter.player
        announced = BusWaiter(
            player=BusPlayer(id=player.id, name=player.name, bot=player.bot),
            game=waiter.game,
            time_control=waiter.time_control,
            rated=waiter.rated,
            rating=waiter.rating,
            since=waiter.since,
        )
        self.bus.publish_nowait(waiter_topic(self.instance, waiter.player.id), _encode(announced), True)

    def withdraw(self, waiter: Waiter) -> None:
        self.bus.publish_nowait(waiter_topic(self.instance, waiter.player.id), b"", True)

    def is_handed(self, player_id: str) -> bool:
        """Whether ``player_id`` was taken by another instance's claim, their match not made yet."""
        return any(handed.waiter.player.id == player_id for handed in self._handed.values())

    def claim(self, pair: Pair, now: float) -> None:
        """Ask the instance of ``pair.second`` to confirm its waiter; both are held until it answers."""
        claim_id = new_id()
        self.pool.hold(pair.first.player.id)
        self.pool.hold(pair.second.player.id)
        self._claims[claim_id] = _Claimed(pair.first, pair.second, now + CLAIM_TIMEOUT_S)
        claim = Claim(claim_id=claim_id, player_id=pair.second.player.id)
        self.bus.publish_nowait(inbox_topic(pair.second.instance, self.instance), _encode(claim))

    def made(self, instance: str, claim_id: str, paired: Paired | None) -> None:
        """Tell ``instance`` that the match of its claim ``claim_id`` is made (``None``: it failed)."""
        made = Made(claim_id=claim_id, paired=paired)
        self.bus.publish_nowait(inbox_topic(instance, self.instance), _encode(made))

    def expire(self, now: float) -> None:
        """Claims unanswered in time: both waiters may be paired again (theirs goes with its instance's
        status if that instance is gone). Waiters handed over but never told of a match wait again."""
        for claim_id, claimed in list(self._claims.items()):
            if now >= claimed.due:
                del self._claims[claim_id]
                self.pool.release(claimed.first.player.id)
                self.pool.release(claimed.second.player.id)
        for claim_id, handed in list(self._handed.items()):
            if now >= handed.due:
                del self._handed[claim_id]
                self.side.rejoin(handed.waiter, handed.connection)

    # ----------------------------------------------------------------- messages from the bus

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
        player = announced.player
        waiter = Waiter(
            PlayerInfo(id=player.id, name=player.name, bot=player.bot),
            instance,
            announced.game,
            announced.time_control,
            announced.rated,
            announced.rating,
            announced.since,
        )
        if known is not None and known.instance == self.instance:
            if known.order() > waiter.order():  # (ours is the newer: theirs is taken out there)
                return
            self.side.take_out(player_id, "you joined a pool on another server since")
        self.pool.join(waiter)

    def _on_inbox(self, topic: str, payload: bytes) -> None:
        sender = topic.rsplit("/", 1)[-1]
        message = _inbox_decoder.decode(payload)
        if isinstance(message, Claim):
            self._on_claim(message, sender)
        elif isinstance(message, Answer):
            self._on_answer(message, sender)
        else:
            self._on_made(message, sender)

    def _on_claim(self, claim: Claim, sender: str) -> None:
        """Another instance pairs our waiter: take them out if they still wait, and say so."""
        waiter = self.pool.waiters.get(claim.player_id)
        connection = self.side.connection_of(claim.player_id)
        free = (
            waiter is not None
            and connection is not None
            and waiter.instance == self.instance
            and self.pool.pairable(waiter)
            and not self.side.seated(claim.player_id)
        )
        if waiter is not None and connection is not None and free:
            self.side.take_out(claim.player_id)
            self._handed[claim.claim_id] = _Handed(
                waiter, sender, connection, self.clock() + HANDED_TIMEOUT_S
            )
        answer = Answer(claim_id=claim.claim_id, free=free)
        self.bus.publish_nowait(inbox_topic(sender, self.instance), _encode(answer))

    def _on_answer(self, answer: Answer, sender: str) -> None:
        claimed = self._claims.get(answer.claim_id)
        if claimed is None or claimed.second.instance != sender:
            return  # (too late: ours waits on, theirs again once its handing over lapses; or not theirs)
        del self._claims[answer.claim_id]
        first, second = claimed.first, claimed.second
        self.pool.release(first.player.id)
        self.pool.release(second.player.id)
        if not answer.free:
            return
        if self.pool.waiters.get(second.player.id) == second:
            self.pool.leave(second.player.id)
        connection = self.side.connection_of(first.player.id)
        still = self.pool.waiters.get(first.player.id)
        if connection is None or still is None or still.pool != first.pool or not self.pool.pairable(still):
            self.made(second.instance, answer.claim_id, None)
            return
        self.side.make_claimed(first, second, connection, answer.claim_id)

    def _on_made(self, made: Made, sender: str) -> None:
        handed = self._handed.get(made.claim_id)
        if handed is None or handed.claimer != sender:
            return
        del self._handed[made.claim_id]
        if made.paired is None:
            self.side.rejoin(handed.waiter, handed.connection)
        else:
            handed.connection.send(made.paired)
