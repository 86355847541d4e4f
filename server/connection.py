"""One client connection: an asyncio protocol of ours driving websockets' sans-I/O ``ServerProtocol``
through its public API, as websockets' own asyncio shell does (``websockets.asyncio.connection``).

Sending never waits: a message is pushed into the write buffer at once (as ``websockets.broadcast``
does), so a slow reader never holds up a match; one that lets too much pile up is dropped instead. What
piles up is counted where it lies: in the transport's buffer and in the kernel's send queue, which Linux
would otherwise grow to 4 MiB of its own (``net.ipv4.tcp_wmem``) on top of ours, so the socket's send
buffer is held to a quarter of the allowance.

Each connection has one task, as a handler of websockets' own asyncio server has: it answers the opening
handshake (and each next plain HTTP request of a kept-alive connection, see server/keepalive.py), then
hands the server each message in turn (those that come meanwhile wait in a deque, made only while some
wait, and reading pauses while too many wait), and once the socket is closed and every message before
the close is handled, tells the server so.

Keepalive pings go only to quiet connections, spread over their interval. Connections opened together
(every client of a restarted server coming back at once) would otherwise ping together for as long as
they last, a wave that held moves back (docs/performance.md): so each keeps its own beat, one interval
long, starting after a random part of one. And a client that sent a frame since the last beat has just
answered "are you there?": a beat pings only a connection that said nothing since the previous one. A
dead peer is still found, within two intervals and the ping timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import http
import itertools
import logging
import random
import socket
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from websockets.frames import CloseCode, Frame, Opcode
from websockets.http11 import Request, Response
from websockets.protocol import CONNECTING, OPEN
from websockets.server import ServerProtocol

from server.http_headers import add_security_headers
from server.keepalive import head_end, next_tail, wants_keep_alive
from server.protocol import ServerMessage, encode
from server.send_queue import unsent_bytes
from server.storage.records import PlayerRecord
from server.token_bucket import TokenBucket

if TYPE_CHECKING:
    from server.addresses import Address
    from server.listener import Listener

log = logging.getLogger(__name__)

MAX_FRAGMENTS = 4096
"""Fragments one message may have (as websockets' own ``recv``): empty ones add nothing to ``max_size``."""
MAX_QUEUE_HIGH, MAX_QUEUE_LOW = 16, 4
"""Reading pauses while more messages than the first wait to be handled, and resumes at the second."""
TASK_NAME = "plyarena-connection"
"""The name of every connection's task (a name given: "Task-N" would be formatted for each)."""

_TOO_MANY: list[Frame] = []
"""In place of the fragments of a message that had too many: the rest of it is dropped."""
_ids = itertools.count(1)


class ArenaProtocol(ServerProtocol):
    """websockets' server protocol, whose own answers carry our security headers too: every refusal it
    makes (a request line or headers too long, a bad upgrade) is made by :meth:`reject`."""

    def reject(self, status: http.HTTPStatus | int, text: str) -> Response:
        response = super().reject(status, text)
        add_security_headers(response.headers)
        return response


class Connection(asyncio.Protocol):
    """A WebSocket client as the server sees it; hashable, so it can sit in watcher sets."""

    __slots__ = (
        "_beat",
        "_failed",
        "_fragments",
        "_heard",
        "_held",
        "_lost",
        "_messages",
        "_next_request",
        "_opened",
        "_opening",
        "_paused",
        "_ping",
        "_served",
        "_tail",
        "_task",
        "_timer",
        "_waiter",
        "address",
        "bucket",
        "id",
        "listener",
        "matches",
        "max_buffer",
        "player",
        "protocol",
        "transport",
        "trusted_fleet",
    )

    def __init__(self, listener: Listener) -> None:
        self.listener = listener
        self.protocol = self._new_protocol()
        self.transport: asyncio.Transport | None = None
        self.id = next(_ids)
        self.bucket = TokenBucket(listener.rate_per_s, listener.rate_burst)
        self.max_buffer = listener.max_buffer
        self.address: Address | None = None
        """The client's address (behind trusted proxies), by which its allowances are counted."""
        self.player: PlayerRecord | None = None
        self.trusted_fleet = False
        """Whether its ``hello`` proved the server's fleet key: only then may it speak for a fleet."""
        self.matches: set[str] = set()
        """Ids of the matches whose events this connection receives."""
        self._opening: tuple[str | None] | None = None
        """The key this socket counts against in its peer's openings, until its request is read."""
        self._timer: asyncio.TimerHandle | None = None
        """The open timeout, then the close timeout once a close is expected."""
        self._beat: asyncio.TimerHandle | None = None
        self._ping: bytes | None = None
        self._heard = False
        """Whether a frame came from the peer since the last beat (or the last pong awaited)."""
        self._fragments: list[Frame] | None = None
        self._messages: deque[tuple[Opcode | None, bytes]] | None = None
        """Whole messages waiting (``None`` as opcode: one of too many fragments); only while some wait."""
        self._task: asyncio.Task[None] | None = None
        """The connection's one task (see :meth:`_serve`), from its request on."""
        self._waiter: asyncio.Future[None] | None = None
        """What the task awaits while no message waits: set by the next message, or by the close."""
        self._held: bytearray | None = None
        """Bytes past the request being answered, kept for what reads them next; ``None``: none is."""
        self._tail = b""
        """The last bytes of the request head read so far, to find its end across reads."""
        self._served = 0
        """The HTTP requests answered (a kept-alive connection answers several)."""
        self._next_request: Request | None = None
        self._paused = False
        self._opened = False
        self._failed = False
        self._lost = False

    @property
    def player_id(self) -> str | None:
        return None if self.player is None else self.player.id

    @property
    def remote_address(self) -> Any:
        return None if self.transport is None else self.transport.get_extra_info("peername")

    def send(self, message: ServerMessage) -> None:
        self.push(encode(message))

    def push(self, data: bytes) -> None:
        """Queue an already encoded message, without waiting; close a client that stopped reading."""
        transport = self.transport
        if transport is None:
            return
        if transport.is_closing():  # (dropped: messages sent its way until it is gone go nowhere)
            return
        buffered = transport.get_write_buffer_size()
        # (The kernel's queue asked only once ours holds anything: until then it is not full.)
        if buffered and buffered + unsent_bytes(transport) > self.max_buffer:
            log.warning("closing %s: more than %d bytes unread", self.remote_address, self.max_buffer)
            transport.abort()
            return
        if self.protocol.state is not OPEN:  # (closing: nothing more may be sent)
            return
        try:
            self.protocol.send_text(data)
            self._flush()
        except Exception as error:  # (as broadcast: one connection's failure is not the sender's)
            log.warning("skipped a message to %s: %s", self.remote_address, error)

    def close(self, code: int = CloseCode.NORMAL_CLOSURE, reason: str = "") -> None:
        """Start the closing handshake; the socket is dropped if the peer does not finish it in time.
        A kept-alive HTTP connection waiting for its next request is closed at once."""
        if self._served and self._held is None and self.protocol.state is CONNECTING and self.transport:
            self.transport.close()
            return
        if self.protocol.state is not OPEN:
            return
        self.protocol.send_close(code, reason)
        self._flush()
        self._arm_close()

    def __repr__(self) -> str:
        return f"<Connection {self.id} player={self.player_id}>"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # (uvloop's is not a subclass of asyncio's)
        self.transport = transport
        listener = self.listener
        listener.connections.add(self)
        # A socket that sends nothing, or a byte at a time, holds a file descriptor until the open
        # timeout: counted only once its request is read, one address could leave the server none.
        key = listener.quota.peer_key(transport.get_extra_info("peername"))
        if not listener.quota.openings.take(key):
            listener.refused()
            transport.abort()
            return
        self._opening = (key,)
        self._timer = asyncio.get_running_loop().call_later(listener.open_timeout, transport.abort)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, max(self.max_buffer // 4, 4096))

    def data_received(self, data: bytes) -> None:
        if self._held is not None:  # (a request is being answered: what follows waits for its answer)
            self._held += data
            if not self._paused and self.transport is not None:
                self._paused = True
                self.transport.pause_reading()
            return
        protocol = self.protocol
        if protocol.state is CONNECTING:
            end = head_end(self._tail, data)
            if end is None:
                self._tail = next_tail(self._tail, data)
            else:
                self._held, self._tail = bytearray(data[end:]), b""
                data = data[:end]
        protocol.receive_data(data)
        events = protocol.events_received()
        self._flush()  # (answers to pings and to a close)
        if protocol.close_expected():
            self._arm_close()
        for event in events:
            if isinstance(event, Frame):
                self._frame(event)
            elif isinstance(event, Request):
                self._request(event)

    def eof_received(self) -> None:
        self.protocol.receive_eof()
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.protocol.receive_eof()
        self._lost = True
        self._give_back_opening()
        for timer in (self._timer, self._beat):
            if timer is not None:
                timer.cancel()
        self._timer = self._beat = None
        if self._task is None:  # (no request came: nothing was opened, nothing waits)
            self.listener.forget(self)
        else:
            self._wake()

    def _flush(self) -> None:
        """Write what the protocol has to send; an empty chunk is its end of the stream."""
        transport = self.transport
        assert transport is not None
        for data in self.protocol.data_to_send():
            if data:
                transport.write(data)
            elif transport.can_write_eof():
                with contextlib.suppress(Exception):  # (undocumented; uvloop can raise RuntimeError)
                    transport.write_eof()
            else:
                transport.close()

    def _arm_close(self) -> None:
        """Drop the socket if it is not closed within the close timeout (once; the open timeout, while it
        runs, bounds a failed handshake)."""
        if self._timer is None and self.transport is not None and not self._lost:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.listener.close_timeout, self.transport.abort)

    def _fail(self, code: CloseCode, reason: str) -> None:
        """Fail the connection; what waits to be handled is dropped."""
        self._failed = True
        self._messages = None
        self.protocol.fail(code, reason)
        self._flush()
        self._arm_close()

    def _give_back_opening(self) -> None:
        if self._opening is not None:
            self.listener.quota.openings.give_back(self._opening[0])
            self._opening = None

    def _request(self, request: Request) -> None:
        self._give_back_opening()
        if self._task is None:
            # A ``Task`` made directly, and named: ``create_task`` would name it "Task-N", formatted
            # each time.
            self._task = asyncio.Task(self._serve(request), name=TASK_NAME)
            return
        # A kept-alive connection's next request, for its task waiting in :meth:`_answer`; answered within
        # the open timeout, as the first.
        self._next_request = request
        self._arm_timer(self.listener.open_timeout)
        self._wake()

    async def _serve(self, request: Request) -> None:
        """The connection's one task: answer ``request`` (and the next ones while the connection is kept
        alive), hand the server each message in turn, and once the socket is closed and every message
        before the close is handled, tell the server (once)."""
        await self._answer(request)
        received, loop = self.listener.received, asyncio.get_running_loop()
        while True:
            messages = self._messages
            if not messages:
                if self._lost:
                    break
                self._waiter = loop.create_future()
                await self._waiter  # (until a message comes, or the close)
                continue
            message = self._take(messages)
            if message is None:
                continue
            try:
                await received(self, message)
            except Exception:
                self.listener.logger.error("handling a message failed", exc_info=True)
        try:
            if self._opened:
                await self.listener.closed(self)
        except Exception:
            self.listener.logger.error("closing a connection failed", exc_info=True)
        finally:
            self.listener.forget(self)

    def _wake(self) -> None:
        """Wake the task if it waits for a message (or the close)."""
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def _answer(self, request: Request) -> None:
        """Answer ``request``, and each next one while the connection is kept alive, until one is upgraded
        or answered with ``Connection: close``, or the connection is lost."""
        loop = asyncio.get_running_loop()
        while await self._handshake(request):
            while self._next_request is None:
                if self._lost:
                    return
                self._waiter = loop.create_future()
                await self._waiter  # (until the next request comes, or the close)
            request, self._next_request = self._next_request, None

    async def _handshake(self, request: Request) -> bool:
        """Answer the request: the HTTP front's response, or the upgrade (then the connection is open).
        ``True``: a plain answer that keeps the connection for another request."""
        try:
            response = await self._response(request)
            if self.protocol.state is not CONNECTING or self._lost:  # (closed meanwhile)
                return False
            self._served += 1
            if response.status_code == 101:
                self.protocol.send_response(response)
                self._flush()
                self._open(request, response)
                self._read_held()
                return False
            kept = self._keeps_alive(request)
            if "Connection" in response.headers:
                del response.headers["Connection"]
            response.headers["Connection"] = "keep-alive" if kept else "close"
            if not kept:
                self.protocol.send_response(response)
                self._flush()  # (a response that is not the upgrade ends the stream: the socket closes)
                self._read_held()  # (into the protocol, which now discards what comes)
                return False
            assert self.transport is not None
            self.transport.write(response.serialize())
            self.protocol = self._new_protocol()
            self._arm_timer(self.listener.keepalive_timeout)
            self._read_held()
            return True
        except Exception:
            self.listener.logger.error("opening handshake failed", exc_info=True)
            if self.transport is not None:
                self.transport.abort()
            return False

    def _keeps_alive(self, request: Request) -> bool:
        """Whether the connection stays open for another request after a plain answer to ``request``:
        the client wants it, the server is not closing, it has requests left, and its peer may hold one
        more socket waiting for a request (an idle kept-alive socket is one, as a fresh socket is)."""
        listener, transport = self.listener, self.transport
        if not (wants_keep_alive(request) and listener.serving and self._served < listener.max_requests):
            return False
        if transport is None or transport.is_closing():
            return False
        key = listener.quota.peer_key(transport.get_extra_info("peername"))
        if not listener.quota.openings.take(key):
            return False
        self._opening = (key,)
        return True

    def _new_protocol(self) -> ArenaProtocol:
        """A fresh websockets protocol, for the connection's first request or its next one."""
        listener = self.listener
        return ArenaProtocol(
            origins=None, extensions=None, max_size=listener.max_size, logger=listener.logger
        )

    def _read_held(self) -> None:
        """Hand what came past the request just answered to the protocol now in place, and read on."""
        held, self._held = self._held, None
        if self._paused and not self._messages and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        if held:
            self.data_received(bytes(held))

    def _arm_timer(self, delay: float) -> None:
        """End the socket after ``delay`` unless its next step comes first (in place of any such timer)."""
        if self._timer is not None:
            self._timer.cancel()
        if self.transport is not None and not self._lost:
            self._timer = asyncio.get_running_loop().call_later(delay, self._time_out)

    def _time_out(self) -> None:
        """Close a kept-alive socket idle since its last answer was sent (a clean close, which a browser
        about to reuse it takes for "open another"); drop one still sending an answer, or answering."""
        transport = self.transport
        if transport is None:
            return
        if self._held is None and not transport.get_write_buffer_size():
            transport.close()
        else:
            transport.abort()

    async def _response(self, request: Request) -> Response:
        listener, protocol = self.listener, self.protocol
        try:
            response = await listener.process_request(self, request)
        except Exception:
            listener.logger.error("process_request failed", exc_info=True)
            response = protocol.reject(
                500, "Failed to open a WebSocket connection.\nSee server log for more information.\n"
            )
        if response is None:
            response = protocol.accept(request)
        if response.status_code == 101 and not listener.serving:
            response = protocol.reject(503, "Server is shutting down.\n")
        response.headers["Server"] = listener.server_header
        if request.method == "HEAD":  # (its headers, Content-Length included, as GET's; no body)
            response = dataclasses.replace(response, body=b"")
        return response

    def _open(self, request: Request, response: Response) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        listener = self.listener
        self._opened = listener.opened(self, request)
        # Headers kept for as long as the connection lasts otherwise: a quarter of its objects.
        request.headers.clear()
        response.headers.clear()
        interval = listener.ping_interval
        if interval is not None and self.protocol.state is OPEN:
            self._heard = True  # (the request, and the hello: the first beat pings no one)
            self._beat = asyncio.get_running_loop().call_later(random.random() * interval, self._on_beat)

    def _next_beat(self) -> None:
        interval = self.listener.ping_interval
        assert interval is not None
        self._beat = asyncio.get_running_loop().call_later(interval, self._on_beat)

    def _on_beat(self) -> None:
        """Ping a connection quiet for a whole beat; fail it if no pong comes within the ping timeout."""
        if self.protocol.state is not OPEN:
            self._beat = None
            return
        if self._heard:
            self._heard = False
            self._next_beat()
            return
        self._ping = random.getrandbits(32).to_bytes(4, "big")
        self.protocol.send_ping(self._ping)
        self._flush()
        self._beat = asyncio.get_running_loop().call_later(self.listener.ping_timeout, self._no_pong)

    def _pong(self, data: bytes) -> None:
        if self._ping is None or data != self._ping:
            return
        self._ping = None
        self._heard = False  # (the pong: the next beat asks again, unless something else comes)
        if self._beat is not None:
            self._beat.cancel()
        self._next_beat()

    def _no_pong(self) -> None:
        self._beat = self._ping = None
        if self.protocol.state is OPEN:
            self._fail(CloseCode.INTERNAL_ERROR, "keepalive ping timeout")

    def _frame(self, frame: Frame) -> None:
        self._heard = True
        opcode = frame.opcode
        if opcode is Opcode.PONG:
            self._pong(bytes(frame.data))
        elif opcode is Opcode.CONT:
            self._continuation(frame)
        elif opcode is Opcode.TEXT or opcode is Opcode.BINARY:
            if frame.fin:
                self._deliver(opcode, bytes(frame.data))
            else:
                self._fragments = [frame]

    def _continuation(self, frame: Frame) -> None:
        fragments = self._fragments
        assert fragments is not None  # (the protocol refuses a continuation that continues nothing)
        if fragments is _TOO_MANY:
            if frame.fin:
                self._fragments = None
            return
        fragments.append(frame)
        if len(fragments) > MAX_FRAGMENTS:
            self._fragments = None if frame.fin else _TOO_MANY
            self._deliver(None, b"")
        elif frame.fin:
            self._fragments = None
            self._deliver(fragments[0].opcode, b"".join(fragment.data for fragment in fragments))

    def _deliver(self, opcode: Opcode | None, data: bytes) -> None:
        """Queue a whole message for the task, and wake it; pause reading past :data:`MAX_QUEUE_HIGH`."""
        if self._failed:
            return
        messages = self._messages
        if messages is None:
            messages = self._messages = deque()
        messages.append((opcode, data))
        self._wake()
        if len(messages) > MAX_QUEUE_HIGH and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

    def _take(self, messages: deque[tuple[Opcode | None, bytes]]) -> str | bytes | None:
        """The first waiting message, as the server takes it (``str`` from a text frame, ``bytes`` from a
        binary one); ``None`` once the connection is failed for it. Reading resumes when few are left."""
        opcode, data = messages.popleft()
        if not messages:
            self._messages = None
        if self._paused and len(messages) <= MAX_QUEUE_LOW and not self._lost:
            self._paused = False
            assert self.transport is not None
            self.transport.resume_reading()
        if opcode is Opcode.TEXT:
            try:
                return data.decode()
            except UnicodeDecodeError as error:
                self._fail(CloseCode.INVALID_DATA, f"{error.reason} at position {error.start}")
                return None
        if opcode is Opcode.BINARY:
            return data
        self._fail(CloseCode.MESSAGE_TOO_BIG, "too many fragments")
        return None


def push_to(connections: Iterable[Connection], data: bytes) -> None:
    """Queue ``data`` on every connection in ``connections``."""
    for connection in connections:
        connection.push(data)
