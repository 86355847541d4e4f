"""Driving the browser client with Playwright, as a person would: by labels, roles and clicks.

The helpers find controls by their accessible names (the same ones a screen
reader announces), so a test that passes also says the controls are named.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from playwright.async_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Locator,
    Page,
    WebSocketRoute,
    expect,
)

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 860}
LAPTOP = {"width": 1366, "height": 768}
"""The commonest laptop screen: the shortest a board, its players and the lines under it must fit."""
PHONE = {"width": 390, "height": 844}
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
TURN_TIMEOUT_MS = 20_000


class PageErrors:
    """Uncaught exceptions and console errors of a page, so a test can insist there were none."""

    def __init__(self, page: Page) -> None:
        self.messages: list[str] = []
        page.on("pageerror", lambda error: self.messages.append(f"uncaught: {error}"))
        page.on("console", self._console)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.messages.append(f"console: {message.text}")

    def assert_none(self, allowed: tuple[str, ...] = ()) -> None:
        unexpected = [text for text in self.messages if not any(part in text for part in allowed)]
        assert not unexpected, unexpected


class SocketTap:
    """Routes a page's WebSocket through the test: records every request the page sends, and can cut the
    line the way a network failure would (both ends closed), without the page's cooperation."""

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.lines: list[tuple[WebSocketRoute, WebSocketRoute]] = []

    async def attach(self, page: Page) -> None:
        """Tap every WebSocket the page opens from now on."""
        await page.route_web_socket(re.compile(r"/ws$"), self._connect)

    def _connect(self, page_side: WebSocketRoute) -> None:
        server_side = page_side.connect_to_server()

        def from_page(message: str | bytes) -> None:
            self.sent.append(json.loads(message))
            server_side.send(message)

        page_side.on_message(from_page)
        self.lines.append((page_side, server_side))

    def requests(self, type: str) -> list[dict]:
        return [message for message in self.sent if message.get("type") == type]

    async def cut(self) -> None:
        """Close the newest connection at both ends."""
        page_side, server_side = self.lines[-1]
        await server_side.close()
        await page_side.close()


async def open_page(browser: Browser, base_url: str, *, viewport: dict[str, int] = DESKTOP) -> Page:
    context: BrowserContext = await browser.new_context(viewport=viewport, base_url=base_url)
    return await context.new_page()


async def api(page: Page, path: str) -> dict:
    """A JSON API answer, fetched through the page's browser context (the server shares this event loop)."""
    response = await page.request.get(path)
    assert response.ok, f"{path}: {response.status}"
    return await response.json()


async def sign_in(page: Page, name: str, path: str = "/") -> None:
    """Open the lobby as a first-time visitor, pick ``name``, then go to ``path`` (a match's page asks for
    no name, only for watching), and wait until the connection is up."""
    await page.goto("/")
    await page.get_by_label("Your name").fill(name)
    await page.get_by_role("button", name="Continue").click()
    await expect(page.get_by_role("status").filter(has_text="Online")).to_be_visible()
    if path != "/":
        await page.goto(path)
        await expect(page.get_by_role("status").filter(has_text="Online")).to_be_visible()


async def play_bot(page: Page, game_title: str, level: int, side: str) -> str:
    """Start a game against a bot from the lobby form; returns the match id from the URL."""
    form = page.locator("form[aria-labelledby=play-bot-title]")
    await form.get_by_label("Game").select_option(label=game_title)
    levels = form.get_by_label("Bot level")
    offered = await levels.locator("option").evaluate_all("(options) => options.map((o) => o.value)")
    await levels.select_option(value=next(value for value in offered if value.split("|")[0] == str(level)))
    await form.get_by_label("Your side").select_option(label=side)
    await form.get_by_role("button", name="Play the bot").click()
    await page.wait_for_url(re.compile(r"/match/[^/]+$"))
    return page.url.rsplit("/", 1)[1]


def moves_played(page: Page) -> Locator:
    """The moves in the page's move list."""
    return page.locator("ol.move-list .move")


async def wait_for_my_turn_or_end(page: Page) -> bool:
    """True when it is this page's turn, False when the match has ended."""
    banner = page.locator(".banner:not([hidden])")
    mine = page.locator(".turn-status", has_text="Your turn")
    await expect(banner.or_(mine)).to_be_visible(timeout=TURN_TIMEOUT_MS)
    return await mine.is_visible()


async def play_first_legal_move(page: Page) -> None:
    """Click the first highlighted move; for checkers, the first movable piece, then each landing square."""
    board = page.locator("svg.board")
    before = await moves_played(page).count()
    movable = board.locator(".cell.movable")
    if await movable.count():
        await movable.first.click()
        while await board.locator(".cell.target").count():
            await board.locator(".cell.target").first.click()
            if await moves_played(page).count() > before:
                break
    else:
        await board.locator(".cell.target").first.click()
    # The move is listed once the server has committed it (the bot may answer at once, too).
    await expect(moves_played(page).nth(before)).to_be_attached(timeout=TURN_TIMEOUT_MS)


async def assert_in_view(page: Page, *locators: Locator) -> None:
    """Each locator's element shows whole in the window, the page scrolled as it is now."""
    viewport = page.viewport_size
    assert viewport is not None
    for locator in locators:
        await expect(locator).to_be_visible()
        box = await locator.bounding_box()
        assert box is not None, locator
        inside = box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"]
        inside = inside and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"]
        window = f"{viewport['width']}x{viewport['height']}"
        assert inside, f"{locator} at {box} is not all within the {window} window"


async def screenshot(page: Page, name: str) -> Path:
    """Save the whole page as docs/screenshots/{name}.png, from the top, once passing notices are gone."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    await expect(page.locator("#toast")).to_be_hidden(timeout=10_000)
    await page.evaluate("window.scrollTo(0, 0)")
    await page.screenshot(path=str(path), full_page=True, animations="disabled")
    return path
