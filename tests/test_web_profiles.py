"""Profiles in Chromium: two people play a rated game in their browsers, and both profile pages (reached
from the names on the match page) show their new ratings, the plot of them and the game, with filters and
a link to its replay."""

from __future__ import annotations

import re

import pytest
from playwright.async_api import Browser, Page, expect
from support.web import PageErrors, api, open_page, sign_in
from support.web_fixtures import IN_MODULE_LOOP

from server.app import Server


@pytest.fixture
def base_url(arena_server: Server) -> str:
    """The module's server alone: people play people here, no bot fleet needed."""
    return arena_server.http_url


async def click_cell(page: Page, cell: str) -> None:
    await page.get_by_role("button", name=f"{cell}, empty, legal move").click()


@IN_MODULE_LOOP
async def test_a_rated_game_shows_on_both_profile_pages(browser: Browser, base_url: str) -> None:
    alice = await open_page(browser, base_url)
    bob = await open_page(browser, base_url)
    errors = [PageErrors(alice), PageErrors(bob)]
    await sign_in(alice, "Alice P")
    form = alice.locator("form[aria-labelledby=play-people-title]")
    await form.get_by_label("Game").select_option(label="Tic-tac-toe")
    await form.get_by_label("Time").select_option(label="Untimed")
    await form.get_by_label("Your side").select_option(label="O (moves first)")
    await form.get_by_label("Who can join").select_option(value="public")  # (a profile lists public games)
    await form.get_by_label("Rating").select_option(label="Rated")
    await form.get_by_role("button", name="Open the match").click()
    await alice.wait_for_url(re.compile(r"/match/[^/]+$"))
    match_id = alice.url.rsplit("/", 1)[1]
    await expect(alice.locator(".match-title")).to_contain_text("rated")

    await sign_in(bob, "Bob P", path=alice.url)
    await bob.get_by_role("button", name="Join as X").click()
    for mover, cell in ((alice, "a1"), (bob, "a2"), (alice, "b1"), (bob, "b2"), (alice, "c1")):
        await click_cell(mover, cell)
    await expect(alice.locator(".banner")).to_contain_text("You won")

    # Each name on the match page leads to that player's profile.
    await bob.locator(".player-strip").get_by_role("link", name="Bob P").click()
    await bob.wait_for_url(re.compile(r"/@/id:[0-9a-f]+$"))
    await alice.locator(".player-strip").get_by_role("link", name="Alice P").click()
    await alice.wait_for_url(re.compile(r"/@/id:[0-9a-f]+$"))

    for page, result in ((alice, "Won"), (bob, "Lost")):
        # The rating is stored just after the result: a reload shows it once it is there.
        card = page.locator('.rating-card[data-game="tictactoe"]')
        for _ in range(50):
            if await card.count():
                break
            await page.wait_for_timeout(100)
            await page.reload()
        profile = await api(page, "/api/players/" + page.url.rsplit("/", 1)[1])
        rating = profile["ratings"]["tictactoe"]
        await expect(card.locator(".rating-value strong")).to_have_text(f"{rating['rating']}?")
        await expect(card.locator("svg.rating-plot circle")).to_have_count(2)
        row = page.locator(f'#profile-games [data-match="{match_id}"]')
        await expect(row).to_contain_text(f"{result} · rated · 1500 → {rating['rating']}")
        await expect(page.locator('.counts tr[data-game="tictactoe"] td')).to_have_text(
            ["Tic-tac-toe", *(["1", "0", "0"] if result == "Won" else ["0", "0", "1"])]
        )
    assert (await api(alice, f"/api/players/id:{profile['games'][0]['opponent']['id']}"))["ratings"]

    # Filters: Alice lost no game; the casual ones leave this rated game out.
    await alice.get_by_label("Result").select_option(label="Lost")
    await expect(alice.locator("#profile-games")).to_contain_text("No games match.")
    await alice.get_by_label("Result").select_option(label="Any result")
    await alice.get_by_label("Rated", exact=True).select_option(label="Casual")
    await expect(alice.locator("#profile-games")).to_contain_text("No games match.")
    await alice.get_by_label("Rated", exact=True).select_option(label="Rated")
    game_row = alice.locator(f'#profile-games [data-match="{match_id}"]')
    await game_row.get_by_role("link", name="Replay").click()
    await alice.wait_for_url(re.compile(rf"/replay/{match_id}$"))

    # A profile is reached by name too: the player seen most recently under it.
    await bob.goto("/@/" + "Alice%20P")
    await expect(bob.locator(".profile h1")).to_have_text("Alice P")
    await bob.goto("/@/nobody-of-that-name")
    await expect(bob.get_by_role("alert")).to_contain_text("No such player")
    for page_errors in errors:
        page_errors.assert_none(allowed=("404",))
