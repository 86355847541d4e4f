"""Keepalive pings spread over their interval (server/keepalive.py), on a real websockets server."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from server.keepalive import SpreadPings

INTERVAL_S = 1.0
CONNECTIONS = 40


class _RecordedPings(SpreadPings):
    """Notes when each of its pings goes out."""

    pinged_at: ClassVar[list[float]] = []

    async def ping(self, data: object = None) -> asyncio.Future[float]:
        self.pinged_at.append(self.loop.time())
        return await super().ping(data)  # type: ignore[arg-type]


async def _hold(websocket: ServerConnection) -> None:
    await websocket.wait_closed()


async def test_connections_opened_together_ping_spread_over_one_interval() -> None:
    pinged_at: ClassVar[list[float]] = []
    recorded = type("Recorded", (_RecordedPings,), {"__slots__": (), "pinged_at": pinged_at})
    async with serve(_hold, "127.0.0.1", 0, create_connection=recorded, ping_interval=INTERVAL_S) as server:
        port = server.sockets[0].getsockname()[1]
        started = asyncio.get_running_loop().time()
        clients = [
            await connect(f"ws://127.0.0.1:{port}", ping_interval=None, compression=None)
            for _ in range(CONNECTIONS)
        ]
        opened = asyncio.get_running_loop().time()
        await asyncio.sleep(2.2 * INTERVAL_S)  # (every first ping is due within two intervals)
        first = sorted(pinged_at)[:CONNECTIONS]
        for client in clients:
            await client.close()
    assert len(pinged_at) >= CONNECTIONS, "every connection pings"
    assert first[0] >= started + INTERVAL_S, "none before one whole interval"
    assert first[-1] <= opened + 2 * INTERVAL_S + 0.1, "each within two"
    assert first[-1] - first[0] > INTERVAL_S / 2, f"spread over the interval, not together: {first}"
