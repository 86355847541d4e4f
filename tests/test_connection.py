"""Connections (server/connection.py) and their listener (server/listener.py), on real sockets: messages
handed over one at a time, in order, whole and checked, reading paused while they pile up, the closed
callback after the messages that came before the close; sending that never waits; keepalive pings for
quiet connections only; a close that says 1001; the openings cap."""

from __future__ import annotations

import asyncio
import fcntl
import logging
import struct
import termios
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.http11 import Request, Response
from websockets.protocol import OPEN
from websockets.server import ServerProtocol

from server.addresses import AddressQuota, Allowance
from server.connection import MAX_FRAGMENTS, MAX_QUEUE_HIGH, Connection
from server.listener import Listener


def _quota(max_connections: int = 0) -> AddressQuota:
    """Loopback counted like any client (no network uncapped)."""
    return AddressQuota(max_connections, Allowance(1000, 1000), Allowance(1000, 1000), uncapped=())


class Reader:
    """The server's side: every message of every connection noted, one at a time."""

    def __init__(self) -> None:
        self.messages: list[str | bytes] = []
        self.connections: list[Connection] = []
        self.go = asyncio.Event()
        """Set to let messages be handled: until then, the first waits and the rest pile up."""
        self.go.set()
        self.done = asyncio.Event()
        self.handling = 0
        self.most_at_once = 0
        self.refused = 0

    async def process_request(self, connection: Connection, request: Request) -> Response | None:
        if request.path == "/plain":
            return connection.protocol.reject(200, "plain\n")
        if request.path == "/boom":
            raise RuntimeError("a front that fails")
        return None

    def opened(self, connection: Connection, request: Request) -> bool:
        assert request.headers["Host"]  # (still there when opened is called)
        self.connections.append(connection)
        return True

    async def received(self, connection: Connection, message: str | bytes) -> None:
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

    async def closed(self, connection: Connection) -> None:
        self.done.set()

    def count_refused(self) -> None:
        self.refused += 1

    @property
    def connection(self) -> Connection:
        (connection,) = self.connections
        return connection


@asynccontextmanager
async def listening(reader: Reader, **options: Any) -> AsyncIterator[tuple[Listener, int]]:
    options.setdefault("quota", _quota())
    listener = await Listener.start(
        "127.0.0.1",
        0,
        process_request=reader.process_request,
        opened=reader.opened,
        received=reader.received,
        closed=reader.closed,
        refused=reader.count_refused,
        **options,
    )
    await listener.start_serving()
    try:
        yield listener, listener.sockets[0].getsockname()[1]
    finally:
        listener.close()
        await asyncio.wait_for(listener.wait_closed(), 10)


@asynccontextmanager
async def reading(reader: Reader, **options: Any) -> AsyncIterator[ClientConnection]:
    async with (
        listening(reader, **options) as (_, port),
        connect(f"ws://127.0.0.1:{port}", compression=None, max_size=None, ping_interval=None) as client,
    ):
        yield client


async def test_messages_come_in_order_text_as_str_binary_as_bytes_then_the_close() -> None:
    reader = Reader()
    async with reading(reader) as client:
        for message in ("one", b"\x00two", "thr\u00e9e"):
            await client.send(message)
    await asyncio.wait_for(reader.done.wait(), 5)
    assert reader.messages == ["one", b"\x00two", "thr\u00e9e"]
    assert client.close_code == CloseCode.NORMAL_CLOSURE
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
        await client.send("never handled")
        await asyncio.wait_for(client.wait_closed(), 5)
    await asyncio.wait_for(reader.done.wait(), 5)
    assert reader.messages == ["fine"]
    assert client.close_code == CloseCode.INVALID_DATA
    assert client.close_reason == "invalid start byte at position 0"


async def test_too_many_fragments_fail_the_connection_with_1009() -> None:
    reader = Reader()
    async with reading(reader) as client:
        await client.send([""] * (MAX_FRAGMENTS + 1))
        await asyncio.wait_for(client.wait_closed(), 5)
    await asyncio.wait_for(reader.done.wait(), 5)
    assert reader.messages == []
    assert (client.close_code, client.close_reason) == (CloseCode.MESSAGE_TOO_BIG, "too many fragments")


async def test_a_frame_over_max_size_fails_the_connection_with_1009() -> None:
    reader = Reader()
    async with reading(reader, max_size=1000) as client:
        await client.send("x" * 1000)
        await client.send("x" * 1001)
        await asyncio.wait_for(client.wait_closed(), 5)
    await asyncio.wait_for(reader.done.wait(), 5)
    assert reader.messages == ["x" * 1000]
    assert client.close_code == CloseCode.MESSAGE_TOO_BIG


async def test_reading_pauses_while_messages_pile_up_and_resumes_once_they_are_read() -> None:
    reader = Reader()
    reader.go.clear()
    async with reading(reader) as client:
        count = MAX_QUEUE_HIGH + 10
        for index in range(count):
            await client.send(f"m{index}")
        await asyncio.sleep(0.2)
        transport = reader.connection.transport
        assert transport is not None
        assert not transport.is_reading(), "paused past the high water mark"
        reader.go.set()
        await client.send("last")
        async with asyncio.timeout(5):
            while len(reader.messages) < count + 1:
                await asyncio.sleep(0.01)
        assert transport.is_reading(), "resumed"
    assert reader.messages == [*(f"m{index}" for index in range(count)), "last"]
    assert reader.most_at_once == 1


