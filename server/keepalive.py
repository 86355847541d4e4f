"""Keepalive pings spread over their interval, however the connections came.

websockets pings each connection every ``ping_interval`` (20 s) from the moment
it opened. Connections opened together (every client of a restarted server
coming back at once; a load test's thousands) then ping together for as long as
they last: 10,000 connections opened within 6 s gave some 1,700 pings a second
for 6 s of every 20, a wave that took the server from some 0.65 of a core to
0.8 and more at 5,000 moves a second and held moves back (docs/performance.md,
2026-11-24). Waiting a random part of one interval before the first ping spreads
them evenly: 500 a second for 10,000 connections, all the time.
"""

from __future__ import annotations

import asyncio
import random

from websockets.asyncio.server import ServerConnection


class SpreadPings(ServerConnection):
    """A server connection whose keepalive pings start after a random part of one ping interval."""

    __slots__ = ()

    async def keepalive(self) -> None:
        # (the keepalive task starts with the connection, as websockets' own: what a connection holds
        # is the same from its first second, as ``plyarena bench server`` measures it then)
        assert self.ping_interval is not None
        await asyncio.sleep(random.random() * self.ping_interval)
        await super().keepalive()
