"""Publishing to the bus without ever making a player wait for the broker.

Match and lobby code hands messages to :meth:`Outbox.put`, which returns at
once; one task publishes them in order. If the broker is gone, publishes fail
or stall there, the queue fills, and the oldest messages are dropped and
counted: the bus is for observers (bot fleets, other instances), while
players get their events straight from this server.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from server.bus import EventBus
from server.metrics import Metrics

log = logging.getLogger(__name__)

DEFAULT_CAPACITY = 10_000


class Outbox:
    def __init__(self, bus: EventBus, metrics: Metrics, capacity: int = DEFAULT_CAPACITY) -> None:
        self.bus = bus
        self.metrics = metrics
        self.capacity = capacity
        self._queue: deque[tuple[str, bytes, bool]] = deque()
        self._ready = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="plyarena-outbox")

    def put(self, topic: str, payload: bytes, retain: bool = False) -> None:
        if len(self._queue) >= self.capacity:
            self._queue.popleft()
            self.metrics.bus_dropped_total += 1
        self._queue.append((topic, payload, retain))
        self._idle.clear()
        self._ready.set()

    async def flush(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) until everything queued has been handed to the bus."""
        try:
            async with asyncio.timeout(timeout):
                await self._idle.wait()
        except TimeoutError:
            log.warning("closing with %d bus messages unpublished", len(self._queue))

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await self._ready.wait()
            self._ready.clear()
            while self._queue:
                topic, payload, retain = self._queue.popleft()
                try:
                    await self.bus.publish(topic, payload, retain=retain)
                except asyncio.CancelledError:
                    raise
                except Exception as error:
                    self.metrics.bus_failures_total += 1
                    log.warning("bus publish to %s failed: %s", topic, error)
            self._idle.set()
