"""Fixtures for tests that talk to a real server over real sockets (registered in tests/conftest.py).

- ``arena_db_url``: a fresh database, once per backend: an SQLite file per test,
  and a throwaway PostgreSQL database per test session (dropped at the end).
  Tests that use it run on both; tests on PostgreSQL see other tests' rows, so
  they look only at their own players and matches.
- ``start_server``: start in-process servers on free ports (closed after the test), each trusting
  fleets that say :data:`FLEET_KEY`.
- ``arena``: one such server with the defaults.
- ``connect``: open :class:`~support.client.ArenaClient` connections (closed after the test),
  bare or, with ``connect.player``, as a player that has said hello.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_scratch import temporary_postgres_database

from server.app import Server, running_server
from server.config import ServerConfig
from support.client import ArenaClient
from support.services import PrivateMosquitto, mosquitto_binary

StartServer = Callable[..., Awaitable[Server]]

FLEET_KEY = "tests-fleet-key-0123456789"
"""The fleet key of the servers ``start_server`` starts: a fleet (or a client) that says it may post notes."""


class Connect:
    """Opens client connections to a server, each closed when the test ends."""

    def __init__(self, stack: contextlib.AsyncExitStack) -> None:
        self._stack = stack

    async def __call__(self, target: Server | str, **options: Any) -> ArenaClient:
        """A bare connection to ``target`` (a server or a WebSocket URL); ``options`` go to websockets."""
        url = target if isinstance(target, str) else target.ws_url
        client = await ArenaClient.connect(url, **options)
        self._stack.push_async_callback(client.close)
        return client

    async def player(
        self,
        target: Server | str,
        name: str | None = None,
        *,
        token: str | None = None,
        bot: bool = False,
        fleet_key: str | None = None,
    ) -> ArenaClient:
        """A connection that has said hello: a new player called ``name``, or the one ``token`` names."""
        client = await self(target)
        await client.hello(name, token=token, bot=bot, fleet_key=fleet_key)
        return client


@pytest.fixture(scope="session")
def arena_postgres_url(postgres_url: str) -> Iterator[str]:
    with temporary_postgres_database(postgres_url, "server") as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def arena_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'arena.sqlite3'}"
    return request.getfixturevalue("arena_postgres_url")


@pytest.fixture
async def start_server(arena_db_url: str) -> AsyncIterator[StartServer]:
    """``await start_server(**config)``: a running server on a free port; options override the defaults."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(**options: Any) -> Server:
            config = ServerConfig(
                **{"port": 0, "db_url": arena_db_url, "grace_s": 30.0, "fleet_key": FLEET_KEY, **options}
            )
            return await stack.enter_async_context(running_server(config))

        yield start


@pytest.fixture
async def arena(start_server: StartServer) -> Server:
    return await start_server()


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    """``await connect(server_or_url)``, ``await connect.player(server, "Alice")``: see :class:`Connect`."""
    async with contextlib.AsyncExitStack() as stack:
        yield Connect(stack)


@pytest.fixture
async def private_broker() -> AsyncIterator[PrivateMosquitto]:
    """A Mosquitto of this test's own, so that no other test's (or helper's) messages reach it."""
    broker = PrivateMosquitto(mosquitto_binary())
    await broker.start()
    try:
        yield broker
    finally:
        await broker.stop()
