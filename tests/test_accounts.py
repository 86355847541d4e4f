"""Accounts over real sockets: a guest claims a name with a password and keeps their games, logs out, logs
in from another connection and resumes a live match; wrong passwords and floods are refused and limited,
with nothing changed; no password or token reaches a log or anyone else."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid

import pytest
from support.client import ArenaClient
from support.fixtures import Connect, StartServer
from support.play import decisive_game, open_match, play_moves
from support.services import PrivateMosquitto
from test_server_http import http_get

from server.app import Server
from server.errors import storage_failure
from server.storage import NameTakenError, writes
from server.text import name_key
from server.tokens import hash_token, new_token

PASSWORD = "correct horse battery"


def unique(name: str) -> str:
    """A name no other test claims (on PostgreSQL, tests share one database)."""
    return f"{name} {uuid.uuid4().hex[:8]}"


async def log_in(connect: Connect, server: Server, name: str, password: str = PASSWORD) -> ArenaClient:
    client = await connect(server)
    welcome = await client.request("hello", name=name, password=password)
    assert welcome["type"] == "welcome", welcome
    client.player_id, client.token = welcome["player"]["id"], welcome["token"]
    return client


async def refused_hello(connect: Connect, server: Server, **fields: object) -> dict:
    client = await connect(server)
    reply = await client.request("hello", **fields)
    assert reply["type"] == "error", reply
    return reply


async def matches_of(server: Server, player_id: str, token: str | None = None) -> tuple[int, dict]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    status, _, body = await http_get(server, f"/api/matches?player={player_id}", headers)
    return status, json.loads(body)


async def test_a_guest_claims_their_name_and_keeps_their_history(arena: Server, connect: Connect) -> None:
    name = unique("Ada")
    ada = await connect.player(arena, name)
    bob = await connect.player(arena, unique("Bob"))
    joined = await open_match(ada, bob, "tictactoe")
    match_id = joined["match_id"]
    await play_moves("tictactoe", (ada, bob), match_id, list(decisive_game("tictactoe")))
    await ada.expect(type_="ended", match_id=match_id)

    claimed = await ada.request("account.register", password=PASSWORD)
    assert claimed["type"] == "account.claimed"
    assert claimed["player"] == {"id": ada.player_id, "name": name, "bot": False}
    assert PASSWORD not in json.dumps(ada.received)

    # From another device, in another case: the same player, a new token, and their finished game.
    elsewhere = await log_in(connect, arena, name.upper())
    welcome = elsewhere.received[-1]
    assert (welcome["player"]["id"], welcome["player"]["name"], welcome["claimed"]) == (
        ada.player_id,
        name,
        True,
    )
    assert elsewhere.token != ada.token
    status, listed = await matches_of(arena, ada.player_id, elsewhere.token)
    assert status == 200 and [match["id"] for match in listed["matches"]] == [match_id]
    # The guest's token still works too, and says the name is claimed now.
    again = await connect(arena)
    assert (await again.hello(token=ada.token))["claimed"] is True


async def test_claimed_names_are_unique_without_regard_to_case_and_guests_names_are_not(
    arena: Server, connect: Connect
) -> None:
    name = unique("Grace")
    grace = await connect.player(arena, name)
    assert (await grace.request("account.register", password=PASSWORD))["type"] == "account.claimed"
    other = await connect.player(arena, name.upper())  # a guest may still go by it
    refused = await other.request("account.register", password=PASSWORD)
    assert (refused["type"], refused["code"]) == ("error", "name_taken")
    # ... or claim another name, which becomes theirs.
    other_name = unique("Hopper")
    claimed = await other.request("account.register", name=other_name, password=PASSWORD)
    assert claimed["player"]["name"] == other_name
    short = await (await connect.player(arena, unique("Short"))).request("account.register", password="short")
    assert (short["code"], "8 characters" in short["message"]) == ("bad_field", True)
    twice = await grace.request("account.register", name=unique("Again"), password=PASSWORD)
    assert twice["code"] == "not_allowed"


async def test_log_out_then_log_in_elsewhere_and_resume_a_live_match(arena: Server, connect: Connect) -> None:
    name = unique("Linus")
    linus = await connect.player(arena, name)
    assert (await linus.request("account.register", password=PASSWORD))["type"] == "account.claimed"
    rival = await connect.player(arena, unique("Rival"))
    match_id = (await open_match(linus, rival, "connect4"))["match_id"]
    await play_moves("connect4", (linus, rival), match_id, ["4", "4"])

    out = await linus.request("account.logout")
    assert out == {"type": "account.logged_out", "id": out["id"], "everywhere": False}
    await linus.websocket.wait_closed()
    assert linus.websocket.close_reason == "logged out"
    assert (await refused_hello(connect, arena, token=linus.token))["code"] == "bad_token"
    status, _ = await matches_of(arena, linus.player_id or "", linus.token)
    assert status == 401

    back = await log_in(connect, arena, name)
    welcome = back.received[-1]
    assert back.player_id == linus.player_id and welcome["matches"] == [match_id]
    state = await back.request("match.watch", match_id=match_id)
    assert (state["type"], state["moves"], state["status"], state["you"]) == (
        "match.state",
        ["4", "4"],
        "live",
        0,
    )
    assert (await back.request("move", match_id=match_id, ply=2, move="3"))["type"] == "moved"


async def test_log_out_everywhere_ends_every_token_and_closes_every_connection(
    arena: Server, connect: Connect
) -> None:
    name = unique("Marie")
    guest = await connect.player(arena, name)
    assert (await guest.request("account.register", password=PASSWORD))["type"] == "account.claimed"
    phone = await log_in(connect, arena, name)
    laptop = await log_in(connect, arena, name)
    out = await laptop.request("account.logout", everywhere=True)
    assert (out["type"], out["everywhere"]) == ("account.logged_out", True)
    for other in (guest, phone):
        told = await other.expect(type_="account.logged_out")
        assert told == {"type": "account.logged_out", "everywhere": True}
        await other.websocket.wait_closed()
    for token in (guest.token, phone.token, laptop.token):
        assert (await refused_hello(connect, arena, token=token))["code"] == "bad_token"
    assert (await log_in(connect, arena, name)).player_id == guest.player_id  # the password still works


async def test_log_out_everywhere_reaches_the_connections_on_every_instance_sharing_the_broker(
    start_server: StartServer, connect: Connect, private_broker: PrivateMosquitto
) -> None:
    here = await start_server(mqtt_url=private_broker.url)
    there = await start_server(mqtt_url=private_broker.url)
    name = unique("Nadia")
    guest = await connect.player(here, name)
    assert (await guest.request("account.register", password=PASSWORD))["type"] == "account.claimed"
    phone = await log_in(connect, there, name)
    bystander = await connect.player(there, unique("Bystander"))
    out = await guest.request("account.logout", everywhere=True)
    assert (out["type"], out["everywhere"]) == ("account.logged_out", True)
    told = await phone.expect(type_="account.logged_out")
    assert told == {"type": "account.logged_out", "everywhere": True}
    await phone.websocket.wait_closed()
    assert (await refused_hello(connect, there, token=phone.token))["code"] == "bad_token"
    assert (await bystander.request("lobby.subscribe"))["type"] == "lobby.snapshot"  # (others stay)


async def test_a_guest_cannot_log_out_their_only_key(arena: Server, connect: Connect) -> None:
    guest = await connect.player(arena, unique("Guest"))
    refused = await guest.request("account.logout")
    assert refused["code"] == "not_allowed"
    assert (await (await connect(arena)).hello(token=guest.token))["player"]["id"] == guest.player_id


async def test_wrong_passwords_are_refused_alike_then_locked_out_with_nothing_changed(
    start_server: StartServer, connect: Connect
) -> None:
    arena = await start_server(login_free_failures=2, login_max_lockout_s=60)
    name = unique("Alan")
    alan = await connect.player(arena, name)
    assert (await alan.request("account.register", password=PASSWORD))["type"] == "account.claimed"

    wrong = await refused_hello(connect, arena, name=name, password="not the password")
    unknown = await refused_hello(connect, arena, name=unique("Nobody"), password=PASSWORD)
    assert (wrong["code"], wrong["message"]) == (unknown["code"], unknown["message"])
    assert wrong["code"] == "bad_login"
    assert (await refused_hello(connect, arena, name=name, password="still wrong"))["code"] == "bad_login"
    # Past the free failures, the name is locked out: even the right password is not checked now.
    assert (await refused_hello(connect, arena, name=name, password="wrong again"))["code"] == "bad_login"
    locked = await refused_hello(connect, arena, name=name, password=PASSWORD)
    assert locked["code"] == "rate_limited" and "try again in" in locked["message"]
    # Nothing changed: the one token there is still works, and no login made another.
    assert (await (await connect(arena)).hello(token=alan.token))["player"]["id"] == alan.player_id
    status, _ = await matches_of(arena, alan.player_id or "", alan.token)
    assert status == 200


async def test_a_flood_of_logins_from_one_address_is_rate_limited(
    start_server: StartServer, connect: Connect
) -> None:
    arena = await start_server(login_burst=3, login_rate_per_s=0.01, uncapped_networks=())
    replies = [
        await refused_hello(connect, arena, name=unique(f"Flood {n}"), password=PASSWORD) for n in range(5)
    ]
    assert [reply["code"] for reply in replies] == ["bad_login"] * 3 + ["rate_limited"] * 2
    guest = await connect.player(arena, unique("Flooder"))  # registering counts against the same allowance
    refused = await guest.request("account.register", password=PASSWORD)
    assert refused["code"] == "rate_limited"
    assert (await (await connect(arena)).hello(token=guest.token))["claimed"] is False


async def test_no_password_or_token_reaches_a_log_or_another_player(
    arena: Server, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    watcher = await connect.player(arena, unique("Watcher"))
    await watcher.request("lobby.subscribe")
    name = unique("Secretive")
    guest = await connect.player(arena, name)
    await guest.request("account.register", password=PASSWORD)
    await guest.request("match.create", game="tictactoe")
    await refused_hello(connect, arena, name=name, password="a wrong password")
    device = await log_in(connect, arena, name)
    await device.request("account.logout", everywhere=True)
    await watcher.settle(0.2)
    secrets = [PASSWORD, "a wrong password", guest.token, device.token]
    # Everything logged at any level, but by the test's own clients, which print the frames they send.
    logged = [caplog.handler.format(record) for record in caplog.records]
    server_logs = "\n".join(
        line
        for line, record in zip(logged, caplog.records, strict=True)
        if record.name != "websockets.client"
    )
    assert "logged in" in server_logs and "claimed a name" in server_logs  # (the server did log)
    seen = server_logs + json.dumps(watcher.received)
    for secret in secrets:
        assert secret and secret not in seen


async def test_two_claims_of_one_name_at_once_leave_it_to_one_player(arena: Server) -> None:
    """The check before a claim can pass for two players at once: the database's unique key on the folded
    name still lets only one have it, and the other is told ``name_taken``."""
    store = arena.store
    first, second = [await store.create_player(unique("Twin"), hash_token(new_token())) for _ in range(2)]
    name = unique("Contested")
    results = await asyncio.gather(
        *(
            store.commit(writes.name_claim(player.id, case(name), name_key(name), "hash"))
            for player, case in ((first, str.lower), (second, str.upper))
        ),
        return_exceptions=True,
    )
    assert sorted(type(result).__name__ for result in results) == ["NameTakenError", "NoneType"]
    refused = next(result for result in results if isinstance(result, NameTakenError))
    assert storage_failure(refused).code == "name_taken"
    claimed = await store.claimed_player(name_key(name))
    assert claimed is not None and claimed[0].id in (first.id, second.id) and claimed[0].claimed


async def test_log_out_closes_the_connections_that_share_the_token_and_no_other(
    arena: Server, connect: Connect
) -> None:
    name = unique("Tabs")
    guest = await connect.player(arena, name)
    assert (await guest.request("account.register", password=PASSWORD))["type"] == "account.claimed"
    tab = await log_in(connect, arena, name)
    other_tab = await connect.player(arena, token=tab.token)  # another tab of the same browser
    elsewhere = await log_in(connect, arena, name)
    await tab.request("account.logout")
    assert await other_tab.expect(type_="account.logged_out") == {
        "type": "account.logged_out",
        "everywhere": False,
    }
    await other_tab.websocket.wait_closed()
    # Another device's login, and the token the guest was made with, go on.
    assert (await elsewhere.request("lobby.subscribe"))["type"] == "lobby.snapshot"
    assert (await guest.request("lobby.subscribe"))["type"] == "lobby.snapshot"
    assert not [m for m in elsewhere.take_unread() + guest.take_unread() if m["type"] == "account.logged_out"]