async def test_the_closed_callback_runs_after_the_messages_before_the_close() -> None:
    reader = Reader()
    reader.go.clear()
    async with reading(reader) as client:
        for index in range(5):
            await client.send(f"m{index}")
        await client.close()
        await asyncio.sleep(0.2)
        assert reader.connection.protocol.close_rcvd is not None
        assert not reader.done.is_set(), "the closed callback waits for the messages before the close"
        reader.go.set()
        await asyncio.wait_for(reader.done.wait(), 5)
    assert reader.messages == [f"m{index}" for index in range(5)]


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


async def test_pushing_to_a_reader_that_stopped_reading_aborts_it_past_max_buffer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = Reader()
    with caplog.at_level(logging.WARNING, logger="server.connection"):
        async with reading(reader, max_buffer=64 * 1024) as client:
            client.transport.pause_reading()
            connection = reader.connection
            transport = connection.transport
            assert transport is not None
            chunk = b"x" * 65536
            for _ in range(2000):  # (at most 128 MiB: the socket buffers hold a few)
                connection.push(chunk)
                if transport.is_closing():
                    break
                await asyncio.sleep(0)
            assert transport.is_closing()
            connection.push(chunk)  # (once aborted, more goes nowhere, and nothing is logged twice)
            await asyncio.wait_for(reader.done.wait(), 5)
            client.transport.abort()
    warnings = [record for record in caplog.records if "bytes unread" in record.getMessage()]
    assert len(warnings) == 1


async def test_a_reader_that_never_reads_is_cut_once_the_server_holds_max_buffer_for_it() -> None:
    """What the server holds for it counts the kernel's send queue too, which Linux would grow by some
    4 MiB of its own; the bytes the client's kernel has taken are the client's to hold."""
    reader, limit = Reader(), 1 << 20
    async with reading(reader, max_buffer=limit) as client:
        client.transport.pause_reading()
        client_socket = client.transport.get_extra_info("socket")
        async with asyncio.timeout(5):
            while not reader.connections:
                await asyncio.sleep(0.01)
        connection = reader.connection
        transport = connection.transport
        assert transport is not None
        message, sent, held = b"x" * 1000, 0, 0
        while not transport.is_closing() and sent < 16 * limit:
            taken = struct.unpack("i", fcntl.ioctl(client_socket.fileno(), termios.FIONREAD, b"\0" * 4))[0]
            held = sent - taken
            connection.push(message)
            sent += len(message) + 4  # (and its frame's header)
            await asyncio.sleep(0)
        assert transport.is_closing()
        client.transport.abort()
    assert limit - 64 * 1024 < held <= limit, f"cut with {held} bytes held, past {limit}"


async def test_nothing_is_sent_once_the_closing_handshake_has_begun() -> None:
    """After a close frame, RFC 6455 allows no data frame."""
    reader = Reader()
    async with reading(reader) as client:
        await client.send("hello")
        async with asyncio.timeout(5):
            while not reader.connections:
                await asyncio.sleep(0.01)
        connection = reader.connection
        connection.push(b'"before"')
        connection.close(CloseCode.GOING_AWAY, "bye")
        assert connection.protocol.state is not OPEN
        connection.push(b'"after"')
        received = [message async for message in client]
    assert received == ['"before"']
    assert (client.close_code, client.close_reason) == (CloseCode.GOING_AWAY, "bye")


async def _http(port: int, path: str) -> bytes:
    stream_reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
    answer = await asyncio.wait_for(stream_reader.read(), 5)  # (to the end: the server half-closes)
    writer.close()
    return answer


async def test_the_http_front_answers_a_plain_get_on_the_same_port() -> None:
    reader = Reader()
    async with listening(reader) as (listener, port):
        answer = await _http(port, "/plain")
        failed = await _http(port, "/boom")
        async with asyncio.timeout(5):
            while listener.connections:
                await asyncio.sleep(0.01)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ")
    assert b"\r\nServer: Ply Arena" in head
    assert body == b"plain\n"
    assert failed.startswith(b"HTTP/1.1 500 ")
    assert reader.connections == [] and not reader.done.is_set(), "no connection opened, none closed"


