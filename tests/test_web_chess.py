"""Chess in the browser client, in Debian's Chromium: two people play a game to a promotion and a
checkmate, by drag and by clicks, and one person plays a chess bot from the lobby.

The server, the fleet and Chromium are the module's (support/web_fixtures.py). The game saves the
chess screenshot shown in the README (docs/screenshots/chess.png).
"""

from __future__ import annotations

import asyncio
import re

from playwright.async_api import Browser, FloatRect, Locator, Page, expect
from support.web import (
    LAPTOP,
    TURN_TIMEOUT_MS,
    PageErrors,
    api,
    moves_played,
    open_page,
    play_bot,
    screenshot,
    sign_in,
)
from support.web_fixtures import IN_MODULE_LOOP

# White promotes on h8 taking the rook, and mates with the queen on h5 (the f- and g-pawns are gone).
GAME = [
    ("e2", "e4", "e4"),
    ("f7", "f5", "f5"),
    ("e4", "f5", "exf5"),
    ("g8", "h6", "Nh6"),
    ("f5", "f6", "f6"),
    ("h8", "g8", "Rg8"),
    ("f6", "g7", "fxg7"),
    ("g8", "h8", "Rh8"),
    ("g7", "h8", "gxh8=Q"),
    ("h6", "g8", "Ng8"),
    ("d1", "h5", "Qh5#"),
]
"""Each move as its from and to squares, then as the move list shows it (SAN)."""


def square(page: Page, name: str) -> Locator:
    """The square called ``name`` (``e4``) on the page's board."""
    return page.locator(f'svg.board [data-cell="{name}"]')


async def box_of(element: Locator) -> FloatRect:
    """Where ``element`` is drawn, once it is: a board drawn again meanwhile has no box for a moment."""
    for _ in range(50):
        box = await element.bounding_box()
        if box is not None:
            return box
        await asyncio.sleep(0.1)
    raise AssertionError(f"{element} was never drawn")


async def click_move(page: Page, origin: str, target: str) -> None:
    await square(page, origin).click()
    await square(page, target).click()


async def create_private_chess_match(alice: Page) -> str:
    """Alice opens a private chess match as White from the lobby; its link."""
    form = alice.locator("form[aria-labelledby=play-people-title]")
    await form.get_by_label("Game").select_option(label="Chess")
    await form.get_by_label("Your side").select_option(label="White (moves first)")
    await form.get_by_label("Who can join").select_option(value="private")
    await form.get_by_role("button", name="Open the match").click()
    await alice.wait_for_url(re.compile(r"/match/[^/]+$"))
    return await alice.get_by_label("Private link: send it to your opponent").input_value()


