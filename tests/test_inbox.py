"""Messages read with ``Inbox.next_message`` (server/inbox.py) keep what websockets' ``recv`` promises, on a
real websockets server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.messages import MAX_FRAGMENTS
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from server.inbox import Inbox


class Reader:
    """A server whose handler reads every message of its one connection with ``next_message``."""

    def __init__(self) -> None:
        self.messages: list[str | bytes] = []
        self.closed: ConnectionClosed | None = None
        self.connection: Inbox | None = None
        self.go = asyncio.Event()
        """Set to let the handler read: until then, messages pile up."""
        self.go.set()
        self.done = asyncio.Event()

    async def handler(self, websocket: ServerConnection) -> None:
        assert isinstance(websocket, Inbox)
        self.connection = websocket
        try:
            while True:
                await self.go.wait()
                self.messages.append(await websocket.next_message())
        except ConnectionClosed as closed:
            self.closed = closed
        finally:
            self.done.set()


@asynccontextmanager
async def reading(reader: Reader, **options: object) -> AsyncIterator[ClientConnection]:
    async with serve(reader.handler, "127.0.0.1", 0, create_connection=Inbox, **options) as server:  # type: ignore[arg-type]
        port = server.sockets[0].getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}", compression=None, max_size=None) as client:
            yield client


async def test_messages_come_in_order_text_as_str_binary_as_bytes_then_the_close() -> None:
    reader = Reader()
    async with reading(reader) as client:
        for message in ("one", b"\x00two", "thr\u00e9e"):
            await client.send(message)
    await asyncio.wait_for(reader.done.wait(), 5)
    assert reader.messages == ["one", b"\x00two", "thr\u00e9e"]
    assert reader.closed is not None and reader.closed.rcvd is not None
    assert reader.closed.rcvd.code == CloseCode.NORMAL_CLOSURE


async def test_a_fragmented_message_comes_whole() -> None:
    reader = Reader()
    async with reading(reader) as client:
        await client.send(["frag", "men", "ted"])
        await client.send([b"\x01", b"\x02"])
        await client.send("after")
    await asyncio.wait_for(reader.done.wait(), 5)
    assert reader.messages == ["fragmented", b"\x01\x02", "after"]


async def test_text_that_is_not_utf8_fails_the_connection_after_the_messages_before_it() -> None:
    reader = Reader()
    async with reading(reader) as client:
        await client.send("fine")
        await client.send(b"\xff\xfe not utf-8", text=True)  # (bytes sent as text are not checked)
        await asyncio.wait_for(client.wait_closed(), 5)
    await asyncio.wait_for(reader.done.wait(), 5)
    assert reader.messages == ["fine"]
    assert client.close_code == CloseCode.INVALID_DATA
    assert "invalid start byte" in (client.close_reason or "")


async def test_too_many_fragments_fail_the_connection_with_1009() -> None:
    reader = Reader()
    async with reading(reader) as client:
        await client.send([""] * (MAX_FRAGMENTS + 1))
        await asyncio.wait_for(client.wait_closed(), 5)
    await asyncio.wait_for(reader.done.wait(), 5)
    assert reader.messages == []
    assert (client.close_code, client.close_reason) == (CloseCode.MESSAGE_TOO_BIG, "too many fragments")


async def test_reading_pauses_while_messages_pile_up_and_resumes_once_they_are_read() -> None:
    reader = Reader()
    reader.go.clear()
    async with reading(reader, max_queue=4) as client:
        for index in range(20):
            await client.send(f"m{index}")
        await asyncio.sleep(0.2)
        connection = reader.connection
        assert connection is not None
        assert not connection.transport.is_reading(), "paused past max_queue"
        reader.go.set()
        await client.send("last")
        async with asyncio.timeout(5):
            while len(reader.messages) < 21:
                await asyncio.sleep(0.01)
        assert connection.transport.is_reading(), "resumed"
    assert reader.messages == [*(f"m{index}" for index in range(20)), "last"]