class _PingsSent:
    """The protocols that sent each ping, noted."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.protocols: list[ServerProtocol] = []
        self.times: list[float] = []
        send_ping = ServerProtocol.send_ping

        def noted(protocol: ServerProtocol, data: bytes) -> None:
            self.protocols.append(protocol)
            self.times.append(asyncio.get_running_loop().time())
            send_ping(protocol, data)

        monkeypatch.setattr(ServerProtocol, "send_ping", noted)


INTERVAL_S = 1.0
SHORT_INTERVAL_S = 0.2


async def test_connections_opened_together_ping_spread_over_one_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pings = _PingsSent(monkeypatch)
    loop = asyncio.get_running_loop()
    pinged_at = pings.times
    reader = Reader()
    async with listening(reader, ping_interval=INTERVAL_S) as (_, port):
        started = loop.time()
        clients = [
            await connect(f"ws://127.0.0.1:{port}", ping_interval=None, compression=None) for _ in range(20)
        ]
        opened = loop.time()
        await asyncio.sleep(2.2 * INTERVAL_S)  # (every first ping is due within two intervals)
        for client in clients:
            await client.close()
    first = sorted(pinged_at)[:20]
    assert len(pinged_at) >= 20, "every quiet connection is pinged"
    assert first[0] >= started + INTERVAL_S, "none before one whole interval"
    assert first[-1] <= opened + 2 * INTERVAL_S + 0.1, "each within two"
    assert first[-1] - first[0] > INTERVAL_S / 2, f"spread over the interval, not together: {first}"


async def test_only_quiet_connections_are_pinged(monkeypatch: pytest.MonkeyPatch) -> None:
    """A client that talks at least once a beat is never pinged; a quiet one is, at every beat."""
    pings = _PingsSent(monkeypatch)
    reader = Reader()
    async with listening(reader, ping_interval=SHORT_INTERVAL_S) as (_, port):
        talker = await connect(f"ws://127.0.0.1:{port}", ping_interval=None, compression=None)
        quiet = await connect(f"ws://127.0.0.1:{port}", ping_interval=None, compression=None)
        for _ in range(int(8 * SHORT_INTERVAL_S / 0.05)):
            await talker.send("still here")
            await asyncio.sleep(0.05)
        talking, silent = (connection.protocol for connection in reader.connections)
        await talker.close()
        await quiet.close()
    assert talking not in pings.protocols, "a connection that talks needs no ping"
    count = pings.protocols.count(silent)
    assert 4 <= count <= 8, f"a quiet one gets one a beat: {count} in 8"


async def test_a_quiet_connection_that_never_answers_is_closed() -> None:
    reader = Reader()
    options = {
        "ping_interval": SHORT_INTERVAL_S,
        "ping_timeout": SHORT_INTERVAL_S,
        "close_timeout": SHORT_INTERVAL_S,  # (the peer answers no closing handshake either)
    }
    async with listening(reader, **options) as (_, port):
        client = await connect(f"ws://127.0.0.1:{port}", ping_interval=None, compression=None)
        client.transport.pause_reading()  # (reads nothing more, so answers no ping)
        await asyncio.wait_for(reader.done.wait(), 6 * SHORT_INTERVAL_S)
        client.transport.abort()
    sent = reader.connection.protocol.close_sent  # (the peer sent no close frame of its own)
    assert sent is not None
    assert (sent.code, sent.reason) == (CloseCode.INTERNAL_ERROR, "keepalive ping timeout")


async def test_closing_the_listener_closes_every_connection_with_1001() -> None:
    reader = Reader()
    async with listening(reader) as (listener, port):
        clients = [await connect(f"ws://127.0.0.1:{port}", ping_interval=None) for _ in range(3)]
        listener.close()
        await asyncio.wait_for(listener.wait_closed(), 5)
        assert listener.connections == set()
        for client in clients:
            await asyncio.wait_for(client.wait_closed(), 5)
            assert client.close_code == CloseCode.GOING_AWAY
        with pytest.raises(OSError):
            await connect(f"ws://127.0.0.1:{port}", open_timeout=2)
    assert reader.done.is_set()


async def _dropped(stream_reader: asyncio.StreamReader) -> bool:
    """Whether the server dropped this socket, within a moment."""
    try:
        return await asyncio.wait_for(stream_reader.read(1), 0.3) == b""
    except TimeoutError:
        return False
    except ConnectionError:
        return True


async def test_sockets_past_the_openings_cap_are_dropped_at_once() -> None:
    reader = Reader()
    async with listening(reader, quota=_quota(max_connections=2)) as (listener, port):
        sockets = [await asyncio.open_connection("127.0.0.1", port) for _ in range(3)]
        assert [await _dropped(stream_reader) for stream_reader, _ in sockets] == [False, False, True]
        assert reader.refused == 1
        # A request read gives the opening back: one more socket may wait for its request.
        _, writer = sockets[0]
        writer.write(b"GET /plain HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        await asyncio.sleep(0.1)
        another = await asyncio.open_connection("127.0.0.1", port)
        assert not await _dropped(another[0])
        assert reader.refused == 1
        for _, writer in [*sockets, another]:
            writer.close()
        async with asyncio.timeout(5):
            while listener.connections:
                await asyncio.sleep(0.01)
    assert listener.quota.openings.held == {}


async def test_a_connection_is_hashable_and_names_itself() -> None:
    reader = Reader()
    async with reading(reader) as client:
        await client.send("hi")
        async with asyncio.timeout(5):
            while not reader.messages:
                await asyncio.sleep(0.01)
        connection = reader.connection
        assert connection in {connection}
        assert repr(connection) == f"<Connection {connection.id} player=None>"
        assert connection.remote_address == client.local_address
    with pytest.raises(ConnectionClosed):
        await client.recv()
