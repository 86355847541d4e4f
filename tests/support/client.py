"""A small protocol v1 client for tests, speaking plain JSON exactly as any other client would.

Every received message is kept, in order, in an unread list; tests take the
ones they expect with :meth:`ArenaClient.expect` (the first unread message that
matches) or :meth:`ArenaClient.request` (send, then take the reply by its id).
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any, Self

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

DEFAULT_TIMEOUT = 10.0

Message = dict[str, Any]


class ArenaClient:
    """One WebSocket connection to a Ply Arena server."""

    def __init__(self, websocket: ClientConnection) -> None:
        self.websocket = websocket
        self.received: list[Message] = []
        """Everything received, in order, read or not."""
        self.unread: list[Message] = []
        self.player_id: str | None = None
        self.token: str | None = None
        self._ids = itertools.count(1)
        self._arrived = asyncio.Condition()
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, url: str, **options: Any) -> Self:
        return cls(await connect(url, compression=None, **options))

    async def close(self) -> None:
        await self.websocket.close()
        await asyncio.gather(self._reader, return_exceptions=True)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # ----------------------------------------------------------------- sending

    async def send(self, message: Message | str | bytes) -> None:
        """Send a message as is (a dict is encoded as JSON; text and bytes are sent unchanged)."""
        await self.websocket.send(json.dumps(message) if isinstance(message, dict) else message)

    async def request(self, type: str, *, timeout: float = DEFAULT_TIMEOUT, **fields: Any) -> Message:
        """Send a request with a fresh ``id`` and return the reply carrying that id."""
        request_id = next(self._ids)
        await self.send({"type": type, "id": request_id, **fields})
        return await self.expect(id=request_id, timeout=timeout)

    async def hello(
        self,
        name: str | None = None,
        *,
        token: str | None = None,
        bot: bool = False,
        fleet_key: str | None = None,
    ) -> Message:
        fields: Message = {"bot": bot}
        if fleet_key is not None:
            fields["fleet_key"] = fleet_key
        if name is not None:
            fields["name"] = name
        if token is not None:
            fields["token"] = token
        welcome = await self.request("hello", **fields)
        assert welcome["type"] == "welcome", welcome
        self.player_id = welcome["player"]["id"]
        self.token = welcome["token"]
        return welcome

    # ----------------------------------------------------------------- receiving

    async def expect(
        self,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        where: Callable[[Message], bool] | None = None,
        **fields: Any,
    ) -> Message:
        """Take the first unread message whose fields equal ``fields`` (``type_`` stands for ``type``)
        and, if given, for which ``where`` holds."""
        if "type_" in fields:
            fields["type"] = fields.pop("type_")

        def match() -> Message | None:
            for index, message in enumerate(self.unread):
                if all(message.get(key) == value for key, value in fields.items()) and (
                    where is None or where(message)
                ):
                    return self.unread.pop(index)
            return None

        async def wait() -> Message:
            async with self._arrived:
                while (found := match()) is None:
                    if self._reader.done():
                        raise ConnectionError(f"connection closed before a message with {fields}")
                    await self._arrived.wait()
                return found

        try:
            return await asyncio.wait_for(wait(), timeout)
        except TimeoutError:
            raise AssertionError(
                f"no message with {fields} within {timeout} s; unread: {self.unread}"
            ) from None

    def take_unread(self) -> list[Message]:
        """Every unread message, now read."""
        messages, self.unread = self.unread, []
        return messages

    async def settle(self, seconds: float = 0.2) -> list[Message]:
        """Wait a moment, then take what arrived (for checking that nothing else did)."""
        await asyncio.sleep(seconds)
        return self.take_unread()

    async def _read(self) -> None:
        try:
            async for frame in self.websocket:
                message = json.loads(frame)
                async with self._arrived:
                    self.received.append(message)
                    self.unread.append(message)
                    self._arrived.notify_all()
        except ConnectionClosed:
            pass
        finally:
            async with self._arrived:
                self._arrived.notify_all()
