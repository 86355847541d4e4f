"""The browser client in Chromium: a second load revalidates the files it has (304s, no download) over
few kept-alive connections, and the reconnect loop backs off from a server that welcomes and drops it,
and retries at once when the browser comes back online or the page is shown.

The reconnect tests stand in for the server on the page's WebSocket (Playwright's ``route_web_socket``:
the test answers ``hello`` itself) and hold the page's clock, so each wait the loop picks is read, then
skipped, without the test waiting for it.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable

import pytest_asyncio
from playwright.async_api import Browser, Page, Request, WebSocketRoute, expect
from support.web_fixtures import IN_MODULE_LOOP

from server.app import Server

pytestmark = IN_MODULE_LOOP

IDENTITY = {"name": "Flaky", "token": "t" * 43, "playerId": "p1"}
WELCOME = {
    "type": "welcome",
    "player": {"id": "p1", "name": "Flaky", "bot": False},
    "token": "t" * 43,
    "protocol": 1,
    "instance": "arena-test",
    "matches": [],
}


async def test_a_second_load_revalidates_its_files_over_kept_alive_connections(
    browser: Browser, arena_server: Server
) -> None:
    context = await browser.new_context(base_url=arena_server.http_url)
    page = await context.new_page()
    loads: list[list[tuple[str, int, Request]]] = [[], []]
    current = loads[0]
    page.on("response", lambda response: current.append((response.url, response.status, response.request)))
    await page.goto("/")
    await page.wait_for_load_state("networkidle")
    current = loads[1]
    await page.reload()
    await page.wait_for_load_state("networkidle")
    await expect(page.get_by_label("Your name")).to_be_visible()
    await context.close()
    first, second = loads

    def files(load: list[tuple[str, int, Request]]) -> dict[str, int]:
        """The modules and stylesheet a load fetched, with their statuses."""
        return {url: status for url, status, _ in load if re.search(r"\.(js|css)$", url)}

    assert len(files(first)) >= 20 and set(files(first).values()) == {200}
    assert files(second).keys() == files(first).keys()
    assert set(files(second).values()) == {304}, "each file kept, asked after, and not sent again"
    # Kept-alive connections: a handful made, each reused for several requests (-1: no connection made).
    made = [url for url, _, request in first if request.timing["connectStart"] != -1]
    assert 1 <= len(made) <= 6 < len(first), made


def welcome_and_drop(attempts: list[WebSocketRoute], *, drop: list[bool]) -> Callable[[WebSocketRoute], None]:
    """A server on the page's WebSocket (the test itself) that welcomes every hello, then closes the
    connection at once while ``drop[0]`` is true; each connection attempt is noted in ``attempts``."""

    def connected(socket: WebSocketRoute) -> None:
        attempts.append(socket)

        def received(message: str | bytes) -> None:
            request = json.loads(message)
            if request.get("type") != "hello":
                return
            socket.send(json.dumps({**WELCOME, "id": request["id"]}))
            if drop[0]:
                asyncio.get_running_loop().create_task(socket.close())

        socket.on_message(received)

    return connected


async def next_wait_ms(page: Page) -> float:
    """The wait the page's reconnect loop picked after its latest drop, as its status shows it."""
    badge = page.locator("#connection")
    await expect(badge).to_have_attribute("title", re.compile(r"retrying in "))
    title = await badge.get_attribute("title") or ""
    return float(re.search(r"retrying in ([0-9.]+) s", title).group(1)) * 1000  # type: ignore[union-attr]


async def attempt_made(attempts: list[WebSocketRoute], count: int) -> None:
    async with asyncio.timeout(10):
        while len(attempts) < count:
            await asyncio.sleep(0.01)


@pytest_asyncio.fixture(loop_scope="module")
async def flaky_page(
    browser: Browser, arena_server: Server
) -> AsyncIterator[tuple[Page, list[WebSocketRoute], list[bool]]]:
    """A page of a returning player whose WebSocket goes to a server that welcomes and drops it, on a
    clock that stands still unless the test moves it."""
    context = await browser.new_context(base_url=arena_server.http_url)
    await context.add_init_script(
        f"localStorage.setItem('plyarena.identity', {json.dumps(json.dumps(IDENTITY))})"
    )
    page = await context.new_page()
    attempts: list[WebSocketRoute] = []
    drop = [True]
    await page.route_web_socket(re.compile(r"/ws$"), welcome_and_drop(attempts, drop=drop))
    await page.clock.install()
    await page.clock.pause_at(1_900_000_000_000)
    await page.goto("/")
    await attempt_made(attempts, 1)
    yield page, attempts, drop
    await context.close()


async def test_a_server_that_welcomes_and_drops_is_retried_ever_more_slowly(
    flaky_page: tuple[Page, list[WebSocketRoute], list[bool]],
) -> None:
    page, attempts, drop = flaky_page
    waits = []
    for attempt in range(1, 10):
        waits.append(await next_wait_ms(page))
        await page.clock.run_for(int(waits[-1]) + 100)  # (shown to a tenth of a second)
        await attempt_made(attempts, attempt + 1)
    # Doubling from 250 ms (each drawn from the upper half of its step) up to the 30 s cap.
    for step, wait in enumerate(waits):
        ceiling = min(30_000, 250 * 2**step)
        assert ceiling / 2 - 50 <= wait <= ceiling + 50, (step, waits)
    # A connection that stays up a while starts the backoff over.
    drop[0] = False
    await page.clock.run_for(int(waits[-1]) + 100)  # (shown to a tenth of a second)
    await expect(page.locator("#connection")).to_have_attribute("data-status", "online")
    await page.clock.run_for(10_001)
    drop[0] = True
    await attempts[-1].close()
    assert await next_wait_ms(page) <= 250 + 50


async def test_coming_back_online_or_being_shown_retries_at_once_and_a_hidden_page_waits(
    flaky_page: tuple[Page, list[WebSocketRoute], list[bool]],
) -> None:
    page, attempts, _ = flaky_page
    for attempt in range(1, 6):  # (dropped five times: the next wait is seconds long)
        await page.clock.run_for(int(await next_wait_ms(page)) + 100)
        await attempt_made(attempts, attempt + 1)
    assert await next_wait_ms(page) >= 2000
    await page.evaluate("window.dispatchEvent(new Event('online'))")
    await attempt_made(attempts, 7)  # (the clock stands still: only the event can have retried)
    # Hidden: no retry sooner than every 30 s; shown again: a retry at once.
    await next_wait_ms(page)
    await set_hidden(page, True)
    await page.evaluate("window.dispatchEvent(new Event('online'))")
    await attempt_made(attempts, 8)
    assert await next_wait_ms(page) >= 30_000
    await page.clock.run_for(int(await next_wait_ms(page)) + 100)
    await attempt_made(attempts, 9)
    assert await next_wait_ms(page) >= 30_000
    await set_hidden(page, False)
    await attempt_made(attempts, 10)


async def set_hidden(page: Page, hidden: bool) -> None:
    """Hide or show the page as a switched tab would, and tell it so."""
    await page.evaluate(
        """(hidden) => {
            Object.defineProperty(document, "hidden", { configurable: true, get: () => hidden });
            document.dispatchEvent(new Event("visibilitychange"));
        }""",
        hidden,
    )
