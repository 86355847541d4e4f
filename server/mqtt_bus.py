"""The event bus on an MQTT 5 broker (:class:`MqttBus`), and the ``mqtt://`` URLs that name one.

server/bus.py describes the semantics it shares with the bus in process, and picks one of the two.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import ssl
import uuid
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Self
from urllib.parse import unquote, urlsplit, urlunsplit

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from server.topics import (
    DEFAULT_MAX_QUEUED,
    Message,
    Subscription,
    check_pattern,
    check_topic,
    topic_matches,
)

log = logging.getLogger("server.bus")  # (the bus's log, as before the bus was split in modules)

DEFAULT_MAX_PENDING = 10_000  # publishes kept while the broker is unreachable
RECONNECT_DELAY_S = (0.5, 5.0)
"""The first wait before connecting to the broker again, and the longest: lobby entries and bot requests
wait for the broker meanwhile, so a long outage must not leave them waiting much past its end."""


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    """Where an ``mqtt://[user:password@]host[:port]`` URL (``mqtts://`` for TLS) points."""

    host: str
    port: int
    username: str | None
    password: str | None
    tls: bool

    @classmethod
    def parse(cls, url: str) -> BrokerAddress:
        """Raise ``ValueError``, naming the URL, unless it is one."""
        refusal = f"unsupported MQTT URL {shown_url(url)!r}: use mqtt://host:port or mqtts://host:port"
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:  # not a number, or out of range
            raise ValueError(refusal) from None
        if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
            raise ValueError(refusal)
        tls = parts.scheme == "mqtts"
        return cls(
            host=parts.hostname,
            port=port or (8883 if tls else 1883),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            tls=tls,
        )


def shown_url(url: str) -> str:
    """``url`` as it may be logged or printed: a password in it masked (as ``safe_url`` does for
    databases)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    address = parts.netloc.rpartition("@")[2]  # (host and port as written, an IPv6 one in brackets)
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{address}"))


# --------------------------------------------------------------------- MQTT


@dataclass(eq=False)
class _BrokerSubscription:
    """One pattern subscribed at the broker, shared by every local subscription to it.

    The broker tags each message with the MQTT 5 subscription identifiers it
    matched, so a message reaches exactly the patterns it was sent for, once,
    even when patterns overlap. ``retained`` mirrors the broker's retained
    messages under the pattern (subscribed with "retain as published"), so a
    second local subscriber gets them without asking the broker again.
    """

    pattern: str
    identifier: int
    subscriptions: set[Subscription] = field(default_factory=set)
    retained: dict[str, bytes] = field(default_factory=dict)
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # set once the broker acknowledged it

    def mirror_retained(self, topic: str, payload: bytes) -> None:
        """Hold the broker's retained message on ``topic`` as it now stands: an empty payload clears it."""
        if payload:
            self.retained[topic] = payload
        else:
            self.retained.pop(topic, None)


@dataclass(slots=True)
class MqttStats:
    """What the MQTT bus has done, for ``/metrics``."""

    connections: int = 0  # successful connections, so ``connections - 1`` reconnects
    published: int = 0
    received: int = 0
    dropped_publishes: int = 0  # discarded because the pending queue was full during an outage


