"""Quick pairing in Chromium: two people press "Find an opponent", are paired by the pool and play their game
to the end; a player who waits long is offered a bot and plays it instead."""

from __future__ import annotations

import asyncio
import json
import re

from playwright.async_api import Browser, Page, expect
from support.fixtures import FLEET_KEY
from support.web import (
    PageErrors,
    open_page,
    play_first_legal_move,
    sign_in,
)
from support.web_fixtures import IN_MODULE_LOOP

from server.app import Server, running_server
from server.config import ServerConfig


async def find_an_opponent(page: Page, game: str, time: str, *, first: bool = True) -> None:
    """Ask the lobby's "Play a person now" for an opponent; the ``first`` in the pool sees it wait."""
    form = page.locator("form[aria-labelledby=play-now-title]")
    await form.get_by_label("Game").select_option(label=game)
    await form.get_by_label("Time").select_option(label=time)
    await form.get_by_role("button", name="Find an opponent").click()
    if first:
        await expect(form.get_by_role("status")).to_contain_text(
            "Looking for an opponent rated 1400–1600 (you: 1500) · waiting"
        )


@IN_MODULE_LOOP
async def test_two_people_are_paired_by_the_pool_and_play_to_the_end(browser: Browser, base_url: str) -> None:
    alice = await open_page(browser, base_url)
    bob = await open_page(browser, base_url)
    errors = [PageErrors(alice), PageErrors(bob)]
    await sign_in(alice, "Alice")
    await sign_in(bob, "Bob")
    await find_an_opponent(alice, "Tic-tac-toe", "1 min")
    await find_an_opponent(bob, "Tic-tac-toe", "1 min", first=False)
    for page in (alice, bob):
        await page.wait_for_url(re.compile(r"/match/[^/]+$"))
    assert alice.url == bob.url

    # Each plays the first legal move on their turn, until the game ends.
    while (mover := await next_mover(alice, bob)) is not None:
        await play_first_legal_move(mover)
    for page in (alice, bob):
        await expect(page.locator(".banner")).to_be_visible()
    for page_errors in errors:
        page_errors.assert_none()


@IN_MODULE_LOOP
async def test_a_long_waiter_is_offered_a_bot_and_plays_it_instead(
    browser: Browser, tmp_path: object
) -> None:
    config = ServerConfig(
        port=0,
        db_url=f"sqlite+aiosqlite:///{tmp_path}/pool.sqlite3",
        grace_s=120.0,
        fleet_key=FLEET_KEY,
        pool_bot_offer_s=1.0,
    )
    async with running_server(config) as server:
        announce_a_rated_bot(server)
        page = await open_page(browser, server.http_url)
        await sign_in(page, "Carol")
        await find_an_opponent(page, "Connect Four", "5 min + 3 s")
        form = page.locator("form[aria-labelledby=play-now-title]")
        await expect(form).to_contain_text("No one yet? Steady (level 4, rated 1480) can play you now.")
        await form.get_by_role("button", name="Play Steady instead").click()
        await page.wait_for_url(re.compile(r"/match/[^/]+$"))
        match_id = page.url.rsplit("/", 1)[1]
        assert server.lobby.entries[match_id].bot is not None
        assert server.lobby.entries[match_id].bot.level == 4  # type: ignore[union-attr]


async def next_mover(*pages: Page) -> Page | None:
    """The page whose turn it is, or ``None`` once the game has ended."""
    for _ in range(400):
        for page in pages:
            if await page.locator(".banner:not([hidden])").is_visible():
                return None
            if await page.locator(".turn-status", has_text="Your turn").is_visible():
                return page
        await asyncio.sleep(0.05)
    raise AssertionError("neither page's turn came, nor the end")


def announce_a_rated_bot(server: Server) -> None:
    """What a fleet offering a calibrated Connect Four bot says on the server's bus (docs/bots.md)."""
    rating = {"elo": 1480, "ci_low": 1440, "ci_high": 1520, "games": 400}
    bot = {"level": 4, "style": "alphabeta", "name": "Steady", "rating": rating}
    offer = {"fleet": "pool-test", "games": {"connect4": [bot]}}
    server.bus.publish_nowait("plyarena/v1/bots/pool-test", json.dumps(offer).encode(), True)
