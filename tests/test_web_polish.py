"""The board's finish in the browser, in Debian's Chromium against a real server: turning the board
round, sounds and their mute switch, the winning line, looking back in a live game, checkers' hints
and square numbers, the wording of a wipe-out, and the replay page on a phone.

The server, the fleet and Chromium are the module's (support/web_fixtures.py); the opponents are
scripted clients over real sockets.
"""

from __future__ import annotations

import re

from playwright.async_api import Browser, Locator, Page, expect
from support.client import ArenaClient
from support.play import open_match, play_against_bot, play_moves
from support.web import (
    TURN_TIMEOUT_MS,
    PageErrors,
    moves_played,
    open_page,
    sign_in,
)
from support.web_fixtures import IN_MODULE_LOOP

from server.app import Server

TURN_TIMEOUT_S = TURN_TIMEOUT_MS / 1000
NARROW_PHONE = {"width": 375, "height": 812}

WIPE_OUT = [
    *("10-14", "23-18", "14x23", "26x19", "9-14", "22-18", "14x23", "27x18", "11-16", "24-20", "16x23"),
    *("20-16", "12x19", "28-24", "19x28", "32-27", "23x32", "31-27", "32x23x14", "21-17", "14x21"),
    *("30-26", "21x30x23", "29-25", "23-18", "25-22", "18x25"),
]
"""A checkers game in which Black takes every one of White's pieces, the last with 18x25."""


async def join_rivals_match(page: Page, rival: ArenaClient, game: str, name: str) -> str:
    """``rival`` opens a ``game`` match in seat 0; ``page`` signs in as ``name`` by its link and takes
    seat 1. Returns the match id once the match is live."""
    match_id = (await rival.request("match.create", game=game, seat=0))["match_id"]
    await sign_in(page, name, path=f"/match/{match_id}")
    await page.get_by_role("button", name=re.compile(r"^Join as ")).click()
    await rival.expect(type_="started", match_id=match_id)
    await expect(page.locator(".turn-status")).not_to_have_text("")
    return match_id


def cell(page: Page, name: str) -> Locator:
    return page.locator(f'svg.board [data-cell="{name}"]')


async def is_above(page: Page, upper: str, lower: str) -> bool:
    """Whether the board's cell ``upper`` is drawn above the cell ``lower``."""
    first, second = await cell(page, upper).bounding_box(), await cell(page, lower).bounding_box()
    assert first is not None and second is not None
    return first["y"] < second["y"]


async def top_strip_seat(page: Page) -> str | None:
    """The seat of the player strip drawn above the board."""
    return await page.locator(".board-area .player-strip").first.get_attribute("data-seat")


