"""A connection's messages handed to a handler one at a time, as they come, not read with websockets'
``recv``.

websockets' ``recv`` makes three coroutines and a future for every message
(``Connection.recv``, ``Assembler.get``, ``SimpleQueue.get``), and a connection
waiting for its next message holds all four. A loop that awaits a message of
its own making still holds a coroutine, a future and what awaiting it takes
(four objects) for as long as the connection is quiet, about a second for a
player between moves. The garbage collector's young and middle passes visit
everything that lives that long, twice, and with 10,000 connections these were
half of what they visited (docs/performance.md, "The garbage collector"). So a quiet
connection here holds nothing for its next message: a whole message goes from
the protocol straight to its handler, or, while another is being handled, into
a deque, whose first message goes to the handler once that one is done.

The handler handles a message at once, or hands back a :class:`Pending` that it
says is done later, or the coroutine that handles it, which runs in a task of
its own: the next message waits for either. Most moves need no task (see
:meth:`server.live.MatchHost.act_soon`), and a task with its coroutines was a
tenth of a move's instructions.

What ``recv`` guarantees stays: messages in order, fragments put together, a
text message decoded as UTF-8 or the connection failed (1007), reading paused
while ``max_queue`` messages wait and resumed once few are left, the messages
that came before the close handled before the handler returns.

The commonest frame of all, a whole small message masked as a client must
(a move), is read here without websockets' parser when the parser waits for a
new frame: see :meth:`Inbox.data_received`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, final

from websockets.asyncio.messages import MAX_FRAGMENTS
from websockets.exceptions import ConnectionClosed
from websockets.frames import BINARY, CONT, DATA_OPCODES, TEXT, CloseCode, Frame, Opcode, apply_mask
from websockets.protocol import OPEN, Event
from websockets.server import ServerProtocol
from websockets.streams import StreamReader

from server.keepalive import SpreadPings


@final  # never subclassed: ``type(handled) is Pending`` tells it from a coroutine
class Pending:
    """A message that its handler goes on handling in callbacks, and says when it is done: what the next
    message of the connection waits for, in place of a future.

    A future would be made in C for every move decided in callbacks (:meth:`server.live.MatchHost.act_soon`),
    and once done, its callback would go through the loop as one more handle: here the next message goes
    to the handler in the same callback that finishes this one.
    """

    __slots__ = ("_done", "_then")

    def __init__(self) -> None:
        self._then: Callable[[], None] | None = None
        self._done = False

    def done(self) -> None:
        """The message is handled: on with the next (a second call does nothing)."""
        if self._done:
            return
        self._done = True
        then, self._then = self._then, None
        if then is not None:
            then()

    def then(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the message is handled: at once if it is."""
        if self._done:
            callback()
        else:
            self._then = callback


Handled = Coroutine[Any, Any, None] | Pending | None
"""What a handler hands back: ``None`` once the message is handled, a :class:`Pending` it says is done
once it is, or the coroutine that handles it, to run in a task of its own."""
Handler = Callable[[str | bytes], Handled]
"""What handles one message: ``str`` from a text frame, ``bytes`` from a binary one."""

_OVERFLOWED: list[Frame] = []
"""In place of the fragments of a message that had too many."""

_WAITING_FOR_A_FRAME = StreamReader.at_eof.__code__
"""Where websockets' parser waits, with nothing buffered, between one frame and the next (``Protocol.parse``
asks ``reader.at_eof()`` before each frame)."""


def _waiting_for_a_frame(protocol: ServerProtocol) -> bool:
    """Whether websockets' parser waits for a new frame: the server's parser, once the handshake is done,
    hands over to the frames' parser for good, which waits there. (Should websockets' parsers come to be
    laid out otherwise, this says no, and every frame goes through them.)"""
    frames = getattr(protocol.parser, "gi_yieldfrom", None)  # typed as a Generator, made a generator
    return getattr(getattr(frames, "gi_yieldfrom", None), "gi_code", None) is _WAITING_FOR_A_FRAME


_TASK_NAME = "plyarena-message"
"""The name of every task that handles a message."""

_WHOLE_FRAME_OPCODES = {0x81: TEXT, 0x82: BINARY}
"""A frame's first byte: the FIN bit, no RSV bit, and a text or binary opcode: a message in one frame."""
_MASKED_SHORT = range(0x80, 0x80 + 126)
"""A frame's second byte: the MASK bit and a payload of at most 125 bytes, its length in those 7 bits."""


