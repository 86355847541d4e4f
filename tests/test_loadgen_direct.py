"""The load generators' client connection (bench/loadgen/direct.py): once its callback is set, every whole
message goes to it in order, fragmented ones put together; before, ``recv`` reads them as usual."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from bench.loadgen.direct import DirectClient


async def talk(websocket: ServerConnection) -> None:
    """Say hello; then, for each message, answer a text, a fragmented text, a binary message, a ping."""
    await websocket.send("welcome")
    async for message in websocket:
        await websocket.send(f"text {message}")
        await websocket.send([f"frag{index} " for index in range(3)])  # (an iterable: fragments)
        await websocket.send(b"\x00binary")
        await websocket.ping()


@asynccontextmanager
async def welcomed() -> AsyncIterator[DirectClient]:
    """A client of :func:`talk`, its welcome read with ``recv``."""
    async with serve(talk, "127.0.0.1", 0, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}", create_connection=DirectClient) as client:
            assert isinstance(client, DirectClient)
            assert await client.recv() == "welcome"
            yield client


class Collected:
    """A callback that keeps the messages it is given, and says when it has ``count`` of them."""

    def __init__(self, count: int) -> None:
        self.messages: list[bytes] = []
        self.count = count
        self.done = asyncio.Event()

    def __call__(self, message: bytes) -> None:
        self.messages.append(message)
        if len(self.messages) == self.count:
            self.done.set()

    async def wait(self) -> list[bytes]:
        await asyncio.wait_for(self.done.wait(), 5)
        return self.messages


async def test_messages_go_to_the_callback_once_set_and_to_recv_before() -> None:
    async with welcomed() as client:
        collected = Collected(6)
        client.on_message = collected
        await client.send("one")
        await client.send("two")
        received = await collected.wait()
    assert received == [
        b"text one",
        b"frag0 frag1 frag2 ",
        b"\x00binary",
        b"text two",
        b"frag0 frag1 frag2 ",
        b"\x00binary",
    ]


async def test_a_callback_that_fails_is_logged_and_the_next_message_still_comes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with welcomed() as client:
        collected = Collected(3)

        def take(message: bytes) -> None:
            collected(message)
            if message == b"text boom":
                raise RuntimeError("a callback that fails")

        client.on_message = take
        with caplog.at_level(logging.ERROR):
            await client.send("boom")
            received = await collected.wait()
    assert received[1:] == [b"frag0 frag1 frag2 ", b"\x00binary"]
    assert any("handling a message failed" in record.getMessage() for record in caplog.records)


async def test_unset_the_messages_go_back_to_recv() -> None:
    async with welcomed() as client:
        client.on_message = lambda message: None
        client.on_message = None
        await client.send("again")
        assert await asyncio.wait_for(client.recv(), 5) == "text again"
        assert await asyncio.wait_for(client.recv(), 5) == "frag0 frag1 frag2 "