class MqttBus:
    """An :class:`EventBus` (server/bus.py) on an MQTT 5 broker, through aiomqtt.

    ``client_id`` names this instance at the broker (unique per broker).
    ``status_topic`` (e.g. ``plyarena/v1/instances/{id}``), when given, holds a
    retained ``{"instance": id, "online": true}`` while connected, and the broker
    publishes ``"online": false`` there as the last will if the instance dies;
    a clean :meth:`close` publishes it too.

    Publishes never wait for the network: they go to a queue that a sender task
    drains while connected. Retained messages (state) are sent with QoS 1 and
    only their latest value per topic is kept while waiting; other messages
    (events) with QoS 0, keeping at most ``max_pending`` during an outage (the
    oldest are dropped). Queued retained updates may overtake queued events.

    After a reconnect, subscribers receive the retained messages of their
    patterns again (the current state); a retained message cleared while this
    instance was disconnected is not reported as cleared.
    """

    def __init__(
        self,
        url: str,
        *,
        client_id: str | None = None,
        status_topic: str | None = None,
        max_pending: int = DEFAULT_MAX_PENDING,
        max_queued: int = DEFAULT_MAX_QUEUED,
        keepalive: int = 15,
        timeout: float = 10.0,
        reconnect_delay: tuple[float, float] = RECONNECT_DELAY_S,
        connect_wait: float = 5.0,
    ) -> None:
        broker = BrokerAddress.parse(url)
        if status_topic is not None:
            check_topic(status_topic)
        self.url = shown_url(url)
        """The broker's URL as logs show it (its password masked)."""
        self.client_id = client_id or f"plyarena-{uuid.uuid4().hex[:12]}"
        self.status_topic = status_topic
        self.stats = MqttStats()
        self._host, self._port = broker.host, broker.port
        self._username, self._password = broker.username, broker.password
        self._tls = ssl.create_default_context() if broker.tls else None
        self._keepalive, self._timeout = keepalive, timeout
        self._min_delay, self._max_delay = reconnect_delay
        self._connect_wait = connect_wait
        self._max_queued = max_queued

        self._patterns: dict[str, _BrokerSubscription] = {}
        self._by_identifier: dict[int, _BrokerSubscription] = {}
        self._next_identifier = 1
        # This instance's retained topics, published again after every reconnect.
        self._owned_retained: dict[str, bytes] = {}
        self._pending_retained: dict[str, bytes] = {}  # latest value per topic, waiting to be sent
        self._pending_events: deque[Message] = deque()
        self._max_pending = max_pending
        self._outbox_changed = asyncio.Event()
        self._outbox_empty = asyncio.Event()
        self._outbox_empty.set()
        self._client: aiomqtt.Client | None = None
        self._connected = asyncio.Event()
        self._stopping = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None
        self._disowned = False
        self._status_url: str | None = None
        """The instance's WebSocket URL, in its status once announced (:meth:`announce_url`)."""

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def wait_connected(self, timeout: float | None = None) -> bool:
        """Wait until the broker connection is up (at most ``timeout`` seconds); whether it is."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._connected.wait(), timeout)
        return self.connected

    @property
    def pending_publishes(self) -> int:
        """Publishes not yet handed to the broker."""
        return len(self._pending_retained) + len(self._pending_events)

    async def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued publish has been handed to the broker (at most ``timeout`` seconds)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._outbox_empty.wait(), timeout)
        return self.pending_publishes == 0

    async def start(self) -> None:
        """Start the connection task and wait a little for the first connection, without failing on it."""
        if self._runner is None:
            self._stopping.clear()
            self._runner = asyncio.create_task(self._run(), name=f"mqtt-bus-{self.client_id}")
        if not await self.wait_connected(self._connect_wait):
            log.warning("MQTT broker %s not reachable yet; events are queued until it is", self.url)

    async def close(self) -> None:
        """Send what is pending (briefly), mark the instance offline, disconnect, end every subscription."""
        runner, self._runner = self._runner, None
        self._stopping.set()
        if runner is not None:
            try:
                async with asyncio.timeout(self._timeout):
                    await asyncio.shield(runner)
            except TimeoutError:
                runner.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await runner
        for broker_subscription in self._patterns.values():
            for subscription in broker_subscription.subscriptions:
                subscription.end()
        self._patterns.clear()
        self._by_identifier.clear()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def disown(self) -> None:
        """Drop what is pending and publish nothing more, the offline status on closing included (see
        :meth:`EventBus.disown`); the graceful disconnect keeps the broker from publishing the will."""
        self._disowned = True
        self._pending_events.clear()
        self._pending_retained.clear()
        self._owned_retained.clear()
        self._outbox_empty.set()

    async def publish(self, topic: str, payload: bytes, *, retain: bool = False) -> None:
        self.publish_nowait(topic, payload, retain)

    @property
    def dropped_publishes(self) -> int:
        return self.stats.dropped_publishes

    def announce_url(self, url: str) -> None:
        """Put ``url`` in the instance's status from now on, and publish it at once if connected."""
        self._status_url = url
        if self.status_topic is not None:
            self.publish_nowait(self.status_topic, self._status(online=True), retain=True)

    def publish_nowait(self, topic: str, payload: bytes, retain: bool = False) -> None:
        check_topic(topic)
        if self._disowned:
            return
        payload = bytes(payload)
        if retain:
            if payload:
                self._owned_retained[topic] = payload
            else:
                self._owned_retained.pop(topic, None)
            self._pending_retained.pop(topic, None)  # the newest value goes to the back of the line
            self._pending_retained[topic] = payload
        else:
            if len(self._pending_events) >= self._max_pending:
                self._pending_events.popleft()
                self.stats.dropped_publishes += 1
                if self.stats.dropped_publishes == 1 or self.stats.dropped_publishes % 1000 == 0:
                    log.warning("MQTT publish queue full: %d events dropped", self.stats.dropped_publishes)
            self._pending_events.append((topic, payload))
        self._outbox_empty.clear()
        self._outbox_changed.set()

    def subscribe(self, pattern: str) -> Subscription:
        check_pattern(pattern)
        return Subscription(pattern, self._attach, self._detach, self._max_queued)

    # ------------------------------------------------------- subscriptions

    async def _attach(self, subscription: Subscription) -> None:
        broker_subscription = self._patterns.get(subscription.pattern)
        if broker_subscription is None:
            broker_subscription = _BrokerSubscription(subscription.pattern, self._new_identifier())
            self._patterns[subscription.pattern] = broker_subscription
            self._by_identifier[broker_subscription.identifier] = broker_subscription
            broker_subscription.subscriptions.add(subscription)
            if self._client is not None:
                with contextlib.suppress(aiomqtt.MqttError):  # the reconnect will subscribe it
                    await self._subscribe_at_broker(self._client, broker_subscription)
            return
        for topic, payload in broker_subscription.retained.items():
            subscription.deliver(topic, payload)
        broker_subscription.subscriptions.add(subscription)
        if self._client is not None:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for swallows a cancellation that comes as
            # the wait ends, and a subscriber cancelled just then would wait on for ever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._timeout):
                    await broker_subscription.ready.wait()

    async def _detach(self, subscription: Subscription) -> None:
        broker_subscription = self._patterns.get(subscription.pattern)
        if broker_subscription is None:
            return
        broker_subscription.subscriptions.discard(subscription)
        if broker_subscription.subscriptions:
            return
        del self._patterns[subscription.pattern]
        del self._by_identifier[broker_subscription.identifier]
        if self._client is not None:
            with contextlib.suppress(aiomqtt.MqttError):
                await self._client.unsubscribe(subscription.pattern, timeout=self._timeout)

    def _new_identifier(self) -> int:
        identifier = self._next_identifier
        self._next_identifier = identifier % 268_435_455 + 1  # MQTT's range for subscription identifiers
        return identifier

    async def _subscribe_at_broker(
        self, client: aiomqtt.Client, broker_subscription: _BrokerSubscription
    ) -> None:
        properties = Properties(PacketTypes.SUBSCRIBE)
        properties.SubscriptionIdentifier = broker_subscription.identifier
        broker_subscription.retained.clear()  # the broker sends the current ones again
        await client.subscribe(
            broker_subscription.pattern,
            options=SubscribeOptions(qos=1, retainAsPublished=True),
            properties=properties,
            timeout=self._timeout,
        )
        broker_subscription.ready.set()

    # ------------------------------------------------------------ connection

    async def _run(self) -> None:
        waits = reconnect_waits(self._min_delay, self._max_delay, random.Random())
        while not self._stopping.is_set():
            delay = next(waits)
            try:
                async with self._new_client() as client:
                    waits = reconnect_waits(self._min_delay, self._max_delay, random.Random())
                    await self._serve(client)
            except aiomqtt.MqttError as error:
                if self.connected:
                    log.warning("MQTT connection to %s lost: %s; reconnecting", self.url, error)
                else:
                    log.info("MQTT broker %s unreachable: %s; retrying in %.1f s", self.url, error, delay)
            except Exception:
                log.exception("MQTT connection to %s failed unexpectedly; reconnecting", self.url)
            finally:
                self._client = None
                self._connected.clear()
                for broker_subscription in self._patterns.values():
                    broker_subscription.ready.clear()
            if self._stopping.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), delay)

    def _new_client(self) -> aiomqtt.Client:
        will = None
        if self.status_topic is not None:
            will = aiomqtt.Will(self.status_topic, self._status(online=False), qos=1, retain=True)
        return aiomqtt.Client(
            self._host,
            self._port,
            username=self._username,
            password=self._password,
            identifier=self.client_id,
            protocol=aiomqtt.ProtocolVersion.V5,
            will=will,
            keepalive=self._keepalive,
            timeout=self._timeout,
            tls_context=self._tls,
        )

    async def _serve(self, client: aiomqtt.Client) -> None:
        """Renew subscriptions and state on a new connection, then move messages until it breaks or stops."""
        receiver = asyncio.create_task(self._receive(client))
        self._client = client  # from now on, new patterns subscribe themselves
        for broker_subscription in list(self._patterns.values()):
            await self._subscribe_at_broker(client, broker_subscription)
        if self.status_topic is not None and not self._disowned:
            await client.publish(self.status_topic, self._status(online=True), qos=1, retain=True)
        for topic, payload in self._owned_retained.items():
            self._pending_retained.setdefault(topic, payload)
        self.stats.connections += 1
        self._connected.set()
        log.info("MQTT connected to %s as %s", self.url, self.client_id)
        sender = asyncio.create_task(self._send(client))
        stopping = asyncio.create_task(self._stopping.wait())
        tasks = {receiver, sender, stopping}
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in done - {stopping}:
                task.result()  # a broken connection raises MqttError here
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._timeout / 2):
                    await self._outbox_empty.wait()
            if self.status_topic is not None and not self._disowned:
                await client.publish(self.status_topic, self._status(online=False), qos=1, retain=True)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _receive(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            self.stats.received += 1
            self._dispatch(message)

    def _dispatch(self, message: aiomqtt.Message) -> None:
        topic = message.topic.value
        payload = message.payload if isinstance(message.payload, bytes) else str(message.payload).encode()
        for broker_subscription in self._targets(message, topic):
            if message.retain:
                broker_subscription.mirror_retained(topic, payload)
            for subscription in broker_subscription.subscriptions:
                subscription.deliver(topic, payload)

    def _targets(self, message: aiomqtt.Message, topic: str) -> list[_BrokerSubscription]:
        """The patterns ``message`` was sent for: those whose subscription identifiers the broker tagged it
        with, or, from a broker that tags none, those its ``topic`` matches here."""
        identifiers = getattr(message.properties, "SubscriptionIdentifier", None) or ()
        if identifiers:
            return [self._by_identifier[i] for i in identifiers if i in self._by_identifier]
        return [b for b in self._patterns.values() if topic_matches(b.pattern, topic)]

    async def _send(self, client: aiomqtt.Client) -> None:
        """Drain the outbox while connected: retained state first (QoS 1), then events (QoS 0)."""
        while True:
            if self._pending_retained:
                topic, payload = next(iter(self._pending_retained.items()))
                await client.publish(topic, payload, qos=1, retain=True)
                if self._pending_retained.get(topic) is payload:  # not replaced while we sent it
                    del self._pending_retained[topic]
            elif self._pending_events:
                topic, payload = self._pending_events.popleft()
                try:
                    await client.publish(topic, payload, qos=0)
                except aiomqtt.MqttError:
                    if len(self._pending_events) < self._max_pending:
                        self._pending_events.appendleft((topic, payload))
                    raise
            else:
                self._outbox_empty.set()
                self._outbox_changed.clear()
                await self._outbox_changed.wait()
                continue
            self.stats.published += 1

    def _status(self, *, online: bool) -> bytes:
        status: dict[str, object] = {"instance": self.client_id, "online": online}
        if self._status_url is not None:
            status["url"] = self._status_url
        return json.dumps(status).encode()


def reconnect_waits(first: float, longest: float, rng: random.Random) -> Iterator[float]:
    """The waits between attempts to reach the broker: doubling from ``first``, each drawn within 20% of
    its value (the clients of a broker that restarted do not all come back at once), never above
    ``longest``."""
    delay = first
    while True:
        yield min(longest, delay * rng.uniform(0.8, 1.2))
        delay = min(delay * 2, longest)
