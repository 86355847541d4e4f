"""Keepalive pings spread over their interval, for quiet connections only (server/keepalive.py), on a real
websockets server."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.frames import CloseCode

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


SHORT_INTERVAL_S = 0.2


async def _echo(websocket: ServerConnection) -> None:
    async for message in websocket:
        await websocket.send(message)


class _PingedPorts(SpreadPings):
    """Notes the client port of each connection it pings."""

    ports: ClassVar[list[int]] = []

    async def ping(self, data: object = None) -> asyncio.Future[float]:
        self.ports.append(self.remote_address[1])
        return await super().ping(data)  # type: ignore[arg-type]


async def test_only_quiet_connections_are_pinged() -> None:
    """A client that talks at least once a beat is never pinged; a quiet one is, at every beat."""
    ports: list[int] = []
    logged = type("Logged", (_PingedPorts,), {"__slots__": (), "ports": ports})
    async with serve(
        _echo, "127.0.0.1", 0, create_connection=logged, ping_interval=SHORT_INTERVAL_S
    ) as server:
        port = server.sockets[0].getsockname()[1]
        talker = await connect(f"ws://127.0.0.1:{port}", ping_interval=None, compression=None)
        quiet = await connect(f"ws://127.0.0.1:{port}", ping_interval=None, compression=None)
        for _ in range(int(8 * SHORT_INTERVAL_S / 0.05)):
            await talker.send("still here")
            assert await talker.recv() == "still here"
            await asyncio.sleep(0.05)
        talker_port, quiet_port = talker.local_address[1], quiet.local_address[1]
        await talker.close()
        await quiet.close()
    assert talker_port not in ports, "a connection that talks needs no ping"
    assert 4 <= ports.count(quiet_port) <= 8, f"a quiet one gets one a beat: {ports.count(quiet_port)} in 8"


async def test_a_quiet_connection_that_never_answers_is_closed() -> None:
    async with serve(
        _hold,
        "127.0.0.1",
        0,
        create_connection=SpreadPings,
        ping_interval=SHORT_INTERVAL_S,
        ping_timeout=SHORT_INTERVAL_S,
        close_timeout=SHORT_INTERVAL_S,  # (the peer answers no closing handshake either)
    ) as server:
        port = server.sockets[0].getsockname()[1]
        client = await connect(f"ws://127.0.0.1:{port}", ping_interval=None, compression=None)
        client.transport.pause_reading()  # (reads nothing more, so answers no ping)
        (connection,) = server.connections
        await asyncio.wait_for(connection.wait_closed(), timeout=6 * SHORT_INTERVAL_S)
        client.transport.abort()
    sent = connection.protocol.close_sent  # (the peer sent no close frame of its own)
    assert sent is not None
    assert (sent.code, sent.reason) == (CloseCode.INTERNAL_ERROR, "keepalive ping timeout")
