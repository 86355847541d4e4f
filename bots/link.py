"""A WebSocket link to one server that says hello and comes back after every drop.

Both the bots and the fleet's lobby watcher talk to servers through a
:class:`Link`: it connects, says ``hello`` (with the token from the last
``welcome`` once it has one, so it comes back as the same player), hands every
message to its owner, and when the connection drops or the server restarts it
reconnects with exponential backoff and says hello again. What to resume after
a new ``welcome`` is the owner's business (:meth:`LinkOwner.on_welcome`).

The backoff starts over only once a connection has stayed up a while, not on
every ``welcome``: a connection that the server welcomes and then drops at once
(a message too large to read, say) is retried ever more slowly, not in a loop.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import msgspec
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus, InvalidURI

from bots import wire

log = logging.getLogger(__name__)

REPLY_TIMEOUT_S = 10.0
"""How long :meth:`Link.request` waits for the reply to a request."""

MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""The largest message a link reads; a larger one closes the connection (code 1009). The largest a server
sends is a lobby snapshot, which docs/protocol.md bounds at 400 entries: some 120 kB, under 1 MiB (websockets'
default) even were every field at its limit; the rest is margin, for a server that allows more."""

UNREACHABLE_WARNING_AFTER = 3
UNREACHABLE_WARNING_EVERY = 30
"""A link that fails this many attempts in a row says so as a warning (then every 30th), not only as
the information each lost connection is: a fleet pointed at a wrong URL should not look idle and fine."""

DROPPED = (OSError, ConnectionClosed, InvalidHandshake, TimeoutError, wire.MalformedMessage)
"""What ends one connection, after which the link connects again."""

BAD_TOKEN = "bad_token"
"""The error code of a ``hello`` whose token the server does not know: start again as a new player."""


class _Refused(msgspec.Struct):
    message: str


class _RefusedBody(msgspec.Struct):
    error: _Refused


