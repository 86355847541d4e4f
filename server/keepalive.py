"""Keepalive pings for quiet connections only, spread over their interval however the connections came.

websockets pings each connection every ``ping_interval`` (20 s) from the moment
it opened, whatever the connection is doing. Two things follow from that:

- Connections opened together (every client of a restarted server coming back
  at once; a load test's thousands) ping together for as long as they last:
  10,000 connections opened within 6 s gave some 1,700 pings a second for 6 s
  of every 20, a wave that took the server from some 0.65 of a core to 0.8 and
  more at 5,000 moves a second and held moves back (docs/performance.md).
  So each connection keeps its own beat, one interval long, that
  starts after a random part of an interval: 500 beats a second for 10,000
  connections, all the time.
- A ping asks "are you there?", and a client that sent a frame since the last
  beat has just answered it. Players in a game send a move every few seconds;
  pinging them too costs a frame each way for nothing (some 2% of the server's
  time at 5,000 moves a second). So a beat pings only a connection that said
  nothing since the previous one. A dead peer is still found: within two
  intervals and the ping timeout, instead of one interval and the timeout.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.frames import CloseCode
from websockets.protocol import Event


class SpreadPings(ServerConnection):
    """A server connection pinged, on a beat of its own, only when it has been quiet for a whole beat."""

    __slots__ = ("heard",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.heard = False
        """Whether a whole frame came from the peer since the last beat (or the last pong awaited)."""

    def process_event(self, event: Event) -> None:
        self.heard = True
        super().process_event(event)

    async def keepalive(self) -> None:
        # (the keepalive task starts with the connection, as websockets' own: what a connection holds
        # is the same from its first second, as ``plyarena bench server`` measures it then)
        interval = self.ping_interval
        assert interval is not None
        await asyncio.sleep(random.random() * interval)
        self.heard = False  # (the handshake's request, and the hello)
        try:
            while True:
                await asyncio.sleep(interval)
                if self.heard:
                    self.heard = False
                    continue
                await self._ping_once()
        except Exception:  # (as websockets' own loop: a failed ping must not go unreported)
            self.logger.error("keepalive ping failed", exc_info=True)

    async def _ping_once(self) -> None:
        """Ping; fail the connection if no pong comes within ``ping_timeout``."""
        # This cannot raise ConnectionClosed: as in websockets' own loop, the connection closing cancels
        # this task first.
        pong_received = await self.ping()
        if self.ping_timeout is None:
            return
        try:
            async with asyncio.timeout(self.ping_timeout):
                await pong_received
        except TimeoutError:
            async with self.send_context():  # (waits for the connection to close, which cancels us)
                self.protocol.fail(CloseCode.INTERNAL_ERROR, "keepalive ping timeout")
            return
        self.heard = False  # (the pong: the next beat asks again, unless something else comes)
