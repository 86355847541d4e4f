"""The listening socket: a :class:`~server.connection.Connection` for every client, the server's callbacks,
and a close that waits for every connection to go, as websockets' ``Server.close``/``wait_closed``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from websockets.frames import CloseCode
from websockets.http11 import Request, Response

from server.connection import Connection
from server.keepalive import KEEPALIVE_TIMEOUT_S, MAX_REQUESTS

if TYPE_CHECKING:
    from server.addresses import AddressQuota

ProcessRequest = Callable[[Connection, Request], Awaitable[Response | None]]
"""The HTTP front: a response for a plain request (or a refused upgrade), ``None`` to upgrade."""
Opened = Callable[[Connection, Request], bool]
"""Called once the upgrade is sent, before the request's headers are let go; ``False``: the server does
not keep the connection (it closes it), and ``closed`` is not called for it."""
Received = Callable[[Connection, str | bytes], Coroutine[Any, Any, None]]
"""What handles one message (``str`` from a text frame, ``bytes`` from a binary one), awaited by the
connection's task before its next message."""
Closed = Callable[[Connection], Awaitable[None]]
"""Called once a kept connection is closed and every message before the close is handled."""


class Listener:
    """Accepts connections on one port and closes them all when it closes."""

    def __init__(
        self,
        *,
        process_request: ProcessRequest,
        opened: Opened,
        received: Received,
        closed: Closed,
        quota: AddressQuota,
        refused: Callable[[], None] = lambda: None,
        max_size: int | None = 2**20,
        max_buffer: int = 2**20,
        rate_per_s: float = 20.0,
        rate_burst: int = 40,
        server_header: str = "Ply Arena",
        logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
        ping_interval: float | None = 20.0,
        ping_timeout: float = 20.0,
        open_timeout: float = 10.0,
        close_timeout: float = 10.0,
        keepalive_timeout: float = KEEPALIVE_TIMEOUT_S,
        max_requests: int = MAX_REQUESTS,
    ) -> None:
        self.process_request = process_request
        self.opened = opened
        self.received = received
        self.closed = closed
        self.quota = quota
        self.refused = refused
        """Called for each socket dropped at accept, past its peer's openings (the server counts them)."""
        self.max_size = max_size
        self.max_buffer = max_buffer
        self.rate_per_s = rate_per_s
        self.rate_burst = rate_burst
        self.server_header = server_header
        self.logger = logger or logging.getLogger("websockets.server")
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.open_timeout = open_timeout
        self.close_timeout = close_timeout
        self.keepalive_timeout = keepalive_timeout
        """How long a kept-alive HTTP connection may wait, from an answer, for its next one."""
        self.max_requests = max_requests
        """HTTP requests one connection may make before it is closed."""
        self.connections: set[Connection] = set()
        """Every socket accepted and not yet done with (its closed callback returned)."""
        self._server: asyncio.Server | None = None
        self._gone: asyncio.Future[None] | None = None

    @classmethod
    async def start(cls, host: str | None, port: int, **options: Any) -> Listener:
        """Bind ``host:port`` (0: any free port), not accepting yet: see :meth:`start_serving`."""
        listener = cls(**options)
        loop = asyncio.get_running_loop()
        listener._server = await loop.create_server(
            lambda: Connection(listener), host, port, start_serving=False
        )
        return listener

    async def start_serving(self) -> None:
        assert self._server is not None
        await self._server.start_serving()

    @property
    def sockets(self) -> tuple[Any, ...]:
        return () if self._server is None else tuple(self._server.sockets)

    @property
    def serving(self) -> bool:
        """Whether it accepts connections: an upgrade answered once it stops is refused (503)."""
        return self._server is not None and self._server.is_serving()

    def close(self, code: int = CloseCode.GOING_AWAY, reason: str = "") -> None:
        """Stop accepting, and close every open connection (1001, going away; a kept-alive HTTP one
        waiting for its next request, at once)."""
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            connection.close(code, reason)

    async def wait_closed(self) -> None:
        """Wait until every connection is gone: each within its close timeout, or its open timeout."""
        if self._server is not None:
            await self._server.wait_closed()
        while self.connections:
            self._gone = asyncio.get_running_loop().create_future()
            await self._gone

    def forget(self, connection: Connection) -> None:
        """``connection`` is done with (called by the connection itself)."""
        self.connections.discard(connection)
        if not self.connections and self._gone is not None and not self._gone.done():
            self._gone.set_result(None)