class KeptLists(ServerProtocol):
    """websockets' server protocol, keeping its lists of events received and data to send for good.

    websockets hands over each of these lists and starts a new, empty one on every read and every
    write, and the new one then waits for the next read or write: a second, for a player between moves.
    The garbage collector's young and middle passes visit everything that lives that long, twice, and
    with 10,000 connections these empty lists were a third of what the largest of those passes visited
    (docs/performance.md). Handing over a copy and emptying the list kept leaves only copies
    that are gone once read.
    """

    def events_received(self) -> list[Event]:
        events = self.events
        received = events.copy()
        events.clear()
        return received

    def data_to_send(self) -> list[bytes]:
        writes = self.writes
        to_send = writes.copy()
        writes.clear()
        return to_send


class Inbox(SpreadPings):
    """A server connection whose handler hands its messages to :meth:`serve_messages`, never ``recv``."""

    __slots__ = ("_at_a_frame", "_busy", "_fragments", "_handle", "_messages", "_paused", "_served")

    def __init__(self, protocol: ServerProtocol, *args: Any, **kwargs: Any) -> None:
        super().__init__(protocol, *args, **kwargs)
        if type(protocol) is ServerProtocol:  # (websockets' serve makes it: no other way to choose its class)
            protocol.__class__ = KeptLists
        self._messages: deque[tuple[Opcode | None, bytes]] | None = None
        """Whole messages, opcode and data; ``None`` for a message of too many fragments. Made when one
        comes and dropped when the last is handed over: an empty deque holds 760 bytes, and most
        connections wait with none."""
        self._fragments: list[Frame] | None = None
        """The frames of a fragmented message so far."""
        self._handle: Handler | None = None
        self._busy: asyncio.Task[None] | Pending | None = None
        """The task or pending handling of the message being handled, while one is: the next waits for it."""
        self._served: asyncio.Future[None] | None = None
        self._paused = False
        self._at_a_frame = False
        """Known to be true of websockets' parser: it waits for a new frame (see :meth:`data_received`)."""

    def data_received(self, data: bytes) -> None:
        """Take the whole small messages at the front of ``data`` without websockets' parser.

        A move is one masked text frame of some 60 bytes, and websockets' parser spent 13% of a move's
        bytecodes reading it (a generator per frame, a ``Frame`` made and checked, its reader's buffer
        grown and cut; docs/performance.md). Here, while the parser waits for a new
        frame with nothing buffered and no fragmented message is under way, each frame that says at its
        first two bytes that it is a whole text or binary message, masked, of at most 125 bytes, and is
        all in ``data``, is unmasked and handed over as ``process_event`` would hand over its ``Frame``.
        Everything else, from the first frame that is not one of those on (a control frame, a fragment,
        a longer or unmasked frame, a frame cut by the network, a byte with an RSV bit set), goes to
        websockets as it came, and its parser, still at a frame's start, checks and answers it as ever.
        """
        protocol = self.protocol
        if protocol.state is not OPEN or not (self._at_a_frame or self._check_at_a_frame(protocol)):
            self._at_a_frame = False
            super().data_received(data)
            return
        most, size, start = protocol.max_message_size, len(data), 0
        while size - start >= 6:
            opcode = _WHOLE_FRAME_OPCODES.get(data[start])
            second = data[start + 1]
            if opcode is None or second not in _MASKED_SHORT:
                break
            length = second - 0x80
            stop = start + 6 + length
            if stop > size or (most is not None and length > most):
                break
            self._deliver(opcode, apply_mask(data[start + 6 : stop], data[start + 2 : start + 6]))
            start = stop
        if start:
            self.heard = True  # (frames from the peer: see SpreadPings)
        if start < size:
            self._at_a_frame = False
            super().data_received(data[start:] if start else data)

    def _check_at_a_frame(self, protocol: ServerProtocol) -> bool:
        """Whether websockets' parser waits for a new frame with nothing buffered and no fragmented
        message under way; remembered in ``_at_a_frame`` until data goes to the parser again, for
        nothing else moves it (frames read here leave it where it was)."""
        self._at_a_frame = (
            protocol.current_size is None
            and not protocol.debug
            and not protocol.reader.buffer
            and _waiting_for_a_frame(protocol)
        )
        return self._at_a_frame

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
                self._deliver(None, b"")
            elif event.fin:
                self._fragments = None
                self._deliver(fragments[0].opcode, b"".join(frame.data for frame in fragments))
        elif not event.fin:
            self._fragments = [event]
        else:
            self._deliver(event.opcode, bytes(event.data))

    def _deliver(self, opcode: Opcode | None, data: bytes) -> None:
        """Handle a whole message at once if no other is being handled or waits, else queue it behind
        them; pause reading past ``max_queue``."""
        if self._busy is None and self._handle is not None and self._messages is None:
            self._start(opcode, data)  # (most messages: no deque made and emptied for each)
            return
        messages = self._messages
        if messages is None:
            messages = self._messages = deque()
        messages.append((opcode, data))
        if self._busy is None and self._handle is not None:  # (some wait, none is handled: on with them)
            self._go_on()
        elif (high := self.max_queue_high) is not None and len(messages) > high and not self._paused:
            self._paused = True
            self.transport.pause_reading()

    def serve_messages(self, handle: Handler) -> asyncio.Future[None]:
        """Hand every message to ``handle``, one at a time and in order (see :data:`Handled`).

        The future is done once the connection is closed and every message that came before the close
        is handled. (A future, not a coroutine: a coroutine waiting for the close would hold its frame,
        and what it awaits, for as long as the connection lasts.)
        """
        self._handle = handle
        served = self._served = self.loop.create_future()
        self.connection_lost_waiter.add_done_callback(self._closed)
        if self._messages is not None:  # (some came before the handler began)
            self._go_on()
        return served

    def _closed(self, _: asyncio.Future[None]) -> None:
        if self._busy is None:  # (else the message in hand, and any after it, are handled first)
            self._done_serving()

    def _done_serving(self) -> None:
        served = self._served
        if served is not None and not served.done():
            served.set_result(None)

    def _go_on(self) -> None:
        """Hand over the waiting messages, one by one, until one is being handled; once none is left and
        the connection is closed, serving is done."""
        while self._busy is None:
            messages = self._messages
            if messages is None:
                if self.connection_lost_waiter.done():
                    self._done_serving()
                return
            opcode, data = messages.popleft()
            if not messages:
                self._messages = None
            if self._paused and len(messages) <= self._resume_below:
                self._paused = False
                self.transport.resume_reading()
            self._start(opcode, data)

    def _start(self, opcode: Opcode | None, data: bytes) -> None:
        """Hand one message to the handler (``None`` for one of too many fragments); until what it hands
        back is done, the next waits."""
        handle = self._handle
        assert handle is not None
        handled: Handled
        message: str | bytes | None = None
        if opcode is TEXT:
            try:
                message = data.decode()
            except UnicodeDecodeError as error:
                reason = f"{error.reason} at position {error.start}"
                handled = self._fail(CloseCode.INVALID_DATA, reason, error)
        elif opcode is BINARY:
            message = data
        else:
            handled = self._fail(CloseCode.MESSAGE_TOO_BIG, "too many fragments", None)
        if message is not None:
            try:
                handled = handle(message)
            except Exception:
                self.logger.error("handling a message failed", exc_info=True)
                return
        if handled is None:
            return
        if type(handled) is Pending:
            self._busy = handled
            handled.then(self._handled)
            return
        # A ``Task`` made directly, and named: ``create_task`` names each task "Task-N", formatted in C
        # for every message (0.6% of a move's instructions), and uvloop's adds a call around it.
        self._busy = asyncio.Task(self._handling(handled), loop=self.loop, name=_TASK_NAME)

    def _handled(self) -> None:
        """The message a handler said was pending is handled: on with the next."""
        self._busy = None
        self._go_on()

    async def _handling(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work``, then go on with the next message. (Not a done callback: the loop would make a
        handle and its arguments for each, and a commit that answers thousands of moves at once leaves
        thousands of them waiting for their turn, which the young collections then visit.)"""
        try:
            await work
        except Exception:
            self.logger.error("handling a message failed", exc_info=True)
        finally:
            self._busy = None
            self._go_on()

    async def _fail(self, code: CloseCode, reason: str, error: Exception | None) -> None:
        """Fail the connection as ``recv`` does; what waits to be handled is dropped."""
        self._messages = None
        if error is not None:
            self.set_connection_exc(error)
        with contextlib.suppress(ConnectionClosed):  # (closed meanwhile: nothing left to fail)
            async with self.send_context():
                self.protocol.fail(code, reason)

    @property
    def _resume_below(self) -> int:
        """Resume reading at this many waiting messages or fewer (websockets' default low water mark)."""
        high, low = self.max_queue_high, self.max_queue_low
        if low is not None:
            return low
        return 0 if high is None else high // 4
