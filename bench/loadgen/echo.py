"""The baseline: a minimal websockets echo server, and clients that time its echoes.

The server is the one from the websockets documentation (``async for message
in websocket: await websocket.send(message)``), run in a process of its own like
the game server, so the same load generators can measure what this machine does
with WebSockets and nothing else. The game server does far more per message
(decode, validate, play, commit, broadcast to two players), so a fair reading
is the ratio of its moves to these echoes under the same clients and pacing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from multiprocessing.connection import Connection

from websockets.asyncio.connection import broadcast
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from bench.loadgen.direct import DirectClient
from bench.loadgen.limits import raise_open_files_limit
from bench.loadgen.recording import Pacing, Recorder
from server import eventloop

ECHO_HOST = "127.0.0.1"


async def echo(websocket: ServerConnection) -> None:
    with contextlib.suppress(ConnectionClosed):  # the bench drops its connections without a close frame
        async for message in websocket:
            await websocket.send(message)


def serve_echo(port_out: Connection) -> None:
    """The echo server process: listen on a free port, send it through ``port_out``, serve until SIGTERM."""
    raise_open_files_limit()
    os.setsid()  # its own session, as the game server runs in (see bench.loadgen.target)
    eventloop.run(_serve_until_terminated(port_out))


async def _serve_until_terminated(port_out: Connection) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    async with serve(echo, ECHO_HOST, 0, compression=None) as server:
        port_out.send(server.sockets[0].getsockname()[1])
        await stop.wait()


class EchoPinger:
    """One connection that sends a payload when its beat is due and times the echo."""

    def __init__(self, websocket: DirectClient, payload: bytes, pacing: Pacing, recorder: Recorder) -> None:
        self.websocket = websocket
        self.payload = payload
        self.pacing = pacing
        self.recorder = recorder
        self.beat = pacing.new_beat()
        self.sent_at = 0.0
        self.loop = asyncio.get_running_loop()
        websocket.on_message = self._echoed  # (as the scripted players read theirs: see bench.loadgen.direct)
        pacing.request(self.beat, self._send)

    def _send(self) -> None:
        self.sent_at = self.loop.time()
        broadcast([self.websocket], self.payload, text=True)

    def _echoed(self, _: bytes) -> None:
        self.recorder.round_trip(self.sent_at, self.loop.time())
        self.pacing.request(self.beat, self._send)

    def stop(self) -> None:
        self.websocket.on_message = None
