"""Keepalive pings spread over their interval, however the connections came.

websockets pings each connection every ``ping_interval`` (20 s) from the moment
it opened. Connections opened together (every client of a restarted server
coming back at once; a load test's thousands) then ping together for as long as
they last: 10,000 connections opened within 6 s gave some 1,700 pings a second
for 6 s of every 20, a wave that took the server from some 0.65 of a core to 0.8 and more at
5,000 moves a second and held moves back (docs/performance.md, 2026-11-24).
Waiting a random part of one interval before the first ping spreads them evenly:
500 a second for 10,000 connections, all the time.
"""

from __future__ import annotations

import asyncio
import random

from websockets.asyncio.server import ServerConnection
from websockets.protocol import State


class SpreadPings(ServerConnection):
    """A server connection whose keepalive pings start after a random part of one ping interval."""

    __slots__ = ("_first_ping",)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._first_ping: asyncio.TimerHandle | None = None

    def start_keepalive(self) -> None:
        # (a timer rather than a coroutine that sleeps first: that would stay alive, one more object
        # a connection, for as long as the connection lasts)
        if self.ping_interval is not None:
            self._first_ping = self.loop.call_later(random.random() * self.ping_interval, self._start_pinging)

    def _start_pinging(self) -> None:
        self._first_ping = None
        if self.state is State.OPEN:
            super().start_keepalive()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._first_ping is not None:
            self._first_ping.cancel()
            self._first_ping = None
        super().connection_lost(exc)
