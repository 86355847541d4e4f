"""A connection's messages handed to its handler from a plain queue, not through websockets' ``recv``.

websockets' ``recv`` makes three coroutines and a future for every message
(``Connection.recv``, ``Assembler.get``, ``SimpleQueue.get``), and a connection
waiting for its next message holds all four. With 10,000 connections, most of
them waiting at any moment, these were most of the young objects that each of
the garbage collector's passes visited (docs/performance.md, "Where the time
goes"). Here a whole message goes from the protocol straight into a deque, and
:meth:`Inbox.next_message` waits on one future only while the deque is empty.

What ``recv`` guarantees stays: messages in order, fragments put together, a
text message decoded as UTF-8 or the connection failed (1007), reading paused
while ``max_queue`` messages wait and resumed once few are left, the messages
that came before the close handed over before :exc:`ConnectionClosed`.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, NoReturn

from websockets.asyncio.messages import MAX_FRAGMENTS
from websockets.frames import BINARY, CONT, DATA_OPCODES, TEXT, CloseCode, Frame, Opcode
from websockets.protocol import Event

from server.keepalive import SpreadPings

_OVERFLOWED: list[Frame] = []
"""In place of the fragments of a message that had too many."""


class Inbox(SpreadPings):
    """A server connection whose handler reads with :meth:`next_message`, never ``recv``."""

    __slots__ = ("_fragments", "_messages", "_paused", "_waiter")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._messages: deque[tuple[Opcode | None, bytes]] | None = None
        """Whole messages, opcode and data; ``None`` for a message of too many fragments. Made when one
        comes and dropped when the handler has them all: an empty deque holds 760 bytes, and most
        connections wait with none."""
        self._fragments: list[Frame] | None = None
        """The frames of a fragmented message so far."""
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    def process_event(self, event: Event) -> None:
        if not isinstance(event, Frame) or event.opcode not in DATA_OPCODES:
            super().process_event(event)  # (the handshake's request, pings, pongs, the close)
            return
        self.heard = True  # (a frame from the peer: see SpreadPings)
        if event.opcode is CONT:
            fragments = self._fragments
            assert fragments is not None  # (the protocol refuses a continuation that continues nothing)
            if fragments is _OVERFLOWED:  # (the connection is failing: the rest of that message goes)
                if event.fin:
                    self._fragments = None
                return
            fragments.append(event)
            if len(fragments) > MAX_FRAGMENTS:  # (empty ones add nothing to the size that max_size caps)
                self._fragments = None if event.fin else _OVERFLOWED
                message: tuple[Opcode | None, bytes] = (None, b"")
            elif not event.fin:
                return
            else:
                self._fragments = None
                message = (fragments[0].opcode, b"".join(frame.data for frame in fragments))
        elif not event.fin:
            self._fragments = [event]
            return
        else:
            message = (event.opcode, bytes(event.data))
        messages = self._messages
        if messages is None:
            messages = self._messages = deque()
        messages.append(message)
        high = self.max_queue_high
        if high is not None and len(messages) > high and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def next_message(self) -> str | bytes:
        """The next message: ``str`` from a text frame, ``bytes`` from a binary one.

        Raises :exc:`~websockets.exceptions.ConnectionClosed` once the connection is closed and every
        message that came before is handed over.
        """
        while (messages := self._messages) is None:
            if self.connection_lost_waiter.done():
                raise self.close_exc
            waiter = self._waiter = self.loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        opcode, data = messages.popleft()
        if not messages:
            self._messages = None
        if self._paused and len(messages) <= self._resume_below:
            self._paused = False
            self.transport.resume_reading()
        if opcode is BINARY:
            return data
        if opcode is TEXT:
            try:
                return data.decode()
            except UnicodeDecodeError as error:
                await self._fail(CloseCode.INVALID_DATA, f"{error.reason} at position {error.start}", error)
        await self._fail(CloseCode.MESSAGE_TOO_BIG, "too many fragments", None)

    async def _fail(self, code: CloseCode, reason: str, error: Exception | None) -> NoReturn:
        """Fail the connection as ``recv`` does, then raise its :exc:`ConnectionClosed`."""
        if error is not None:
            self.set_connection_exc(error)
        async with self.send_context():
            self.protocol.fail(code, reason)
        await asyncio.shield(self.connection_lost_waiter)
        raise self.close_exc

    @property
    def _resume_below(self) -> int:
        """Resume reading at this many waiting messages or fewer (websockets' default low water mark)."""
        high, low = self.max_queue_high, self.max_queue_low
        if low is not None:
            return low
        return 0 if high is None else high // 4