def why_dropped(error: BaseException) -> str:
    """What to log for a connection lost or refused: a refused handshake with the server's own reason,
    which says what to do (e.g. that this address holds all the connections it may)."""
    if isinstance(error, InvalidStatus):
        status = f"the server refused the connection: HTTP {error.response.status_code}"
        try:
            return f"{status}: {msgspec.json.decode(error.response.body, type=_RefusedBody).error.message}"
        except (msgspec.MsgspecError, TypeError):  # (no body, or not ours)
            return status
    return str(error) or type(error).__name__


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delays between reconnection attempts: exponential, capped, with jitter so bots do not stampede."""

    initial_s: float = 0.1
    factor: float = 2.0
    max_s: float = 5.0
    jitter: float = 0.25
    reset_after_s: float = 10.0
    """How long a connection must stay up before the delays start again from ``initial_s``."""

    def delays(self, rng: random.Random) -> Iterator[float]:
        delay = self.initial_s
        while True:
            yield delay * (1 + self.jitter * rng.random())
            delay = min(self.max_s, delay * self.factor)


DEFAULT_BACKOFF = Backoff()


class LinkOwner(Protocol):
    """What a :class:`Link` tells the bot or watcher that owns it."""

    async def on_welcome(self, welcome: wire.Welcome) -> None:
        """Connected (again) and known to the server: subscribe, resume, rejoin.

        Called before any later message is read; like :meth:`on_message`, it must
        not wait for a reply.
        """

    async def on_message(self, message: wire.Incoming) -> None:
        """Any message from the server, replies to requests included.

        Called from the loop that reads the connection: it must not wait for a
        reply (that reply could not be read); send, or start a task that waits.
        """


class RequestFailed(Exception):
    """The server answered a request with an ``error``."""

    def __init__(self, request: wire.Request, error: wire.Error) -> None:
        super().__init__(f"{type(request).__name__} refused: {error.code}: {error.message}")
        self.error = error


class Link:
    """One reconnecting connection to ``url`` as the player called ``name``; see the module docstring."""

    def __init__(
        self,
        url: str,
        name: str,
        owner: LinkOwner,
        *,
        token: str | None = None,
        fleet_key: str | None = None,
        backoff: Backoff = DEFAULT_BACKOFF,
        seed: int | None = None,
    ) -> None:
        self.url = url
        self.name = name
        self.token = token
        self._fleet_key = fleet_key
        """Said in every hello when given: the server's proof that this link speaks for a fleet it trusts."""
        self.owner = owner
        self.backoff = backoff
        self.welcome: wire.Welcome | None = None
        self.connected = asyncio.Event()
        """Set while a connection is open and welcomed."""
        self.connections = 0
        """How many times this link has been welcomed: 1 at first, more after reconnections."""
        self._rng = random.Random(seed)
        self._ids = itertools.count(1)
        self._replies: dict[int, asyncio.Future[wire.Incoming]] = {}
        self._socket: ClientConnection | None = None
        self._closing = False
        self.failures = 0
        """Connection attempts that failed (or connections that dropped) so far."""
        self.last_error: BaseException | None = None
        self.down_since: float | None = None
        """``time.monotonic()`` when the last connection was lost (or its first attempt failed); ``None``
        while welcomed and before the first attempt ends: how long its server has been out of reach."""
        self._attempted = asyncio.Condition()

    async def run(self) -> None:
        """Stay connected until :meth:`close`; never returns otherwise."""
        loop = asyncio.get_running_loop()
        delays = self.backoff.delays(self._rng)
        in_a_row = 0  # attempts that failed since a connection last stayed up
        while not self._closing:
            try:
                async with connect(
                    self.url, open_timeout=REPLY_TIMEOUT_S, proxy=None, max_size=MAX_MESSAGE_BYTES
                ) as socket:
                    self._socket = socket
                    await self._greet(socket)
                    welcomed_at = loop.time()
                    try:
                        await self._receive(socket)
                    finally:
                        if loop.time() - welcomed_at >= self.backoff.reset_after_s:
                            delays = self.backoff.delays(self._rng)  # a good connection: start over
                            in_a_row = 0
            except InvalidURI:
                raise
            except DROPPED as error:
                reason = why_dropped(error)
                in_a_row += 1
                if in_a_row == UNREACHABLE_WARNING_AFTER or in_a_row % UNREACHABLE_WARNING_EVERY == 0:
                    log.warning("%s: cannot reach %s or stay connected (%d attempts in a row, the last: %s); "
                                "still trying", self.name, self.url, in_a_row, reason)  # fmt: skip
                else:
                    log.info("%s: link to %s lost (%s)", self.name, self.url, reason)
                self.failures += 1
                self.last_error = error
            finally:
                if self.connected.is_set() or self.down_since is None:
                    self.down_since = time.monotonic()
                self._socket = None
                self.connected.clear()
                self._fail_pending()
                async with self._attempted:
                    self._attempted.notify_all()
            if not self._closing:
                await asyncio.sleep(next(delays))

    def _hello(self, token: str | None) -> str:
        return wire.encode(wire.Hello(name=self.name, token=token, bot=True, fleet_key=self._fleet_key))

    async def _greet(self, socket: ClientConnection) -> None:
        """Say hello, with the token when we have one, and wait for the welcome."""
        await socket.send(self._hello(self.token))
        while True:
            async with asyncio.timeout(REPLY_TIMEOUT_S):
                message = wire.decode(await socket.recv())
            if isinstance(message, wire.Welcome):
                break
            if isinstance(message, wire.Error) and self.token is not None and message.code == BAD_TOKEN:
                log.warning("%s: %s refused our token (%s); starting as a new player", self.name, self.url,
                            message.message)  # fmt: skip
                self.token = None
                await socket.send(self._hello(None))
            elif isinstance(message, wire.Error):
                raise ConnectionError(f"{self.url} refused hello: {message.code}: {message.message}")
            else:
                log.debug("%s: ignoring %s before welcome", self.name, type(message).__name__)
        self.welcome = message
        self.token = message.token
        self.down_since = None
        self.connections += 1
        self.connected.set()
        async with self._attempted:
            self._attempted.notify_all()
        await self.owner.on_welcome(message)

    async def _receive(self, socket: ClientConnection) -> None:
        async for frame in socket:
            try:
                message = wire.decode(frame)
            except wire.MalformedMessage as error:
                log.warning("%s: ignoring a frame from %s: %s", self.name, self.url, error)
                continue
            if isinstance(message, wire.Unknown):
                log.info("%s: ignoring a message of unknown type %r", self.name, message.type)
            waiter = self._replies.pop(message.id, None) if isinstance(message.id, int) else None
            if waiter is not None and not waiter.done():
                waiter.set_result(message)
            try:
                await self.owner.on_message(message)
            except Exception:
                # A bug in handling one message must not take the connection (and every match on it) down.
                log.exception("%s: failed to handle %s", self.name, type(message).__name__)

    async def wait_connected(self, timeout: float = REPLY_TIMEOUT_S) -> None:
        """Wait until welcomed; raise ``ConnectionError`` if the next attempt fails instead.

        For callers that want an answer now (seating a bot); a bot in a match just
        waits for :attr:`connected` while the link keeps retrying.
        """
        async with asyncio.timeout(timeout), self._attempted:
            failures = self.failures
            while not self.connected.is_set():
                await self._attempted.wait()
                if self.failures > failures and not self.connected.is_set():
                    raise ConnectionError(f"cannot reach {self.url}: {self.last_error}")

    async def send(self, request: wire.Request) -> bool:
        """Send ``request`` if connected; ``False`` (and nothing sent) if the link is down."""
        socket = self._socket
        if socket is None or not self.connected.is_set():
            return False
        try:
            await socket.send(wire.encode(request))
        except ConnectionClosed:
            return False
        return True

    async def request(self, request: wire.Request, timeout: float = REPLY_TIMEOUT_S) -> wire.Incoming:
        """Send ``request`` with a fresh id and return the reply that echoes it.

        Raises :class:`RequestFailed` for an ``error`` reply, ``ConnectionError`` if
        the link is down or drops first, ``TimeoutError`` if no reply comes.
        """
        request_id = next(self._ids)
        request = _with_id(request, request_id)
        waiter = asyncio.get_running_loop().create_future()
        self._replies[request_id] = waiter
        try:
            if not await self.send(request):
                raise ConnectionError(f"not connected to {self.url}")
            async with asyncio.timeout(timeout):
                reply = await waiter
        finally:
            self._replies.pop(request_id, None)
        if isinstance(reply, wire.Error):
            raise RequestFailed(request, reply)
        return reply

    def _fail_pending(self) -> None:
        for waiter in self._replies.values():
            if not waiter.done():
                waiter.set_exception(ConnectionError(f"connection to {self.url} lost before the reply"))
        self._replies.clear()

    async def close(self) -> None:
        """Stop reconnecting and close the connection."""
        self._closing = True
        socket = self._socket
        if socket is not None:
            await socket.close()


def _with_id(request: wire.Request, request_id: int) -> wire.Request:
    return msgspec.structs.replace(request, id=request_id)