@IN_MODULE_LOOP
async def test_the_board_flips_anywhere_and_the_replay_opens_from_the_players_side(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Réti")
        match_id = await join_rivals_match(page, rival, "chess", "Nimzo")
        # Black's player sees Black at the bottom: rank 1 above rank 8, their own strip below the board.
        assert await is_above(page, "a1", "a8")
        assert await top_strip_seat(page) == "0"
        flip = page.get_by_role("button", name="Flip board")
        await flip.click()
        await expect(flip).to_have_attribute("aria-pressed", "true")
        assert not await is_above(page, "a1", "a8")
        assert await top_strip_seat(page) == "1"
        # The board stays turned as the game goes on.
        assert (await rival.request("move", match_id=match_id, ply=0, move="e2e4"))["type"] == "moved"
        await expect(moves_played(page)).to_have_count(1)
        assert not await is_above(page, "a1", "a8")
        await flip.click()
        assert await is_above(page, "a1", "a8")

        # A spectator sees White at the bottom and may turn the board too.
        watcher = await open_page(browser, base_url)
        await sign_in(watcher, "Kibitzer", path=f"/match/{match_id}")
        await expect(watcher.locator(".match-title")).to_contain_text("watching")
        assert not await is_above(watcher, "a1", "a8")
        await watcher.get_by_role("button", name="Flip board").click()
        assert await is_above(watcher, "a1", "a8")

        # The replay opens from the side the viewer played: Black's for Black's player, White's for others.
        await page.goto(f"/replay/{match_id}")
        await expect(page.locator(".ply-counter")).to_have_text("1 / 1")
        assert await is_above(page, "a1", "a8")
        await page.get_by_role("button", name="Flip board").click()
        assert not await is_above(page, "a1", "a8")
        await watcher.goto(f"/replay/{match_id}")
        await expect(watcher.locator(".ply-counter")).to_have_text("1 / 1")
        assert not await is_above(watcher, "a1", "a8")
    errors.assert_none()


@IN_MODULE_LOOP
async def test_sounds_follow_the_game_and_the_mute_switch_is_remembered(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Drummer")
        match_id = await join_rivals_match(page, rival, "connect4", "Listener")
        mute = page.get_by_role("button", name="Mute sounds")
        await expect(mute).to_have_attribute("aria-pressed", "false")
        assert (await rival.request("move", match_id=match_id, ply=0, move="4"))["type"] == "moved"
        await expect(mute).to_have_attribute("data-last-cue", "move")

        await mute.click()
        await expect(mute).to_have_attribute("aria-pressed", "true")
        await page.reload()
        mute = page.get_by_role("button", name="Mute sounds")
        await expect(mute).to_have_attribute("aria-pressed", "true")
        # Muted, the cues are still told apart (and not heard): the game's end is one.
        assert (await rival.request("resign", match_id=match_id))["type"] == "ended"
        await expect(mute).to_have_attribute("data-last-cue", "end")
        await mute.click()
        await expect(mute).to_have_attribute("aria-pressed", "false")
        await page.reload()
        await expect(page.get_by_role("button", name="Mute sounds")).to_have_attribute(
            "aria-pressed", "false"
        )
    errors.assert_none()


@IN_MODULE_LOOP
async def test_looking_back_in_a_live_game_and_the_winning_line(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    pieces = page.locator("svg.board .piece")
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Stacker")
        match_id = await join_rivals_match(page, rival, "connect4", "Onlooker")

        async def rival_plays(ply: int) -> None:
            assert (await rival.request("move", match_id=match_id, ply=ply, move="1"))["type"] == "moved"
            await expect(moves_played(page)).to_have_count(ply + 1)

        async def i_play(ply: int) -> None:
            await cell(page, "column 2, row 1").click()
            await expect(moves_played(page)).to_have_count(ply + 1)

        for ply in range(4):
            await (rival_plays if ply % 2 == 0 else i_play)(ply)

        # Back to the position after the first move, while the rival moves on.
        await page.get_by_role("button", name="move 1, Red 1").click()
        back = page.get_by_role("button", name="Back to live")
        await expect(back).to_be_visible()
        await expect(pieces).to_have_count(1)
        await expect(page.get_by_role("button", name="move 1, Red 1")).to_have_attribute(
            "aria-current", "step"
        )
        await rival_plays(4)
        await expect(pieces).to_have_count(1)
        await expect(page.locator(".turn-status")).to_have_text("Your turn (Yellow).")
        await cell(page, "column 2, row 1").click(force=True)  # a disabled cell, as a person may
        await expect(page.locator(".move-error")).to_contain_text("earlier position")
        await expect(moves_played(page)).to_have_count(5)
        await back.click()
        await expect(back).to_be_hidden()
        await expect(pieces).to_have_count(5)

        await i_play(5)
        await expect(page.locator("svg.board .cell.win")).to_have_count(0)
        await rival_plays(6)
        await expect(page.locator(".banner")).to_contain_text("four in a row")
        winning = page.locator("svg.board .cell.win")
        await expect(winning).to_have_count(4)
        cells = await winning.evaluate_all("(cells) => cells.map((cell) => cell.dataset.cell)")
        assert sorted(cells) == [f"column 1, row {row}" for row in range(1, 5)]
        await expect(winning.first).to_have_attribute("aria-label", re.compile("winning line"))
        await expect(page.get_by_role("button", name="Mute sounds")).to_have_attribute("data-last-cue", "end")
    errors.assert_none()


@IN_MODULE_LOOP
async def test_a_new_checkers_selection_clears_the_hint_and_numbers_show_over_rings(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Hinter")
        match_id = await join_rivals_match(page, rival, "checkers", "Picker")
        assert (await rival.request("move", match_id=match_id, ply=0, move="9-13"))["type"] == "moved"
        await expect(page.locator(".turn-status")).to_have_text("Your turn (White).")
        # A ringed piece's number is drawn after (so over) its piece and its ring, and shows.
        movable = page.locator("svg.board .cell.movable").first
        order = await movable.evaluate(
            """(cell) => [...cell.querySelectorAll(".hint-ring, .piece, .square-number")]
                .map((part) => part.getAttribute("class").split(" ")[0])"""
        )
        assert "hint-ring" in order and order[-1] == "square-number", order
        await expect(movable.locator(".square-number")).to_be_visible()

        hint = page.locator(".move-error")
        await cell(page, "square 32").click()
        await expect(hint).to_have_text("That piece cannot move: pick a ringed one.")
        await cell(page, "square 22").click()
        await expect(page.locator("svg.board .cell.selected")).to_have_attribute("data-cell", "square 22")
        await expect(hint).to_have_text("")
    errors.assert_none()


@IN_MODULE_LOOP
async def test_a_wipe_out_says_no_pieces_left(browser: Browser, base_url: str, arena_server: Server) -> None:
    watcher = await open_page(browser, base_url)
    errors = PageErrors(watcher)
    async with (
        await ArenaClient.connect(arena_server.ws_url) as black,
        await ArenaClient.connect(arena_server.ws_url) as white,
    ):
        await black.hello("Ann")
        await white.hello("Bob")
        match_id = (await open_match(black, white, "checkers"))["match_id"]
        await play_moves("checkers", (black, white), match_id, WIPE_OUT[:-5])
        await sign_in(watcher, "Referee", path=f"/match/{match_id}")
        await expect(moves_played(watcher)).to_have_count(len(WIPE_OUT) - 5)
        cue = watcher.get_by_role("button", name="Mute sounds")
        # Each move as it comes has its sound: 21x30x23 takes two pieces, 29-25 takes none.
        for index, sound in ((-5, "capture"), (-4, "move")):
            played = tuple(WIPE_OUT[:index])
            await play_moves("checkers", (black, white), match_id, [WIPE_OUT[index]], played=played)
            await expect(cue).to_have_attribute("data-last-cue", sound)
        await play_moves("checkers", (black, white), match_id, WIPE_OUT[-3:], played=tuple(WIPE_OUT[:-3]))
        await expect(cue).to_have_attribute("data-last-cue", "end")
    banner = watcher.locator(".banner")
    await expect(banner).to_contain_text("Ann (Black) wins")
    await expect(banner).to_contain_text("no pieces left")

    await watcher.goto(f"/replay/{match_id}")
    await expect(watcher.locator(".replay-view .banner")).to_have_text("Ann (Black) won: no pieces left")
    await watcher.goto("/finished?game=checkers")
    entry = watcher.locator(f'[data-match="{match_id}"]')
    await expect(entry).to_contain_text("Ann (Black) won: no pieces left")
    errors.assert_none()


async def export_tokens_whole(page: Page) -> bool:
    """Whether every word of the export box is on one line, and the box needs no sideways scroll."""
    return await page.get_by_label("Exported game text").evaluate(
        """(box) => {
            const words = [...box.querySelectorAll(".export-token")];
            const whole = words.every((word) => word.getClientRects().length === 1);
            return words.length > 0 && whole && box.scrollWidth <= box.clientWidth;
        }"""
    )


async def page_fits_across(page: Page) -> bool:
    return await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


@IN_MODULE_LOOP
async def test_the_replay_on_a_narrow_phone(browser: Browser, base_url: str, arena_server: Server) -> None:
    async with await ArenaClient.connect(arena_server.ws_url) as client:
        await client.hello("Pocket")
        state = await client.request("match.create", game="connect4", seat=0, bot={"level": 3})
        bot_match = state["match_id"]
        await client.expect(type_="started", match_id=bot_match, timeout=TURN_TIMEOUT_S)
        await play_against_bot(client, "connect4", bot_match, timeout=TURN_TIMEOUT_S)
    async with (
        await ArenaClient.connect(arena_server.ws_url) as black,
        await ArenaClient.connect(arena_server.ws_url) as white,
    ):
        await black.hello("Ann")
        await white.hello("Bob")
        checkers_match = (await open_match(black, white, "checkers"))["match_id"]
        await play_moves("checkers", (black, white), checkers_match, WIPE_OUT)

    page = await open_page(browser, base_url, viewport=NARROW_PHONE)
    errors = PageErrors(page)
    # The bot's search: each move a card, its principal variation wrapped inside the window.
    await page.goto(f"/replay/{bot_match}")
    pv = page.locator(".engine-table td.pv")
    await expect(pv.first).to_be_visible()
    assert await page_fits_across(page)
    for box in [await pv.nth(index).bounding_box() for index in range(await pv.count())]:
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= NARROW_PHONE["width"]
    assert await export_tokens_whole(page)

    # A PDN export's long lines wrap between moves; "18x25" or "32x23x14" is never split.
    await page.goto(f"/replay/{checkers_match}")
    export = page.get_by_label("Exported game text")
    await expect(export).to_contain_text("18x25")
    assert await page_fits_across(page)
    assert await export_tokens_whole(page)
    lines = await export.evaluate(
        """(box) => new Set([...box.querySelectorAll(".export-token")]
            .map((word) => Math.round(word.getBoundingClientRect().top))).size"""
    )
    exported = await export.inner_text()
    assert lines > exported.count("\n"), "the moves' 79-column lines wrap in a 375 px window"
    errors.assert_none()
