"""Fixtures of the browser tests (registered in tests/conftest.py): per test module, one server (SQLite),
one bot fleet (one search worker) and one Chromium, which every test of the module shares; each test
opens its own browser contexts, so each person has their own localStorage identity.

A module that uses them runs its tests in the module's event loop (``IN_MODULE_LOOP``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from playwright.async_api import Browser, async_playwright

from bots.fleet import Fleet, FleetConfig
from bots.pool import SearchPool
from server.app import Server, running_server
from server.config import ServerConfig
from support.fixtures import FLEET_KEY
from support.web import CHROMIUM_ARGS

IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
"""The tests share the module's server, fleet and browser, so they run in the module's event loop."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def arena_server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Server]:
    database = tmp_path_factory.mktemp("web") / "arena.sqlite3"
    config = ServerConfig(
        port=0, db_url=f"sqlite+aiosqlite:///{database}", grace_s=120.0, fleet_key=FLEET_KEY
    )
    async with running_server(config) as server:
        yield server


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fleet(arena_server: Server) -> AsyncIterator[Fleet]:
    """Bots of every level, seated only where a match asks for one, offered at /api/bots as
    `plyarena run` offers them (on the server's in-process bus)."""

    async def announce(topic: str, payload: bytes) -> None:
        await arena_server.bus.publish(topic, payload, retain=True)

    async with SearchPool(1) as pool:
        fleet = Fleet(
            pool, FleetConfig(idle_wait_s=None, max_games=16, fleet_key=FLEET_KEY), announce=announce
        )
        fleet.follow_server(arena_server.ws_url)
        async with fleet:
            yield fleet


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser(chromium_path: str) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        await browser.close()


@pytest.fixture
def base_url(arena_server: Server, fleet: Fleet) -> str:
    return arena_server.http_url
