"""Client connections that hand their messages straight to a callback, not through websockets' ``recv``.

The load generators share the machine with the server they measure, and what they spend is taken from
it. websockets' ``recv`` puts every message through an assembler and a queue, and every call makes
three coroutines and a future: counted on the scripted players' side, their receive path took 1,473
bytecodes a move, more than half the server's whole move (docs/performance.md). Here a
whole message goes from the protocol to a callback as soon as its last frame is parsed, as the server's
connections hand their own over (``server/connection.py``). websockets still parses the frames, and
answers pings and the close as ever.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection
from websockets.frames import CONT, DATA_OPCODES, Frame
from websockets.protocol import Event

log = logging.getLogger(__name__)

OnMessage = Callable[[bytes], None]
"""Takes one whole message, text or binary, as bytes (text undecoded: the load generators decode JSON
from bytes)."""


class DirectClient(ClientConnection):
    """A client connection whose messages go to :attr:`on_message` once it is set; until then, and after
    it is unset again, ``recv`` reads them as usual (a hello's welcome).

    Set it while no message waits to be read by ``recv``: messages queued before would stay there.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.on_message: OnMessage | None = None
        self._fragments: list[bytes] | None = None
        """The fragments of a message so far (a server may fragment, though ours never does)."""

    def process_event(self, event: Event) -> None:
        on_message = self.on_message
        if (
            on_message is None
            or self.response is None  # (the handshake's response: websockets' own)
            or not isinstance(event, Frame)
            or event.opcode not in DATA_OPCODES
        ):
            super().process_event(event)
            return
        if event.opcode is CONT:
            if self._fragments is None:  # (a message begun before the callback was set: recv's)
                super().process_event(event)
                return
            self._fragments.append(bytes(event.data))
            if not event.fin:
                return
            message, self._fragments = b"".join(self._fragments), None
        elif not event.fin:
            self._fragments = [bytes(event.data)]
            return
        else:
            message = bytes(event.data)
        try:
            on_message(message)
        except Exception:
            log.exception("load generator: handling a message failed")
