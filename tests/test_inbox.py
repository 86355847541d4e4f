"""Messages handed over by ``Inbox.serve_messages`` (server/inbox.py) keep what websockets' ``recv``
promises, on a real websockets server: in order, whole, checked, with reading paused while they pile up,
and those that came before the close handled before the handler returns. One at a time, too: the next
waits for the task handling the last."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.messages import MAX_FRAGMENTS
from websockets.asyncio.server import ServerConnection, serve
from websockets.frames import CloseCode

from server.inbox import Inbox, KeptLists


class Reader:
    """A server that hands every message of its one connection to :meth:`handle` with ``serve_messages``."""

    def __init__(self) -> None:
        self.messages: list[str | bytes] = []
        self.connection: Inbox | None = None
        self.go = asyncio.Event()
        """Set to let messages be handled: until then, the first waits and the rest pile up."""
        self.go.set()
        self.done = asyncio.Event()
        self.handling = 0
        self.most_at_once = 0

    async def handle(self, message: str | bytes) -> None:
        self.handling += 1
        self.most_at_once = max(self.most_at_once, self.handling)
        try:
            await self.go.wait()
            await asyncio.sleep(0)  # (a handler that waits: the next message must still wait for it)
            if message == "boom":
                raise RuntimeError("a handler that fails")
            self.messages.append(message)
        finally:
            self.handling -= 1

    async def handler(self, websocket: ServerConnection) -> None:
        assert isinstance(websocket, Inbox)
        self.connection = websocket
        try:
            await websocket.serve_messages(self.handle)
        finally:
            self.done.set()

    @property
    def close_code(self) -> int | None:
        assert self.connection is not None
        return self.connection.close_code


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
    assert reader.close_code == CloseCode.NORMAL_CLOSURE
    assert reader.most_at_once == 1


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


async def test_the_messages_before_the_close_are_handled_before_the_handler_returns() -> None:
    reader = Reader()
    reader.go.clear()
    async with reading(reader) as client:
        for index in range(5):
            await client.send(f"m{index}")
        await client.close()
        await asyncio.sleep(0.2)
        assert reader.close_code == CloseCode.NORMAL_CLOSURE
        assert not reader.done.is_set(), "the handler waits for the messages that came before the close"
        reader.go.set()
        await asyncio.wait_for(reader.done.wait(), 5)
    assert reader.messages == [f"m{index}" for index in range(5)]
    assert reader.most_at_once == 1


async def test_a_handler_that_fails_is_logged_and_the_next_message_is_handled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = Reader()
    with caplog.at_level(logging.ERROR):
        async with reading(reader) as client:
            for message in ("before", "boom", "after"):
                await client.send(message)
        await asyncio.wait_for(reader.done.wait(), 5)
    assert reader.messages == ["before", "after"]
    assert any("handling a message failed" in record.getMessage() for record in caplog.records)


async def test_the_protocol_keeps_its_two_lists_for_good() -> None:
    reader = Reader()
    async with reading(reader) as client:
        await client.send("one")
        async with asyncio.timeout(5):
            while not reader.messages:
                await asyncio.sleep(0.01)
        connection = reader.connection
        assert connection is not None
        protocol = connection.protocol
        assert isinstance(protocol, KeptLists)
        events, writes = protocol.events, protocol.writes
        await client.send("two")
        await connection.send("an answer")
        assert await client.recv() == "an answer"
        async with asyncio.timeout(5):
            while len(reader.messages) < 2:
                await asyncio.sleep(0.01)
        assert protocol.events is events and protocol.writes is writes
        assert events == [] and writes == []
    assert reader.messages == ["one", "two"]
