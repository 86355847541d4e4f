"""The event bus: topics, payloads, retained messages, with MQTT's semantics everywhere.

Lobby entries and match events are published on topics such as
``plyarena/v1/lobby/{match_id}`` and read with MQTT wildcards (``+`` stands for
one level, a final ``#`` for any number of levels, including none)::

    async with bus.subscribe("plyarena/v1/lobby/#") as messages:
        async for topic, payload in messages:
            ...

A retained message is the current state of its topic: every new subscriber gets
the matching retained messages first, then live ones; publishing an empty
retained payload clears the topic, and current subscribers receive that empty
payload, which is how they learn a lobby entry is gone.

Two implementations of one interface, :class:`EventBus`:

- :class:`InProcessBus`, the default: one server instance, no broker.
- :class:`MqttBus`: any MQTT 5 broker (Mosquitto in development, a cluster such as
  EMQX in production), so several instances and bot fleets share the events. It
  keeps its connection in a background task and reconnects with backoff when the
  broker goes away; meanwhile the server keeps running, publishes wait in a
  bounded queue, and on reconnect subscriptions are renewed and this instance's
  retained topics are published again (the broker may have lost them).

``bus_from_url(None)`` gives the first, ``bus_from_url("mqtt://host:1883")`` the second.
:class:`MqttBus` lives in server/mqtt_bus.py, and what both share (topic rules, subscriptions) in
server/topics.py; this module re-exports their names.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Protocol, Self

from server.mqtt_bus import DEFAULT_MAX_PENDING as DEFAULT_MAX_PENDING
from server.mqtt_bus import BrokerAddress as BrokerAddress
from server.mqtt_bus import MqttBus
from server.mqtt_bus import MqttStats as MqttStats
from server.mqtt_bus import shown_url as shown_url
from server.topics import (
    DEFAULT_MAX_QUEUED,
    Message,
    Subscription,
    _Subscribers,
    check_pattern,
    check_topic,
    topic_matches,
)
from server.topics import MAX_TOPIC_BYTES as MAX_TOPIC_BYTES

log = logging.getLogger(__name__)


class Publish(Protocol):
    """:meth:`EventBus.publish_nowait`, as what publishes is handed it."""

    def __call__(self, topic: str, payload: bytes, retain: bool = False, /) -> None: ...


class EventBus(Protocol):
    """What the server needs from an event bus; see the module docstring for the semantics."""

    async def start(self) -> None: ...

    async def close(self) -> None: ...

    def disown(self) -> None:
        """Publish nothing more for this instance, not even that it goes offline: for a server that lost
        its instance to another server, which speaks for it now (its lobby entries, its status)."""

    def announce_url(self, url: str) -> None:
        """Say in this instance's status where it serves (its WebSocket URL), so that other instances send
        the clients of its matches there."""

    def publish_nowait(self, topic: str, payload: bytes, retain: bool = False) -> None:
        """Publish without ever waiting: delivered to this process's subscribers at once, queued for the
        broker (bounded: see :class:`MqttBus`). Raises ``ValueError`` for a topic that is not one."""

    async def publish(self, topic: str, payload: bytes, *, retain: bool = False) -> None:
        """:meth:`publish_nowait`, for callers that await."""

    @property
    def dropped_publishes(self) -> int:
        """Events dropped before they were published: a queue for the broker full while it was
        unreachable (never in process, where every publish is delivered at once)."""
        ...

    def subscribe(self, pattern: str) -> AbstractAsyncContextManager[AsyncIterator[Message]]: ...


def bus_from_url(
    url: str | None, *, client_id: str | None = None, status_topic: str | None = None
) -> EventBus:
    """The bus for a ``--mqtt`` option: in process for ``None``, else MQTT (``mqtt://`` or ``mqtts://``)."""
    if url is None:
        return InProcessBus()
    return MqttBus(url, client_id=client_id, status_topic=status_topic)


# --------------------------------------------------------------- in process


class InProcessBus:
    """The bus inside one server process: no broker, the same semantics as MQTT."""

    def __init__(self, *, max_queued: int = DEFAULT_MAX_QUEUED) -> None:
        self._max_queued = max_queued
        self._subscribers = _Subscribers()
        self._retained: dict[str, bytes] = {}
        self._closed = False

    async def start(self) -> None:
        self._closed = False

    def disown(self) -> None:
        """Nothing to do: no other server hears this process's bus."""

    def announce_url(self, url: str) -> None:
        """Nothing to do: no other instance hears this process's bus."""

    async def close(self) -> None:
        self._closed = True
        for subscription in self._subscribers.all():
            subscription.end()
        self._subscribers = _Subscribers()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def publish(self, topic: str, payload: bytes, *, retain: bool = False) -> None:
        self.publish_nowait(topic, payload, retain)

    @property
    def dropped_publishes(self) -> int:
        return 0

    def publish_nowait(self, topic: str, payload: bytes, retain: bool = False) -> None:
        check_topic(topic)
        if self._closed:
            log.debug("bus closed: message on %r not published", topic)
            return
        payload = bytes(payload)
        if retain:
            if payload:
                self._retained[topic] = payload
            else:
                self._retained.pop(topic, None)
        for subscription in self._subscribers.matching(topic):
            subscription.deliver(topic, payload)

    def subscribe(self, pattern: str) -> Subscription:
        check_pattern(pattern)
        return Subscription(pattern, self._attach, self._detach, self._max_queued)

    async def _attach(self, subscription: Subscription) -> None:
        for topic, payload in self._retained.items():
            if topic_matches(subscription.pattern, topic):
                subscription.deliver(topic, payload)
        if self._closed:
            subscription.end()
        else:
            self._subscribers.add(subscription)

    async def _detach(self, subscription: Subscription) -> None:
        self._subscribers.remove(subscription)