@IN_MODULE_LOOP
async def test_two_people_play_chess_to_a_promotion_and_mate(browser: Browser, base_url: str) -> None:
    alice = await open_page(browser, base_url, viewport=LAPTOP)
    bob = await open_page(browser, base_url, viewport=LAPTOP)
    errors = [PageErrors(alice), PageErrors(bob)]
    await sign_in(alice, "Alice")
    link = await create_private_chess_match(alice)
    await sign_in(bob, "Bob", path=link)
    await bob.get_by_role("button", name="Join as Black").click()
    await expect(alice.locator(".turn-status")).to_have_text("Your turn (White).")

    # Each player has their own pieces at the bottom: Black's player sees the board turned round.
    for page, bottom, top in ((alice, "e1", "e8"), (bob, "e8", "e1")):
        low, high = await box_of(square(page, bottom)), await box_of(square(page, top))
        assert low["y"] > high["y"], (page, low, high)
    await expect(square(alice, "e1")).to_have_attribute("aria-label", "e1, White king")
    # A king stands beside each name, in the colour of that player's pieces.
    black_swatch = alice.locator(".player-strip.seat1 .swatch image")
    await expect(black_swatch).to_have_attribute("href", re.compile(r"/chess-pieces/bK\.svg$"))

    # Legal targets: a selected pawn shows its two squares; one it cannot reach is the server's to refuse.
    await square(alice, "e2").click()
    await expect(alice.locator("svg.board .cell.target")).to_have_count(2)
    await square(alice, "e5").click()
    await expect(alice.locator(".move-error")).to_contain_text("the White pawn on e2 cannot move to e5")

    # The first move by drag, the rest by clicks.
    await square(alice, "e2").drag_to(square(alice, "e4"))
    await expect(moves_played(alice)).to_have_text(["e4"])
    for ply, (origin, target, shown) in enumerate(GAME[1:8], start=1):
        player = (alice, bob)[ply % 2]
        await expect(moves_played(player)).to_have_count(ply, timeout=TURN_TIMEOUT_MS)
        await click_move(player, origin, target)
        await expect(moves_played(player).nth(ply)).to_have_text(shown)
    await expect(square(alice, "g8")).to_have_class(re.compile(r"\blast\b"))

    # g7-h8 has four moves, one per piece: the picker asks which (the arrows go along it), and Escape puts
    # it away unplayed.
    await expect(moves_played(alice)).to_have_count(8, timeout=TURN_TIMEOUT_MS)
    picker = alice.get_by_role("group", name="Promote the pawn")
    await click_move(alice, "g7", "h8")
    await expect(picker.get_by_role("button")).to_have_count(4)
    await expect(picker.get_by_role("button", name="Promote to queen")).to_be_focused()
    await alice.keyboard.press("Escape")
    await expect(picker).to_have_count(0)
    await click_move(alice, "g7", "h8")
    await alice.keyboard.press("ArrowDown")
    await expect(picker.get_by_role("button", name="Promote to rook")).to_be_focused()
    await alice.keyboard.press("ArrowUp")
    await expect(picker.get_by_role("button", name="Promote to queen")).to_be_focused()
    await picker.get_by_role("button", name="Promote to queen").click()
    await expect(moves_played(alice).nth(8)).to_have_text("gxh8=Q")
    await expect(square(bob, "h8")).to_have_attribute(
        "aria-label", re.compile(r"^h8, White queen, last move")
    )

    await click_move(bob, "h6", "g8")
    await expect(moves_played(alice)).to_have_count(10, timeout=TURN_TIMEOUT_MS)
    await click_move(alice, "d1", "h5")
    for page, headline in ((alice, "You won!"), (bob, "You lost")):
        await expect(page.locator(".banner")).to_contain_text(headline)
        await expect(page.locator(".banner")).to_contain_text("checkmate")
        await expect(moves_played(page)).to_have_text([shown for _, _, shown in GAME])
        # The mated king's square is marked, for the eye and for a screen reader.
        await expect(square(page, "e8")).to_have_class(re.compile(r"\bcheck\b"))
        await expect(square(page, "e8")).to_have_attribute("aria-label", "e8, Black king, in check")
    await screenshot(alice, "chess")

    # The replay lists the moves in SAN, and marks the check at the end as the match page did.
    match_id = alice.url.rsplit("/", 1)[1]
    record = await api(alice, f"/api/matches/{match_id}")
    assert [move["move"] for move in record["moves"]][8] == "g7h8q"
    await alice.goto(f"/replay/{match_id}")
    await expect(moves_played(alice)).to_have_text([shown for _, _, shown in GAME])
    await expect(alice.locator(".current-move")).to_have_text("Ply 11: White played Qh5#")
    await expect(square(alice, "e8")).to_have_class(re.compile(r"\bcheck\b"))
    await alice.keyboard.press("ArrowLeft")
    await expect(alice.locator("svg.board .cell.check")).to_have_count(0)
    for page_errors in errors:
        page_errors.assert_none()


@IN_MODULE_LOOP
async def test_a_chess_bot_from_the_lobby(browser: Browser, base_url: str) -> None:
    page = await open_page(browser, base_url, viewport=LAPTOP)
    errors = PageErrors(page)
    await sign_in(page, "Kasparova")
    await play_bot(page, "Chess", 1, "Black")
    # The bot (White) moves first; then Black's knight from g8 goes to f6, on the board turned round.
    await expect(moves_played(page)).to_have_count(1, timeout=TURN_TIMEOUT_MS)
    await expect(page.locator(".turn-status")).to_have_text("Your turn (Black).")
    await click_move(page, "g8", "f6")
    await expect(moves_played(page).nth(1)).to_have_text("Nf6")
    await expect(moves_played(page)).to_have_count(3, timeout=TURN_TIMEOUT_MS)
    errors.assert_none()
