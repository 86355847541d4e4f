"""One client connection: who it is, what it follows, how fast it may talk.

Sending never waits: a reply or an event is pushed into the connection's
write buffer at once (as ``websockets.broadcast`` does), so a slow reader can
never hold up a match. A reader that lets too much pile up is closed instead.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from websockets.asyncio.server import ServerConnection
from websockets.protocol import OPEN

from server.protocol import ServerMessage, encode
from server.storage.records import PlayerRecord

if TYPE_CHECKING:
    from server.addresses import Address

log = logging.getLogger(__name__)


@dataclass(slots=True)
class TokenBucket:
    """A rate limit: ``burst`` requests at once, refilled at ``rate`` per second."""

    rate: float
    burst: int
    tokens: float = field(init=False)
    updated: float | None = None

    def __post_init__(self) -> None:
        self.tokens = float(self.burst)

    def take(self, now: float) -> bool:
        """Spend one token if there is one; ``False`` means the request is over the limit."""
        tokens = self.tokens
        if self.updated is not None:
            tokens += (now - self.updated) * self.rate
            if tokens > self.burst:  # (not ``min``: a builtin's call, for every request)
                tokens = float(self.burst)
        self.updated = now
        if tokens < 1:
            self.tokens = tokens
            return False
        self.tokens = tokens - 1
        return True


class Connection:
    """A WebSocket client as the server sees it; hashable, so it can sit in watcher sets."""

    __slots__ = ("address", "bucket", "matches", "max_buffer", "player", "websocket")

    def __init__(
        self,
        websocket: ServerConnection,
        bucket: TokenBucket,
        max_buffer: int,
        address: Address | None,
    ) -> None:
        self.websocket = websocket
        self.bucket = bucket
        self.max_buffer = max_buffer
        self.address = address
        """The client's address (behind trusted proxies), by which its allowances are counted."""
        self.player: PlayerRecord | None = None
        self.matches: set[str] = set()
        """Ids of the matches whose events this connection receives."""

    @property
    def player_id(self) -> str | None:
        return None if self.player is None else self.player.id

    def send(self, message: ServerMessage) -> None:
        self.push(encode(message))

    def push(self, data: bytes) -> None:
        """Queue an already encoded message, without waiting; close a client that stopped reading."""
        transport = self.websocket.transport
        if transport is not None and transport.get_write_buffer_size() > self.max_buffer:
            if not transport.is_closing():  # (once: messages sent its way until it is gone go nowhere)
                log.warning(
                    "closing %s: more than %d bytes unread", self.websocket.remote_address, self.max_buffer
                )
                transport.abort()
            return
        websocket = self.websocket
        if websocket.protocol.state is not OPEN:  # (closing: nothing more may be sent)
            return
        try:
            transport.write(text_frame(data))
        except Exception as error:  # (as broadcast: one connection's failure is not the sender's)
            log.warning("skipped a message to %s: %s", websocket.remote_address, error)

    def __repr__(self) -> str:
        return f"<Connection {self.websocket.id} player={self.player_id}>"


_LENGTH_16 = struct.Struct("!BBH")
_LENGTH_64 = struct.Struct("!BBQ")


def text_frame(data: bytes) -> bytes:
    """``data`` as one whole, unmasked text frame (RFC 6455, 5.2): what a server sends.

    The bytes websockets' ``Frame.serialize`` makes (``tests/test_connection.py`` holds the two to the
    same), without the frame object, its checks, its buffer and the protocol's list of writes that
    sending through websockets goes through: two of these a move, on a server that compresses nothing
    (``compression=None``) and never sends a message in fragments.
    """
    length = len(data)
    if length < 126:
        return bytes((0x81, length)) + data
    if length < 65536:
        return _LENGTH_16.pack(0x81, 126, length) + data
    return _LENGTH_64.pack(0x81, 127, length) + data


def push_to(connections: Iterable[Connection], data: bytes) -> None:
    """Queue ``data`` on every connection in ``connections``."""
    for connection in connections:
        connection.push(data)
