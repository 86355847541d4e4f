"""At the table in Chromium: a spectator with no name watches a game live, the spectator count, takeback
buttons, and bots under their levels' names (support/web_fixtures.py: a server, a fleet and a browser
for the module)."""

from __future__ import annotations

import re

from playwright.async_api import Browser, expect
from support.client import ArenaClient
from support.play import open_match, play_moves
from support.web import (
    TURN_TIMEOUT_MS,
    PageErrors,
    moves_played,
    open_page,
    play_bot,
    play_first_legal_move,
    sign_in,
)
from support.web_fixtures import IN_MODULE_LOOP

from server.app import Server


@IN_MODULE_LOOP
async def test_a_spectator_with_no_name_watches_a_game_live(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    async with (
        await ArenaClient.connect(arena_server.ws_url) as alice,
        await ArenaClient.connect(arena_server.ws_url) as bob,
    ):
        await alice.hello("Alice")
        await bob.hello("Bob")
        match_id = (await open_match(alice, bob, "connect4"))["match_id"]
        played = ("4", "4")
        await play_moves("connect4", (alice, bob), match_id, list(played))

        page = await open_page(browser, base_url)
        errors = PageErrors(page)
        await page.goto(f"/match/{match_id}")
        await expect(page.locator(".match-title")).to_contain_text("watching")
        await expect(page.get_by_label("Your name")).to_have_count(0)  # no name asked for
        await expect(page.get_by_role("status").filter(has_text="Watching")).to_be_visible()
        await expect(moves_played(page)).to_have_count(2)
        await expect(page.locator(".spectator-count")).to_have_text("1 spectator")
        await alice.expect(type_="match.spectators", match_id=match_id, spectators=1)

        await play_moves("connect4", (alice, bob), match_id, ["3", "5", "2"], played=played)
        await expect(moves_played(page)).to_have_count(5)
        await expect(page.get_by_role("button", name=re.compile("Resign|Takeback"))).to_have_count(0)
        await expect(page.locator(".chat-form")).to_be_hidden()

        await page.close()
        await alice.expect(type_="match.spectators", match_id=match_id, spectators=0)
        errors.assert_none()


@IN_MODULE_LOOP
async def test_a_takeback_asked_for_in_the_browser_and_the_bot_named_by_its_level(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    await sign_in(page, "Tess")
    match_id = await play_bot(page, "Connect Four", 1, "Red (moves first)")
    bots = await (await page.request.get("/api/bots")).json()
    level = next(row for row in bots["games"]["connect4"] if row["level"] == 1)
    await expect(page.locator(".player-strip.seat1")).to_contain_text(f"{level['name']} · level 1")

    await expect(page.locator(".turn-status")).to_have_text(re.compile("Your turn"), timeout=TURN_TIMEOUT_MS)
    await expect(page.get_by_role("button", name="Ask to take back your last move")).to_have_count(0)
    await play_first_legal_move(page)
    await expect(moves_played(page)).to_have_count(2, timeout=TURN_TIMEOUT_MS)
    await page.get_by_role("button", name="Ask to take back your last move").click()
    await expect(page.locator("#toast")).to_contain_text("declined the takeback", timeout=TURN_TIMEOUT_MS)
    await expect(moves_played(page)).to_have_count(2)
    await page.goto("/")  # the lobby lists the game in progress against the bot by its level's name
    shown = f"{level['name']} · level 1"
    await expect(page.locator(f'.your-games [data-match="{match_id}"]')).to_contain_text(f"against {shown}")
    await expect(page.locator(f'.match-list [data-match="{match_id}"]').last).to_contain_text(f"vs {shown}")
    errors.assert_none()


@IN_MODULE_LOOP
async def test_a_visitor_is_asked_for_a_name_only_to_take_the_free_seat(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Opal")
        match_id = (await rival.request("match.create", game="tictactoe", seat=0))["match_id"]
        page = await open_page(browser, base_url)
        errors = PageErrors(page)
        await page.goto(f"/match/{match_id}")
        await expect(page.locator(".turn-status")).to_have_text(
            "Opal is waiting for an opponent: join as X to play."
        )
        await page.get_by_role("button", name="Join as X").click()
        await page.get_by_label("Your name").fill("Nora")
        await page.get_by_role("button", name="Continue").click()
        seated = await rival.expect(type_="seated", match_id=match_id, seat=1)
        assert seated["player"]["name"] == "Nora"
        await expect(page.locator(".player-strip.seat1")).to_contain_text("Nora (you)")
        await expect(page.locator(".player-strip.to-move")).to_contain_text("Opal")
        errors.assert_none()
