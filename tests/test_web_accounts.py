"""Accounts in Chromium: a guest with a finished game and a live one signs up, logs out, logs in on a
second browser context, finds the finished game among theirs and resumes the live one; a wrong password
is told in the form and changes nothing; logging out everywhere reaches every browser."""

from __future__ import annotations

import re
import uuid

from playwright.async_api import Browser, Page, expect
from support.client import ArenaClient
from support.web import (
    PageErrors,
    moves_played,
    open_page,
    play_bot,
    play_first_legal_move,
    sign_in,
    wait_for_my_turn_or_end,
)
from support.web_fixtures import IN_MODULE_LOOP

from server.app import Server

PASSWORD = "a long browser password"


async def log_in(page: Page, name: str, password: str) -> None:
    form = page.get_by_role("form", name="Log in")
    await form.get_by_label("Name").fill(name)
    await form.get_by_label("Password").fill(password)
    await form.get_by_role("button", name="Log in").click()


@IN_MODULE_LOOP
async def test_sign_up_log_out_and_log_in_elsewhere_to_resume_a_live_match(
    browser: Browser, base_url: str, arena_server: Server
) -> None:
    name = f"Ada {uuid.uuid4().hex[:6]}"
    laptop = await open_page(browser, base_url)
    errors = [PageErrors(laptop)]
    # As a guest, a game against a person, which the person resigns: it is in the guest's history.
    async with await ArenaClient.connect(arena_server.ws_url) as rival:
        await rival.hello("Resigner")
        finished_id = (await rival.request("match.create", game="tictactoe", seat=0))["match_id"]
        await sign_in(laptop, name, path=f"/match/{finished_id}")
        await laptop.get_by_role("button", name=re.compile(r"^Join as ")).click()
        await rival.expect(type_="started", match_id=finished_id)
        assert (await rival.request("resign", match_id=finished_id))["type"] == "ended"
        await expect(laptop.locator(".banner")).to_contain_text("You won")
    await laptop.goto("/")
    match_id = await play_bot(laptop, "Othello", 1, "Black (moves first)")
    assert await wait_for_my_turn_or_end(laptop)
    await play_first_legal_move(laptop)
    assert await wait_for_my_turn_or_end(laptop)
    played = await moves_played(laptop).all_inner_texts()

    # Sign up: the guest claims the name they play under.
    await laptop.locator("#who summary").click()
    signup = laptop.get_by_role("form", name="Sign up")
    await expect(signup.get_by_label("Name")).to_have_value(name)
    await signup.get_by_label("New password").fill(PASSWORD)
    await signup.get_by_role("button", name="Claim this name").click()
    await expect(laptop.locator("#toast")).to_contain_text(f"The name {name} is yours")
    # Log out: the browser forgets the player (the match page goes on as anyone's who watches) and the
    # lobby asks for a name again.
    await laptop.locator("#who summary").click()
    await laptop.get_by_role("button", name="Log out", exact=True).click()
    await expect(laptop.locator("#toast")).to_contain_text("Logged out.")
    await laptop.goto("/")
    await expect(laptop.get_by_label("Your name")).to_be_visible()
    await expect(laptop.get_by_role("status").filter(has_text="Not signed in")).to_be_visible()
    assert await laptop.evaluate("localStorage.getItem('plyarena.identity')") is None

    # Another browser (its own storage): a wrong password is told in the form, then the right one logs in.
    phone = await open_page(browser, base_url)
    errors.append(PageErrors(phone))
    await phone.goto("/")
    await log_in(phone, name.upper(), "not the password")
    await expect(phone.get_by_role("form", name="Log in").get_by_role("alert")).to_have_text(
        "no claimed name with that password: check both"
    )
    await expect(phone.get_by_label("Your name")).to_be_visible()
    await log_in(phone, name.upper(), PASSWORD)
    await expect(phone.get_by_role("status").filter(has_text="Online")).to_be_visible()
    await expect(phone.locator("#who .me")).to_have_text(name)
    await phone.goto("/finished?mine=1")
    await expect(phone.locator(".finished-list .match-entry")).to_have_count(1)
    await expect(phone.locator(".finished-list .match-entry")).to_contain_text(
        f"{name} (X) won: Resigner (O) resigned"
    )
    await phone.get_by_role("navigation", name="Main").get_by_role("link", name="Lobby").click()
    resume = phone.locator(".your-games").locator(f'a[href="/match/{match_id}"]')
    await expect(resume).to_have_text("Resume")
    await resume.click()
    await expect(moves_played(phone)).to_have_count(len(played))
    assert await wait_for_my_turn_or_end(phone)
    await play_first_legal_move(phone)  # (it waits for the move to be listed: the server took it)

    # Log out everywhere from the phone: the laptop, logged in again meanwhile, is told too.
    await laptop.goto("/")
    await log_in(laptop, name, PASSWORD)
    await expect(laptop.locator("#who .me")).to_have_text(name)
    await phone.locator("#who summary").click()
    await phone.get_by_role("button", name="Log out everywhere").click()
    await expect(laptop.get_by_label("Your name")).to_be_visible()  # (the lobby asks for a name again)
    await expect(laptop.locator("#toast")).to_contain_text("You were logged out everywhere.")
    # The phone's match page goes on as anyone's who watches it.
    await expect(phone.locator("#toast")).to_contain_text("Logged out everywhere.")
    await expect(phone.get_by_role("status").filter(has_text="Watching")).to_be_visible()
    for page_errors in errors:
        page_errors.assert_none()
