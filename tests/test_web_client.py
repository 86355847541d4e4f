"""The browser client in Debian's Chromium, against a real server and a real bot fleet.

One server (SQLite), one fleet (one search worker) and one browser serve the
whole module (support/web_fixtures.py); every test opens its own browser
contexts, so each person has their own localStorage identity. The tests drive
the pages by accessible names and save the screenshots shown in the README
(docs/screenshots/).
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect
from support.client import ArenaClient
from support.play import decisive_game, open_match, play_against_bot, play_moves
from support.web import (
    LAPTOP,
    PHONE,
    TURN_TIMEOUT_MS,
    PageErrors,
    SocketTap,
    api,
    assert_in_view,
    moves_played,
    open_page,
    play_bot,
    play_first_legal_move,
    screenshot,
    sign_in,
    wait_for_my_turn_or_end,
)
from support.web_fixtures import IN_MODULE_LOOP

from server.app import Server, running_server
from server.config import ServerConfig
from server.lobby import SNAPSHOT_LIVE, SNAPSHOT_OPEN
from server.protocol import LobbyEntry, PlayerInfo

TURN_TIMEOUT_S = TURN_TIMEOUT_MS / 1000


@IN_MODULE_LOOP
async def test_tictactoe_against_a_level_1_bot_to_the_end(browser: Browser, base_url: str) -> None:
    page = await open_page(browser, base_url, viewport=LAPTOP)
    errors = PageErrors(page)
    await sign_in(page, "Ada")
    bot_form = page.locator("form[aria-labelledby=play-bot-title]")
    await expect(bot_form.locator(".level-description")).not_to_be_empty()
    await bot_form.get_by_label("Game").select_option(label="Tic-tac-toe")
    await bot_form.get_by_label("Bot level").select_option(index=0)
    # Level 1 anchors the ratings: its own is fixed, with no interval to tell.
    await expect(bot_form.locator(".level-description")).to_contain_text("1000 Elo (the scale's fixed point")
    await expect(bot_form.locator(".level-description")).to_contain_text("level 1 held at 1000")
    match_id = await play_bot(page, "Tic-tac-toe", 1, "O (moves first)")

    await expect(page.get_by_role("group", name="Tic-tac-toe board")).to_be_visible()
    assert await wait_for_my_turn_or_end(page)
    # The first move by keyboard: focus starts on the first legal cell (a1); right, then Enter.
    await page.locator("svg.board [tabindex='0']").focus()
    await page.keyboard.press("ArrowRight")
    await expect(page.locator("svg.board :focus")).to_have_attribute("aria-label", "b1, empty, legal move")
    await page.keyboard.press("Enter")
    await expect(moves_played(page).first).to_have_text("b1")
    # An occupied cell is refused, and the reason comes from the rules on the server.
    await wait_for_my_turn_or_end(page)
    taken = page.locator("svg.board .cell").filter(has=page.locator(".piece")).first
    await taken.click()
    await expect(page.locator(".move-error")).to_contain_text("is taken")
    # On a laptop's screen the refusal shows with the board and both players, without scrolling.
    strips = page.locator(".player-strip")
    refusal = page.locator(".move-error")
    await assert_in_view(page, page.locator("svg.board"), strips.first, strips.last, refusal)

    while await wait_for_my_turn_or_end(page):
        await play_first_legal_move(page)
    banner = page.locator(".banner")
    await expect(banner).to_contain_text(re.compile(r"You won!|You lost|Draw"))
    await expect(banner).to_contain_text(re.compile(r"three in a row|board full"))
    await expect(page.get_by_role("button", name="Rematch")).to_be_visible()

    record = await api(page, f"/api/matches/{match_id}")
    assert record["status"] == "finished"
    assert await moves_played(page).count() == len(record["moves"])
    assert any(move["engine"] for move in record["moves"]), "the bot's moves carry its search info"
    await screenshot(page, "tictactoe")

    # The bot takes a rematch: a new match, sides swapped, and the bot (now O) moves first.
    await page.get_by_role("button", name="Rematch").click()
    await page.wait_for_url(lambda url: "/match/" in url and not url.endswith(match_id))
    await expect(page.locator(".player-strip", has_text="(you)")).to_contain_text("X")
    assert await wait_for_my_turn_or_end(page)
    await expect(moves_played(page)).to_have_count(1)
    rematch_id = page.url.rsplit("/", 1)[1]

    # The lobby lists the games in progress as they are now, not as they were when the page connected.
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Lobby").click()
    your_games = page.locator(".your-games")
    await expect(your_games.locator(f'a[href="/match/{rematch_id}"]')).to_have_text("Resume")
    await expect(your_games.locator(f'a[href="/match/{match_id}"]')).to_have_count(0)
    errors.assert_none()


@IN_MODULE_LOOP
@pytest.mark.parametrize(
    ("game", "title", "side", "my_moves", "refused_clicks", "refusal"),
    [
        ("connect4", "Connect Four", "Red (moves first)", 4, [], None),
        ("othello", "Othello", "Black (moves first)", 4, ["a1"], "Illegal move"),
        ("checkers", "Checkers", "Black (moves first)", 4, ["square 1"], "That piece cannot move"),
    ],
)
async def test_opening_moves_against_a_bot(
    browser: Browser,
    base_url: str,
    game: str,
    title: str,
    side: str,
    my_moves: int,
    refused_clicks: list[str],
    refusal: str | None,
) -> None:
    page = await open_page(browser, base_url, viewport=LAPTOP)
    errors = PageErrors(page)
    await sign_in(page, f"Opener {game}")
    match_id = await play_bot(page, title, 2, side)
    # A move the rules refuse is explained under the board, and all of it fits a laptop's screen.
    assert await wait_for_my_turn_or_end(page)
    for cell in refused_clicks:
        await page.locator(f'svg.board [data-cell="{cell}"]').click()
    if refusal:
        await expect(page.locator(".move-error")).to_contain_text(refusal)
    strips = page.locator(".player-strip")
    turn = page.locator(".turn-status")
    await assert_in_view(page, page.locator("svg.board"), strips.first, strips.last, turn)
    if refused_clicks:
        await assert_in_view(page, page.locator(".move-error"))
    for _ in range(my_moves):
        assert await wait_for_my_turn_or_end(page)
        await play_first_legal_move(page)
    # Level 2 plays a random move now and then, so it may miss four in the first column: the game can
    # end on our last move. Otherwise the bot has answered every move.
    still_playing = await wait_for_my_turn_or_end(page)
    expected_moves = 2 * my_moves if still_playing else 2 * my_moves - 1
    await expect(moves_played(page)).to_have_count(expected_moves, timeout=TURN_TIMEOUT_MS)
    record = await api(page, f"/api/matches/{match_id}")
    assert still_playing or record["status"] == "finished", record
    shown = [text.strip() for text in await moves_played(page).all_inner_texts()]
    assert shown == [move["move"] for move in record["moves"]]
    await expect(page.locator("svg.board .cell.last")).not_to_have_count(0)
    await screenshot(page, game)
    errors.assert_none()


@IN_MODULE_LOOP
async def test_checkers_selects_only_pieces_that_can_move(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Mover")
        match_id = await join_rivals_match(page, rival, "checkers", "Keys")
        assert (await rival.request("move", match_id=match_id, ply=0, move="9-13"))["type"] == "moved"
        await expect(page.locator(".turn-status")).to_have_text("Your turn (White).")
        # Keyboard focus starts on a piece that can move (not on square 1, where it was while Black moved).
        first = page.locator("svg.board [tabindex='0']")
        await expect(first).to_have_attribute("aria-label", re.compile(r"White man, can move$"))
        await first.focus()
        await page.keyboard.press("Enter")
        await expect(page.locator("svg.board :focus")).to_have_attribute("aria-label", re.compile("selected"))
        await page.keyboard.press("Escape")

        # A piece that cannot move is not selected: the movable ones stay ringed, and the page says why.
        movable = page.locator("svg.board .cell.movable")
        await expect(movable).to_have_count(4)
        await page.locator('svg.board [data-cell="square 32"]').click()
        refusal = page.locator(".move-error")
        await expect(refusal).to_have_text("That piece cannot move: pick a ringed one.")
        await expect(page.locator("svg.board .cell.selected")).to_have_count(0)
        await expect(movable).to_have_count(4)
        # A path no legal move takes, from a piece that can move, is the server's to explain.
        await page.locator('svg.board [data-cell="square 22"]').click()
        await page.locator('svg.board [data-cell="square 15"]').click()
        await expect(refusal).to_contain_text("Illegal move: '22x15'")

        # After 22-18 and Black's 10-14, White must take with 18: square 21 could step, but may not now.
        await page.locator('svg.board [data-cell="square 22"]').click()
        await page.locator('svg.board [data-cell="square 18"]').click()
        await expect(moves_played(page)).to_have_count(2)
        assert (await rival.request("move", match_id=match_id, ply=2, move="10-14"))["type"] == "moved"
        await expect(page.locator(".turn-status")).to_have_text("Your turn (White).")
        await page.locator('svg.board [data-cell="square 21"]').click()
        await expect(refusal).to_have_text("A capture is compulsory: use a ringed piece.")
        await expect(movable).to_have_attribute("data-cell", "square 18")
    errors.assert_none()


@IN_MODULE_LOOP
async def test_a_spectator_sees_the_moves(browser: Browser, base_url: str) -> None:
    player = await open_page(browser, base_url)
    await sign_in(player, "Grace")
    match_id = await play_bot(player, "Connect Four", 1, "Red (moves first)")
    assert await wait_for_my_turn_or_end(player)
    await play_first_legal_move(player)

    watcher = await open_page(browser, base_url)
    errors = PageErrors(watcher)
    await sign_in(watcher, "Watcher")
    entry = watcher.locator(f'[data-match="{match_id}"]')
    await entry.get_by_role("link", name="Watch Connect Four match").click()
    await watcher.wait_for_url(f"**/match/{match_id}")
    await expect(watcher.locator(".match-title")).to_contain_text("watching")
    await expect(watcher.get_by_role("button", name="Resign")).to_have_count(0)

    assert await wait_for_my_turn_or_end(player)
    await play_first_legal_move(player)
    await expect(moves_played(player)).to_have_count(4, timeout=TURN_TIMEOUT_MS)
    await expect(moves_played(watcher)).to_have_count(4, timeout=TURN_TIMEOUT_MS)
    assert await moves_played(watcher).all_inner_texts() == await moves_played(player).all_inner_texts()
    errors.assert_none()


@IN_MODULE_LOOP
async def test_two_people_by_private_link_with_clocks_chat_draw_and_rematch(
    browser: Browser, base_url: str
) -> None:
    alice = await open_page(browser, base_url)
    bob = await open_page(browser, base_url, viewport=PHONE)
    errors = [PageErrors(alice), PageErrors(bob)]
    await sign_in(alice, "Alice")
    form = alice.locator("form[aria-labelledby=play-people-title]")
    await form.get_by_label("Game").select_option(label="Tic-tac-toe")
    await form.get_by_label("Time").select_option(label="5 min + 3 s")
    await form.get_by_label("Your side").select_option(label="O (moves first)")
    await form.get_by_label("Who can join").select_option(value="private")
    await form.get_by_role("button", name="Open the match").click()
    await alice.wait_for_url(re.compile(r"/match/[^/]+$"))
    link = await alice.get_by_label("Private link: send it to your opponent").input_value()
    assert link == alice.url

    await sign_in(bob, "Bob", path=link)
    # Bob reached the match by its link, before taking a seat: the page invites him to the free one.
    invitation = "Alice is waiting for an opponent: join as X to play."
    await expect(bob.locator(".turn-status")).to_have_text(invitation)
    await bob.get_by_role("button", name="Join as X").click()
    await expect(bob.locator(".player-strip.to-move")).to_contain_text("Alice")
    # Alice's clock runs on both pages; Bob's stands at the full five minutes.
    alice_clock = bob.get_by_role("timer", name="O's clock")
    await expect(alice_clock).to_have_text(re.compile(r"4:5\d"), timeout=5000)
    await expect(bob.get_by_role("timer", name="X's clock")).to_have_text("5:00")

    await bob.get_by_role("textbox", name="Chat message").fill("good luck")
    await bob.get_by_role("button", name="Send chat message").click()
    await expect(alice.locator(".chat-log")).to_contain_text("Bob: good luck")
    # A reloaded page shows the chat so far from the match's state, and each line once.
    await alice.reload()
    await expect(alice.locator(".chat-log li")).to_have_text(["Bob: good luck"])
    await bob.get_by_role("textbox", name="Chat message").fill("have fun")
    await bob.get_by_role("button", name="Send chat message").click()
    await expect(alice.locator(".chat-log li")).to_have_text(["Bob: good luck", "Bob: have fun"])

    await alice.get_by_role("button", name="Offer draw").click()
    await expect(bob.get_by_role("button", name="Accept draw")).to_be_visible()
    await bob.get_by_role("button", name="Decline draw").click()
    await expect(alice.get_by_role("button", name="Offer draw")).to_be_enabled()

    await alice.get_by_role("button", name="b2, empty, legal move").click()
    await expect(bob.get_by_role("button", name=re.compile("b2, O mark"))).to_be_visible()
    await expect(bob.get_by_role("timer", name="X's clock")).to_have_text(re.compile(r"4:5\d"), timeout=5000)
    await expect(alice.get_by_role("timer", name="O's clock")).to_have_text(re.compile(r"5:0\d"))
    await screenshot(bob, "match-phone")

    await bob.get_by_role("button", name="Offer draw").click()
    await alice.get_by_role("button", name="Accept draw").click()
    for page in (alice, bob):
        await expect(page.locator(".banner")).to_contain_text("Draw")
        await expect(page.locator(".banner")).to_contain_text("draw by agreement")
    # On the phone the result and what to do next show right under the board, no scrolling needed.
    await bob.evaluate("window.scrollTo(0, 0)")
    await assert_in_view(bob, bob.locator(".banner"), bob.get_by_role("button", name="Rematch"))

    first_match = alice.url
    await alice.get_by_role("button", name="Rematch").click()
    await bob.get_by_role("button", name="Accept rematch").click()
    for page in (alice, bob):
        await page.wait_for_url(lambda url: url != first_match and "/match/" in url)
    await expect(bob.locator(".turn-status")).to_have_text("Your turn (O).")
    await expect(alice.locator(".player-strip.to-move")).to_contain_text("Bob")
    # The first match's page now leads to the rematch rather than offering another.
    rematch = alice.url
    await alice.goto(first_match)
    await expect(alice.get_by_role("link", name="Go to the rematch")).to_be_visible()
    await expect(alice.get_by_role("button", name="Rematch")).to_have_count(0)
    await alice.get_by_role("link", name="Go to the rematch").click()
    await alice.wait_for_url(rematch)
    await expect(alice.locator(".player-strip.to-move")).to_contain_text("Bob")
    # The lobby lists the private rematch among Alice's games in progress (the list is asked as her;
    # a stranger's list of matches leaves it out).
    await alice.goto(base_url)
    await expect(alice.locator(f'[data-match="{rematch.rsplit("/", 1)[1]}"]')).to_contain_text("against Bob")
    for page_errors in errors:
        page_errors.assert_none()


@IN_MODULE_LOOP
async def test_a_reload_and_a_dropped_connection_resume_the_game(browser: Browser, base_url: str) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    await sign_in(page, "Linus")
    match_id = await play_bot(page, "Othello", 1, "Black (moves first)")
    assert await wait_for_my_turn_or_end(page)
    await play_first_legal_move(page)
    assert await wait_for_my_turn_or_end(page)
    before = await moves_played(page).all_inner_texts()

    tap = SocketTap()
    await tap.attach(page)
    await page.reload()
    await expect(page.get_by_role("status").filter(has_text="Online")).to_be_visible()
    await expect(page.locator("#who .me")).to_have_text("Linus")
    assert page.url.endswith(f"/match/{match_id}")
    assert "token" in tap.requests("hello")[0], "the reload says hello with the stored token"
    await expect(moves_played(page)).to_have_count(len(before))
    assert await moves_played(page).all_inner_texts() == before
    assert await wait_for_my_turn_or_end(page)

    # Cut the line right after moving: the bot answers while the page is away, and the
    # reconnection asks only for what was missed (match.watch with since), losing nothing.
    await play_first_legal_move(page)
    await tap.cut()
    await expect(page.get_by_role("status").filter(has_text="Reconnecting")).to_be_visible()
    await expect(page.get_by_role("status").filter(has_text="Online")).to_be_visible()
    await expect(moves_played(page)).to_have_count(len(before) + 2, timeout=TURN_TIMEOUT_MS)
    watches = tap.requests("match.watch")
    assert len(watches) == 2 and "since" not in watches[0] and watches[1]["since"] > 0, watches
    record = await api(page, f"/api/matches/{match_id}")
    shown = [text.strip() for text in await moves_played(page).all_inner_texts()]
    assert shown == [move["move"] for move in record["moves"]]
    assert await wait_for_my_turn_or_end(page)
    await play_first_legal_move(page)

    # The reload's welcome listed this match as unfinished; once it is over, the lobby no longer offers it.
    await page.get_by_role("button", name="Resign").click()
    await page.get_by_role("button", name="Confirm resigning").click()
    await expect(page.locator(".banner")).to_contain_text("You lost")
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Lobby").click()
    your_games = page.locator(".your-games")
    await expect(your_games).to_have_attribute("aria-busy", "false")
    await expect(your_games.locator(f'a[href="/match/{match_id}"]')).to_have_count(0)
    await expect(your_games).to_be_hidden()
    errors.assert_none()


async def finished_bot_game(ws_url: str) -> str:
    """A Connect Four game that a level-3 bot plays to the end against a client always taking the first
    legal column; returns the match id."""
    async with await ArenaClient.connect(ws_url) as client:
        await client.hello("Scripted")
        state = await client.request("match.create", game="connect4", seat=0, bot={"level": 3})
        match_id = state["match_id"]
        await client.expect(type_="started", match_id=match_id, timeout=TURN_TIMEOUT_S)
        await play_against_bot(client, "connect4", match_id, timeout=TURN_TIMEOUT_S)
        return match_id


@IN_MODULE_LOOP
async def test_the_replay_viewer_steps_through_a_stored_game(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    match_id = await finished_bot_game(arena_server.ws_url)
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    record = await api(page, f"/api/matches/{match_id}")
    moves = [move["move"] for move in record["moves"]]
    bot_moves = [move for move in record["moves"] if move["engine"] and move["engine"]["score"] is not None]
    assert bot_moves

    await page.goto(f"/replay/{match_id}")
    await expect(page.locator(".ply-counter")).to_have_text(f"{len(moves)} / {len(moves)}")
    await page.get_by_role("button", name="First position").click()
    await expect(page.locator(".current-move")).to_have_text("Start position")
    await expect(page.locator("svg.board .piece")).to_have_count(0)
    await page.get_by_role("button", name="Next move").click()
    await expect(page.locator(".current-move")).to_contain_text(f"played {moves[0]}")
    await expect(page.locator("svg.board .piece")).to_have_count(1)
    await page.get_by_role("button", name=f"move 3, Red {moves[2]}").click()
    await expect(page.locator(".ply-counter")).to_have_text(f"3 / {len(moves)}")
    await expect(page.locator("svg.board .piece")).to_have_count(3)
    await page.get_by_role("button", name="Play the replay").click()
    await expect(page.locator(".ply-counter")).to_have_text(f"4 / {len(moves)}")
    await page.get_by_role("button", name="Pause the replay").click()

    assert [text.strip() for text in await page.locator("ol.move-list .move").all_inner_texts()] == moves
    graph = page.get_by_role("img", name=re.compile("Bot evaluation"))
    await expect(graph).to_be_visible()
    await expect(graph.locator(".eval-point")).to_have_count(len(bot_moves))
    table_rows = page.locator(".engine-table tbody tr")
    await expect(table_rows).to_have_count(len(bot_moves))
    first = bot_moves[0]["engine"]
    await expect(table_rows.first).to_contain_text(str(first["depth"]))
    await expect(table_rows.first).to_contain_text(" ".join(first["pv"]))
    export = page.get_by_label("Exported game text")
    exported = await export.inner_text()
    assert moves[0] in exported
    # The moves show in the export box under its header tags, not only after scrolling it.
    first_line_shown = await export.evaluate(
        """(box) => {
            const words = [...box.querySelectorAll(".export-token")];
            const first = words.find((word) => word.textContent === "1.");
            const bottom = box.getBoundingClientRect().bottom;
            return first !== undefined && first.getBoundingClientRect().bottom <= bottom;
        }"""
    )
    assert first_line_shown, exported
    await page.get_by_role("button", name="Last position").click()
    await screenshot(page, "replay")
    errors.assert_none()


@IN_MODULE_LOOP
async def test_the_replay_of_a_live_match_leads_to_it_and_keeps_the_bots_search_to_itself(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    await sign_in(page, "Peeker")
    async with await ArenaClient.connect(arena_server.ws_url) as client:
        await client.hello("Playing")
        state = await client.request("match.create", game="connect4", seat=1, bot={"level": 3})
        match_id = state["match_id"]
        await client.expect(type_="moved", match_id=match_id, timeout=TURN_TIMEOUT_S)  # the bot is Red
        record = await api(page, f"/api/matches/{match_id}")
        first = record["moves"][0]
        # The bot's score and line would tell its opponent what it thinks: kept until the game is over.
        assert record["status"] == "live" and first["engine"] is None, record

        await page.goto(f"/replay/{match_id}")
        banner = page.locator(".replay-view .banner")
        await expect(banner).to_contain_text("In progress")
        await expect(page.locator(".current-move")).to_have_text(f"Ply 1: Red played {first['move']}")
        await expect(page.get_by_role("heading", name="Bot evaluation")).to_be_hidden()
        await banner.get_by_role("link", name="Go to the live match").click()
        await page.wait_for_url(f"**/match/{match_id}")
        await expect(page.locator(".match-title")).to_contain_text("watching")
    errors.assert_none()


BOT_SAYS = [
    # A book move, with the figures an old bot made up for one: shown without them.
    {"source": "book", "score": 999_979, "depth": 41, "nodes": 0, "pv": ["4"], "time_ms": 1},
    {"source": "solved", "score": -999_971, "nodes": 1_234_567, "pv": ["4"], "time_ms": 85},
    {"source": "searched", "score": 35, "depth": 9, "nodes": 48_211, "pv": ["3", "4", "3"], "time_ms": 400},
]


@IN_MODULE_LOOP
async def test_the_replay_says_where_each_bot_move_came_from(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    url = arena_server.ws_url
    async with await ArenaClient.connect(url) as bot, await ArenaClient.connect(url) as person:
        await bot.hello("Oracle", bot=True)
        await person.hello("Ann")
        match_id = (await open_match(bot, person, "connect4"))["match_id"]
        for index, engine in enumerate(BOT_SAYS):
            await bot.request("move", match_id=match_id, ply=2 * index, move=engine["pv"][0], engine=engine)
            await person.request("move", match_id=match_id, ply=2 * index + 1, move="112"[index])
        await person.request("resign", match_id=match_id)
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    await page.goto(f"/replay/{match_id}?ply=1")
    current = page.locator(".current-move")
    await expect(current).to_have_text("Ply 1: Red played 4 — book: win in 21")
    await page.get_by_role("button", name="Next move").click()
    await expect(current).to_have_text("Ply 2: Yellow played 1")
    await page.get_by_role("button", name="Next move").click()
    await expect(current).to_have_text("Ply 3: Red played 4 — solved: loss in 29 (1.2 M nodes, 85 ms)")
    await page.get_by_role("button", name="Next move").click()
    await page.get_by_role("button", name="Next move").click()
    await expect(current).to_have_text("Ply 5: Red played 3 — depth 9, +35, pv 3 4 3 (48,211 nodes, 400 ms)")

    rows = page.locator(".engine-table tbody tr")
    cells = [[text.strip() for text in await row.locator("td").all_inner_texts()] for row in await rows.all()]
    assert [row[3:8] for row in cells] == [
        ["Book", "win in 21", "–", "–", "1 ms"],
        ["Solver", "loss in 29", "–", "1.2 M", "85 ms"],
        ["Search", "+35", "9", "48,211", "400 ms"],
    ]
    points = page.locator(".eval-graph .eval-point title")
    details = await points.all_text_contents()
    assert [detail.split(": ", 1)[1] for detail in details] == [
        "win in 21 for Red, book",
        "loss in 29 for Red, solved, pv 4",
        "+35 for Red, depth 9, pv 3 4 3",
    ]
    errors.assert_none()


async def finished_scripted_game(ws_url: str, game: str) -> str:
    """A game two scripted clients play to a rules-decided win; returns the match id."""
    async with await ArenaClient.connect(ws_url) as first, await ArenaClient.connect(ws_url) as second:
        await first.hello("Ann")
        await second.hello("Bob")
        state = await open_match(first, second, game)
        await play_moves(game, (first, second), state["match_id"], list(decisive_game(game)))
        return state["match_id"]


@IN_MODULE_LOOP
async def test_finished_games_list_filters_and_links_to_replays(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    for game in ("tictactoe", "connect4"):
        await finished_scripted_game(arena_server.ws_url, game)
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    await page.goto("/finished")
    await page.get_by_label("Game", exact=True).select_option(label="Connect Four")
    entries = page.locator(".finished-list .match-entry")
    badges = entries.locator(".game-badge")
    await expect(badges.filter(has_not_text="Connect Four")).to_have_count(0)
    await expect(badges).not_to_have_count(0)
    await page.get_by_label("Game", exact=True).select_option(label="Tic-tac-toe")
    await expect(badges.filter(has_not_text="Tic-tac-toe")).to_have_count(0)
    await expect(badges).not_to_have_count(0)
    assert "game=tictactoe" in page.url
    await entries.first.get_by_role("link", name=re.compile("Replay")).click()
    await page.wait_for_url(re.compile(r"/replay/[^/]+$"))
    await expect(page.locator(".match-title")).to_have_text("Tic-tac-toe replay")
    # People played it: no move carries a bot's search, so there is no evaluation to graph.
    await expect(page.locator(".ply-counter")).to_be_visible()
    await expect(page.get_by_role("heading", name="Bot evaluation")).to_be_hidden()

    await page.goto("/replay/doesnotexist")
    await expect(page.get_by_role("heading", name="No such match")).to_be_visible()
    await expect(page.get_by_role("alert")).to_contain_text('no stored match "doesnotexist"')
    # The browser itself logs the API's 404 answers; the page logs nothing else.
    errors.assert_none(allowed=("status of 404",))


@IN_MODULE_LOOP
async def test_a_rematch_agreed_during_play_starts_as_the_game_ends(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    await sign_in(page, "Serial")
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Rival")
        match_id = (await rival.request("match.create", game="tictactoe", seat=0))["match_id"]
        await page.goto(f"{base_url}/match/{match_id}")
        await page.get_by_role("button", name="Join as X").click()
        await rival.expect(type_="started", match_id=match_id)
        # During the game only a standing offer shows: accepted, the rematch waits for the game's end.
        await expect(page.get_by_role("button", name="Rematch")).to_have_count(0)
        assert (await rival.request("rematch.offer", match_id=match_id))["type"] == "rematch.offered"
        await page.get_by_role("button", name="Accept rematch").click()
        await rival.expect(type_="rematch.agreed", match_id=match_id)
        await expect(page.get_by_role("button", name="Rematch agreed")).to_be_disabled()
        await expect(page.get_by_role("button", name="Offer draw")).to_be_visible()  # the game goes on

        assert (await rival.request("resign", match_id=match_id))["type"] == "ended"
        started = await rival.expect(type_="rematch.started", match_id=match_id)
        await page.wait_for_url(f"**/match/{started['new_match_id']}")
        await expect(page.locator("#toast")).to_have_text(
            "Game over: Rival (O) resigned. The rematch has started."
        )
        await expect(page.locator(".turn-status")).to_have_text("Your turn (O).")
    errors.assert_none()


@IN_MODULE_LOOP
async def test_no_rematch_once_the_opponent_has_left(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Leaver")
        await join_rivals_match(page, rival, "tictactoe", "Stayer")
        await page.get_by_role("button", name="Resign").click()
        await page.get_by_role("button", name="Confirm resigning").click()
        # The banner tells the player about themselves as "you".
        await expect(page.locator(".banner strong")).to_have_text("You lost")
        await expect(page.locator(".banner span")).to_have_text("You resigned")
        await page.get_by_role("button", name="Rematch").click()
        await expect(page.get_by_role("button", name="Rematch offered")).to_be_disabled()
    # The rival's connection has closed: nobody is left to answer the offer, and the page says so.
    controls = page.get_by_role("group", name="Match actions")
    await expect(controls).to_contain_text("Leaver has left: no rematch.")
    await expect(controls.get_by_role("button", name=re.compile("Rematch"))).to_have_count(0)
    await page.reload()
    await expect(controls).to_contain_text("Leaver has left: no rematch.")
    await expect(controls.get_by_role("button", name=re.compile("Rematch"))).to_have_count(0)
    errors.assert_none()


@IN_MODULE_LOOP
async def test_lobby_lists_open_matches_live_on_a_phone(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url, viewport=PHONE)
    errors = PageErrors(page)
    await sign_in(page, "Pocket")
    async with await ArenaClient.connect(arena_server.ws_url) as host:
        await host.hello("Hopper")
        state = await host.request("match.create", game="checkers", seat=0, time_control="5+3")
        entry = page.locator(f'[data-match="{state["match_id"]}"]')
        await expect(entry).to_contain_text("Hopper")
        await expect(entry.get_by_role("button", name="Join Checkers match as White")).to_be_visible()
        assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        await screenshot(page, "lobby-phone")

        desktop = await open_page(browser, base_url)
        await sign_in(desktop, "Desk")
        await expect(desktop.locator(f'[data-match="{state["match_id"]}"]')).to_be_visible()
        await screenshot(desktop, "lobby")

        await entry.get_by_role("button", name="Join Checkers match as White").click()
        await page.wait_for_url(f"**/match/{state['match_id']}")
        await expect(page.locator(".player-strip.to-move")).to_contain_text("Hopper")
        await expect(page.get_by_role("timer", name="Black's clock")).to_have_text(re.compile(r"[45]:\d\d"))

    # Hopper's connection is gone: the notice counts the grace period down, and goes with the match.
    hopper = page.locator(".player-strip", has_text="Hopper").locator(".detail")
    await expect(hopper).to_contain_text(re.compile(r"disconnected, \d+ s to return"))
    first = int(re.search(r"(\d+) s to return", await hopper.inner_text())[1])
    assert 110 <= first <= 120, first
    await expect(hopper).to_contain_text(f"disconnected, {first - 1} s to return")
    await page.reload()  # the count goes on from match.state's grace_left_ms, not from the start
    await expect(hopper).to_contain_text(re.compile(r"disconnected, \d+ s to return"))
    assert int(re.search(r"(\d+) s to return", await hopper.inner_text())[1]) <= first - 1
    await page.get_by_role("button", name="Resign").click()
    await page.get_by_role("button", name="Confirm resigning").click()
    await expect(page.locator(".banner")).to_contain_text("You lost")
    await expect(hopper).not_to_contain_text("to return")
    errors.assert_none()


@IN_MODULE_LOOP
async def test_a_match_hosted_by_another_instance_opens_on_its_own_server(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    """Entries of other instances sharing the broker are played there, not through this connection."""
    entry = {
        "match_id": "elsewhere-1", "game": "connect4", "status": "open", "time_control": "5+3",
        "seats": [{"id": "p-far", "name": "Faraway", "bot": False}, None], "bot": None,
        "host": "arena-far", "url": "wss://far.example:9443/ws", "created_at": "2026-11-23T09:00:00+00:00",
    }  # fmt: skip
    await arena_server.bus.publish(
        "plyarena/v1/lobby/arena-far/elsewhere-1", json.dumps(entry).encode(), retain=True
    )
    try:
        page = await open_page(browser, base_url)
        await sign_in(page, "Visitor")
        listed = page.locator('[data-match="elsewhere-1"]')
        link = listed.get_by_role("link", name="Open Connect Four match on its server, arena-far")
        await expect(link).to_have_attribute("href", "https://far.example:9443/match/elsewhere-1")
        await expect(listed.get_by_role("button", name=re.compile("Join"))).to_have_count(0)
    finally:
        await arena_server.bus.publish("plyarena/v1/lobby/arena-far/elsewhere-1", b"", retain=True)


@IN_MODULE_LOOP
async def test_a_match_hosted_by_another_instance_is_followed_there_from_this_page(
    browser: Browser, arena_postgres_url: str, mqtt_url: str
) -> None:
    """A private match's link opened on the wrong instance: the page plays it at its host, as the same
    person, on a connection of its own (the host allows this page's origin)."""
    shared = {"db_url": arena_postgres_url, "mqtt_url": mqtt_url, "grace_s": 120.0}
    async with running_server(ServerConfig(port=0, **shared)) as front:
        host_config = ServerConfig(port=0, allowed_origins=(front.http_url,), **shared)
        async with running_server(host_config) as host:
            page = await open_page(browser, front.http_url)
            errors = PageErrors(page)
            await sign_in(page, "Wanderer")
            async with await ArenaClient.connect(host.ws_url) as rival:
                await rival.hello("Homebody")
                created = await rival.request("match.create", game="connect4", seat=0, visibility="private")
                match_id = created["match_id"]
                while host.config.instance_id not in front.lobby.instance_urls:
                    await asyncio.sleep(0.05)
                await page.goto(f"/match/{match_id}")
                await page.get_by_role("button", name=re.compile(r"^Join as ")).click()
                await rival.expect(type_="started", match_id=match_id)
                assert (await rival.request("move", match_id=match_id, ply=0, move="4"))["type"] == "moved"
                assert await wait_for_my_turn_or_end(page)
                await play_first_legal_move(page)
                moved = await rival.expect(type_="moved", match_id=match_id, ply=1)
                assert moved["seat"] == 1
            errors.assert_none()


async def join_rivals_match(page: Page, rival: ArenaClient, game: str, name: str) -> str:
    """``rival`` opens a ``game`` match in seat 0 (moving first); ``page`` signs in as ``name`` by its link
    and takes seat 1. Returns the match id once the match is live."""
    match_id = (await rival.request("match.create", game=game, seat=0))["match_id"]
    await sign_in(page, name, path=f"/match/{match_id}")
    await page.get_by_role("button", name=re.compile(r"^Join as ")).click()
    await rival.expect(type_="started", match_id=match_id)
    await expect(page.locator(".player-strip.to-move")).to_contain_text(await rival_name(rival))
    return match_id


async def rival_name(rival: ArenaClient) -> str:
    hello = next(message for message in rival.received if message.get("type") == "welcome")
    return hello["player"]["name"]


def contrast(rgb_a: tuple[float, ...], rgb_b: tuple[float, ...]) -> float:
    """The WCAG contrast ratio of two sRGB colours (0-255 channels)."""

    def luminance(rgb: tuple[float, ...]) -> float:
        srgb = [channel / 255 for channel in rgb]
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in srgb]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted((luminance(rgb_a), luminance(rgb_b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def css_color(text: str) -> tuple[float, ...]:
    """``rgb(1, 2, 3)`` or ``rgba(1, 2, 3, 0.5)`` as (r, g, b, alpha)."""
    channels = [float(part) for part in re.findall(r"[\d.]+", text)]
    return (*channels[:3], channels[3] if len(channels) > 3 else 1.0)


@IN_MODULE_LOOP
async def test_the_lobby_says_how_many_matches_its_snapshot_left_out(
    browser: Browser, tmp_path: Path
) -> None:
    """A crowded lobby's snapshot is bounded (server/lobby.py): the page says, under the open matches and
    under the live ones, how many of each the snapshot left out."""
    config = ServerConfig(port=0, db_url=f"sqlite+aiosqlite:///{tmp_path / 'crowded.sqlite3'}")
    async with running_server(config) as server:
        host = PlayerInfo(id="p-host", name="Host", bot=False)
        guest = PlayerInfo(id="p-guest", name="Guest", bot=False)
        for n, status in enumerate(["open"] * (SNAPSHOT_OPEN + 2) + ["live"] * (SNAPSHOT_LIVE + 1)):
            entry = LobbyEntry(
                match_id=f"crowd-{n}", game="connect4", status=status, time_control="5+3",
                seats=[host, guest if status == "live" else None], bot=None,
                host=server.config.instance_id, url=server.ws_url,
                created_at=f"2026-03-01T12:00:00.{n:06d}+00:00",
            )  # fmt: skip
            server.lobby.show(entry)
        page = await open_page(browser, server.http_url)
        errors = PageErrors(page)
        await sign_in(page, "Crowded")
        items = page.locator(".match-list li")
        await expect(items).to_have_count(SNAPSHOT_OPEN + SNAPSHOT_LIVE + 2)
        await expect(items.nth(SNAPSHOT_OPEN)).to_have_text("and 2 more open matches not shown")
        await expect(items.last).to_have_text("and 1 more live match not shown")
        # The counts are of every game: a game's tab says so.
        tabs = page.get_by_role("toolbar", name="Show matches of")
        await tabs.get_by_role("button", name=re.compile("^Connect Four")).click()
        await expect(items.last).to_have_text("and 1 more live match (of all games) not shown")
        errors.assert_none()


GRACE_S = 2.0
"""The grace period of the server in the test of a reloaded lobby: a reload takes well under it."""


@IN_MODULE_LOOP
async def test_a_reloaded_lobby_keeps_the_players_games(browser: Browser, tmp_path: Path) -> None:
    """A seated player is present while a connection of theirs follows the match: a lobby opened by a
    reload (a new connection) follows the player's games, so they are not lost when the grace ends."""
    config = ServerConfig(port=0, db_url=f"sqlite+aiosqlite:///{tmp_path / 'grace.sqlite3'}", grace_s=GRACE_S)
    async with running_server(config) as server, await ArenaClient.connect(server.ws_url) as rival:
        await rival.hello("Patient")
        page = await open_page(browser, server.http_url)
        errors = PageErrors(page)
        match_id = await join_rivals_match(page, rival, "tictactoe", "Reloader")
        await page.get_by_role("navigation", name="Main").get_by_role("link", name="Lobby").click()
        resume = page.locator(".your-games").locator(f'a[href="/match/{match_id}"]')
        await expect(resume).to_have_text("Resume")
        # Going between the lobby and the match page starts no grace period: nothing leaves the match.
        await resume.click()
        await expect(page.locator(".player-strip.to-move")).to_contain_text("Patient")
        await page.get_by_role("navigation", name="Main").get_by_role("link", name="Lobby").click()
        await expect(resume).to_have_text("Resume")
        assert not [m for m in await rival.settle(0.3) if m["type"] == "presence"]

        await page.reload()
        await expect(page.get_by_role("status").filter(has_text="Online")).to_be_visible()
        await rival.expect(type_="presence", match_id=match_id, seat=1, connected=False)
        await rival.expect(type_="presence", match_id=match_id, seat=1, connected=True, timeout=GRACE_S)
        await asyncio.sleep(GRACE_S + 0.5)  # past the grace period of the reload's old connection
        assert (await api(page, f"/api/matches/{match_id}"))["status"] == "live"
        assert not [m for m in rival.take_unread() if m["type"] == "ended"]
        await expect(resume).to_have_text("Resume")
        # Any page of the app keeps the player's games so, the list of finished games too.
        await page.goto("/finished")
        await rival.expect(type_="presence", match_id=match_id, seat=1, connected=False)
        await rival.expect(type_="presence", match_id=match_id, seat=1, connected=True, timeout=GRACE_S)
        await page.get_by_role("navigation", name="Main").get_by_role("link", name="Lobby").click()
        await expect(resume).to_have_text("Resume")

        # The lobby hears the game end and offers it no more.
        assert (await rival.request("resign", match_id=match_id))["type"] == "ended"
        await expect(resume).to_have_count(0)
        await expect(page.locator(".your-games")).to_be_hidden()
        errors.assert_none()


@IN_MODULE_LOOP
async def test_a_name_the_server_refuses_is_asked_for_again(browser: Browser, base_url: str) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    await page.goto("/")
    name = page.get_by_label("Your name")
    await name.fill("\u200b\u200b\u200b")
    await page.get_by_role("button", name="Continue").click()
    # The server's reason shows with the name form again; the lobby waits for a name it takes.
    problem = page.locator(".name-form").get_by_role("alert")
    await expect(problem).to_contain_text("name contains U+200B (ZERO WIDTH SPACE)")
    await expect(name).to_be_visible()
    await expect(page.get_by_role("button", name="Play the bot")).to_have_count(0)
    await expect(page.locator("#who")).to_be_empty()
    assert await page.evaluate("localStorage.getItem('plyarena.identity')") is None

    await page.reload()  # the refused name was not kept: the page asks afresh
    await expect(name).to_be_visible()
    await expect(problem).to_have_count(0)
    await name.fill("Tab\tStop")
    await page.get_by_role("button", name="Continue").click()
    await expect(problem).to_contain_text("name contains U+0009")

    await name.fill("Mended")
    await page.get_by_role("button", name="Continue").click()
    await expect(page.get_by_role("status").filter(has_text="Online")).to_be_visible()
    await expect(page.get_by_role("button", name="Play the bot")).to_be_enabled()
    await expect(page.locator(".match-list[aria-busy=false]")).to_be_visible()
    await expect(page.locator("#who .me")).to_have_text("Mended")
    errors.assert_none()


@IN_MODULE_LOOP
async def test_waiting_for_an_opponent_on_a_wide_screen(browser: Browser, base_url: str) -> None:
    """The link to share shows beside the board on a wide screen (below it on a phone): the waiting line
    names it without saying where."""
    page = await open_page(browser, base_url, viewport=LAPTOP)
    errors = PageErrors(page)
    await sign_in(page, "Waiter")
    form = page.locator("form[aria-labelledby=play-people-title]")
    await form.get_by_label("Game").select_option(label="Connect Four")
    await form.get_by_role("button", name="Open the match").click()
    await page.wait_for_url(re.compile(r"/match/[^/]+$"))
    await expect(page.locator(".turn-status")).to_have_text(
        "Waiting for an opponent: share the link to this match."
    )
    board = await page.locator("svg.board").bounding_box()
    link = await page.get_by_role("textbox", name="Link to this match").bounding_box()
    assert board and link and link["x"] >= board["x"] + board["width"], (board, link)
    errors.assert_none()


LANDSCAPE_PHONE = {"width": 844, "height": 390}


@IN_MODULE_LOOP
async def test_the_board_and_both_players_fit_a_phone_on_its_side(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url, viewport=LANDSCAPE_PHONE)
    errors = PageErrors(page)
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Sideways")
        match_id = await join_rivals_match(page, rival, "connect4", "Tilted")
        assert (await rival.request("move", match_id=match_id, ply=0, move="4"))["type"] == "moved"
        await expect(page.locator(".turn-status")).to_have_text("Your turn (Yellow).")
        board = page.locator("svg.board")
        own = page.locator(".player-strip", has_text="(you)")
        rivals = page.locator(".player-strip", has_text="Sideways")
        turn = page.locator(".turn-status")
        # The board is sized by the height too: it, both players and the turn line show without scrolling,
        # on its side as on the other screens.
        for viewport in (LANDSCAPE_PHONE, LAPTOP, PHONE, {"width": 320, "height": 568}):
            await page.set_viewport_size(viewport)
            await assert_in_view(page, board, own, rivals, turn)
            assert await page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    errors.assert_none()


@IN_MODULE_LOOP
async def test_not_your_turn_goes_when_it_is_your_turn(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Slowpoke")
        match_id = await join_rivals_match(page, rival, "tictactoe", "Eager")
        # The squares say they are disabled while the rival is to move: a person clicks one anyway.
        await page.locator('svg.board [data-cell="b2"]').click(force=True)
        await expect(page.locator(".move-error")).to_have_text("It is not your turn.")
        assert (await rival.request("move", match_id=match_id, ply=0, move="a1"))["type"] == "moved"
        await expect(page.locator(".turn-status")).to_have_text("Your turn (X).")
        await expect(page.locator(".move-error")).to_be_empty()
    errors.assert_none()


@IN_MODULE_LOOP
async def test_a_refused_chat_line_stays_to_be_mended(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Listener")
        await join_rivals_match(page, rival, "tictactoe", "Talker")
        box = page.get_by_role("textbox", name="Chat message")
        send = page.get_by_role("button", name="Send chat message")
        refused = "gg \u202eolleh"
        await box.fill(refused)
        await send.click()
        problem = page.locator(".chat-panel").get_by_role("alert")
        await expect(problem).to_contain_text("U+202E (RIGHT-TO-LEFT OVERRIDE)")
        await expect(box).to_have_value(refused)
        await expect(page.locator(".chat-log li")).to_have_count(0)

        await box.fill("gg hello")
        await send.click()
        await expect(page.locator(".chat-log li")).to_have_text(["Talker: gg hello"])
        await expect(box).to_have_value("")
        await expect(problem).to_have_count(0)
    errors.assert_none()


@IN_MODULE_LOOP
async def test_replay_keys_after_a_board_click_and_the_start_by_link(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    match_id = await finished_scripted_game(arena_server.ws_url, "tictactoe")
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    plies = len((await api(page, f"/api/matches/{match_id}"))["moves"])
    counter = page.locator(".ply-counter")

    await page.goto(f"/replay/{match_id}?ply=0")
    await expect(counter).to_have_text(f"0 / {plies}")
    await expect(page.locator(".current-move")).to_have_text("Start position")
    # The board only shows: no buttons, no tab stops; its squares are still described.
    board = page.locator("svg.board")
    await expect(board.locator('[role="button"], [tabindex], [aria-disabled]')).to_have_count(0)
    await expect(board.get_by_role("img", name="b2, empty")).to_be_visible()

    await board.locator('[data-cell="b2"]').click()
    await page.keyboard.press("ArrowRight")
    await expect(counter).to_have_text(f"1 / {plies}")
    await page.keyboard.press("ArrowRight")
    await page.keyboard.press("ArrowLeft")
    await expect(counter).to_have_text(f"1 / {plies}")
    await page.keyboard.press("End")
    await expect(counter).to_have_text(f"{plies} / {plies}")
    await board.locator('[data-cell="a1"]').click()
    await page.keyboard.press("Home")
    await expect(counter).to_have_text(f"0 / {plies}")

    await page.goto(f"/replay/{match_id}?ply=2")
    await expect(counter).to_have_text(f"2 / {plies}")
    errors.assert_none()


@IN_MODULE_LOOP
async def test_othello_move_hints_stand_out_from_the_board(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    page = await open_page(browser, base_url)
    errors = PageErrors(page)
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Hinter")
        match_id = (await rival.request("match.create", game="othello", seat=1))["match_id"]
        await sign_in(page, "Looker", path=f"/match/{match_id}")
        await page.get_by_role("button", name="Join as Black").click()
        await expect(page.locator(".turn-status")).to_have_text("Your turn (Black).")
        dots = page.locator("svg.board .hint-dot")
        await expect(dots).to_have_count(4)
        fills = None
        for _ in range(50):  # (a board drawn again meanwhile leaves a detached dot, with no style)
            fills = await dots.first.evaluate(
                """(dot) => dot.isConnected ? [getComputedStyle(dot).fill,
                    getComputedStyle(dot.closest(".cell").querySelector(".square")).fill] : null"""
            )
            if fills:
                break
            await asyncio.sleep(0.1)
        assert fills, "the hint dots were never drawn for long"
        dot_fill, square_fill = fills
    *dot, alpha = css_color(dot_fill)
    square = css_color(square_fill)[:3]
    shown = tuple(alpha * d + (1 - alpha) * s for d, s in zip(dot, square, strict=True))
    # Clearly seen (3:1, as for any part of the interface), yet no disc: see-through.
    assert contrast(shown, square) >= 3, (dot_fill, square_fill, contrast(shown, square))
    assert alpha < 0.8, dot_fill
    errors.assert_none()


def test_screenshots_are_in_the_readme() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    for name in (
        "lobby",
        "lobby-phone",
        "tictactoe",
        "connect4",
        "othello",
        "checkers",
        "chess",
        "match-phone",
        "replay",
    ):
        assert f"docs/screenshots/{name}.png" in readme
