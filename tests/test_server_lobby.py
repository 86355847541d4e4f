"""The lobby over WebSocket and over MQTT (Mosquitto): entries appear, fill, end, and name their host."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import aiomqtt
import msgspec
import pytest
from support.fixtures import FLEET_KEY, Connect, StartServer
from support.fuzz_arena import api_get
from support.waiting import wait_until

from bots.fleet import Fleet, FleetConfig, parse_levels
from bots.link import MAX_MESSAGE_BYTES, Backoff
from bots.pool import SearchPool
from server.app import Server, running_server
from server.config import ServerConfig
from server.lobby import (
    MAX_BUS_ENTRY_BYTES,
    MAX_URL_LENGTH,
    SNAPSHOT_BOT_REQUESTS,
    SNAPSHOT_LIVE,
    SNAPSHOT_OPEN,
    BadLobbyMessage,
    Lobby,
    _Complaints,
)
from server.protocol import (
    MAX_BOT_STATUS_LENGTH,
    MAX_ID_LENGTH,
    MAX_NAME_LENGTH,
    BotRequest,
    BotStatus,
    LobbyEntry,
    LobbyOmitted,
    LobbySnapshot,
    PlayerInfo,
    encode,
)


async def test_lobby_subscribers_see_public_matches_open_fill_and_end(
    arena: Server, connect: Connect
) -> None:
    watcher = await connect.player(arena, "Watcher")
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob")
    snapshot = await watcher.request("lobby.subscribe")
    assert snapshot["type"] == "lobby.snapshot" and snapshot["matches"] == []
    assert snapshot["omitted"] == {"bot_requests": 0, "open": 0, "live": 0}, "always sent, 0 when none"

    await alice.request("match.create", game="connect4", visibility="private")
    state = await alice.request("match.create", game="connect4", time_control="3+2", seat=0, bot={"level": 3})
    match_id = state["match_id"]
    update = await watcher.expect(type_="lobby.update")
    entry = update["entry"]
    assert entry["match_id"] == match_id, "private matches are never listed"
    assert entry["status"] == "open" and entry["time_control"] == "3+2"
    assert entry["bot"] == {"level": 3, "style": None}
    assert entry["host"] == arena.config.instance_id and entry["url"] == arena.ws_url
    assert entry["seats"][0]["name"] == "Alice" and entry["seats"][1] is None

    await bob.request("match.join", match_id=match_id)
    live = await watcher.expect(type_="lobby.update")
    assert live["entry"]["status"] == "live" and None not in live["entry"]["seats"]
    again = await watcher.request("lobby.subscribe")
    assert [entry["match_id"] for entry in again["matches"]] == [match_id]
    assert again["omitted"] == {"bot_requests": 0, "open": 0, "live": 0}

    await alice.request("resign", match_id=match_id)
    assert (await watcher.expect(type_="lobby.remove"))["match_id"] == match_id
    assert (await watcher.request("lobby.unsubscribe"))["type"] == "ok"
    await alice.request("match.create", game="tictactoe")
    assert not [m for m in await watcher.settle(0.2) if m["type"].startswith("lobby.")]


async def test_an_open_match_whose_creator_has_gone_leaves_the_lobby_and_cannot_be_joined(
    arena: Server, connect: Connect
) -> None:
    """Until they come back: a bot or a person seated meanwhile would only win when the grace period
    ends, and a fleet would hold a place for it all that time."""
    watcher = await connect.player(arena, "Watcher")
    alice = await connect.player(arena, "Alice")
    match_id = (await alice.request("match.create", game="connect4"))["match_id"]
    await watcher.request("lobby.subscribe")
    await alice.close()
    assert (await watcher.expect(type_="lobby.remove"))["match_id"] == match_id
    refused = await watcher.request("match.join", match_id=match_id)
    assert (refused["type"], refused["code"]) == ("error", "not_allowed")
    assert (await watcher.request("lobby.subscribe"))["matches"] == []

    alice_again = await connect.player(arena, token=alice.token)
    await alice_again.request("match.watch", match_id=match_id)
    back = await watcher.expect(type_="lobby.update")
    assert (back["entry"]["match_id"], back["entry"]["status"]) == (match_id, "open")
    joined = await watcher.request("match.join", match_id=match_id)
    assert (joined["type"], joined["status"]) == ("match.state", "live")


async def test_a_bot_status_note_shows_on_the_lobby_entry_and_to_the_match_creator(
    arena: Server, connect: Connect
) -> None:
    watcher = await connect.player(arena, "Watcher")
    alice = await connect.player(arena, "Alice")
    fleet = await connect.player(arena, "fleet-f1", bot=True, fleet_key=FLEET_KEY)
    await watcher.request("lobby.subscribe")
    match_id = (await alice.request("match.create", game="connect4", seat=0, bot={"level": 3}))["match_id"]
    assert (await watcher.expect(type_="lobby.update"))["entry"]["bot_status"] is None

    reason = "  all 8 games of fleet f1 are busy; you are first in line "
    reply = await fleet.request("bot.status", match_id=match_id, state="queued", reason=reason)
    assert reply["type"] == "ok"
    note = {"state": "queued", "reason": reason.strip(), "by": "fleet-f1"}
    assert (await watcher.expect(type_="lobby.update"))["entry"]["bot_status"] == note
    assert (await alice.expect(type_="bot.status", match_id=match_id))["bot_status"] == note
    assert (await watcher.request("lobby.subscribe"))["matches"][0]["bot_status"] == note
    await watcher.request("match.watch", match_id=match_id)
    assert (await watcher.expect(type_="bot.status", match_id=match_id))["bot_status"] == note

    later = {"state": "coming", "reason": "seating a level 3 bot", "by": "fleet-f1"}
    await fleet.request("bot.status", match_id=match_id, state="coming", reason=later["reason"])
    updated = await watcher.expect(type_="lobby.update")
    assert updated["entry"]["bot_status"] == later, "the latest note wins"
    await fleet.request("match.join", match_id=match_id)
    live = await watcher.expect(type_="lobby.update", where=lambda m: m["entry"]["status"] == "live")
    assert live["entry"]["bot_status"] is None, "a started match waits for no bot"


async def test_bot_status_notes_are_refused_unless_valid_and_for_an_open_bot_request(
    arena: Server, connect: Connect
) -> None:
    alice = await connect.player(arena, "Alice")
    fleet = await connect.player(arena, "fleet-f1", bot=True, fleet_key=FLEET_KEY)
    asking = (await alice.request("match.create", game="connect4", seat=0, bot={"level": 3}))["match_id"]
    people = (await alice.request("match.create", game="connect4", seat=0))["match_id"]
    started = (await alice.request("match.create", game="tictactoe", seat=0, bot={"level": 1}))["match_id"]
    await fleet.request("match.join", match_id=started)

    def note(match_id: str, state: str = "queued", reason: str = "busy") -> dict[str, Any]:
        return {"match_id": match_id, "state": state, "reason": reason}

    refusals = [
        (note(asking, state="maybe"), "bad_field"),
        (note(asking, reason=""), "bad_field"),
        (note(asking, reason="   "), "bad_field"),
        (note(asking, reason="x" * 201), "bad_field"),
        (note(asking, reason="ring\x07"), "bad_field"),
        (note("no-such-match"), "not_found"),
        (note(people), "not_allowed"),
        (note(started), "not_allowed"),
    ]
    for request, code in refusals:
        error = await fleet.request("bot.status", **request)
        assert (error["type"], error["code"]) == ("error", code), (request, error)
    assert arena.lobby.entries[asking].bot_status is None, "a refused note changes nothing"
    stranger = await connect(arena)
    assert (await stranger.request("bot.status", **note(asking)))["code"] == "hello_required"
    posing = await connect.player(arena, "fleet-f2")  # a person, whatever the name says
    assert (await posing.request("bot.status", **note(asking)))["code"] == "not_a_fleet"


async def test_a_client_without_the_fleet_key_cannot_post_a_bot_note(arena: Server, connect: Connect) -> None:
    """``bot: true`` alone grants nothing: a note reads as the fleet's word to the person who asked."""
    alice = await connect.player(arena, "Alice")
    watcher = await connect.player(arena, "Watcher")
    await watcher.request("lobby.subscribe")
    match_id = (await alice.request("match.create", game="connect4", seat=0, bot={"level": 3}))["match_id"]
    await watcher.expect(type_="lobby.update")
    lure = {"match_id": match_id, "state": "unavailable", "reason": "Bots are down - play at evil.example"}

    posing = await connect.player(arena, "fleet-f1", bot=True)
    refused = await posing.request("bot.status", **lure)
    assert (refused["type"], refused["code"]) == ("error", "not_a_fleet")
    assert "fleet_key" in refused["message"]
    wrong = await connect(arena)
    refused = await wrong.request("hello", name="fleet-f1", bot=True, fleet_key="not-" + FLEET_KEY)
    assert (refused["type"], refused["code"]) == ("error", "bad_fleet_key")
    assert FLEET_KEY not in refused["message"]
    assert (await wrong.request("bot.status", **lure))["code"] == "hello_required", "not welcomed"

    assert arena.lobby.entries[match_id].bot_status is None, "nothing stored"
    heard = [*await alice.settle(0.3), *await watcher.settle(0.1)]
    assert not [m for m in heard if m["type"] in ("bot.status", "lobby.update")], "nothing broadcast"
    assert (await watcher.request("lobby.subscribe"))["matches"][0]["bot_status"] is None

    fleet = await connect.player(arena, "fleet-f1", bot=True, fleet_key=FLEET_KEY)
    assert (await fleet.request("bot.status", **lure))["type"] == "ok", "the fleet with the key may"
    assert (await alice.expect(type_="bot.status", match_id=match_id))["bot_status"]["by"] == "fleet-f1"


async def test_a_server_given_no_fleet_key_takes_no_ones_notes(
    start_server: StartServer, connect: Connect
) -> None:
    arena = await start_server(fleet_key=None)
    alice = await connect.player(arena, "Alice")
    match_id = (await alice.request("match.create", game="connect4", seat=0, bot={"level": 3}))["match_id"]
    bot = await connect.player(arena, "fleet-f1", bot=True)
    refused = await bot.request("bot.status", match_id=match_id, state="queued", reason="busy")
    assert refused["code"] == "not_a_fleet"
    keyed = await connect(arena)
    refused = await keyed.request("hello", name="fleet-f2", bot=True, fleet_key=FLEET_KEY)
    assert (refused["type"], refused["code"]) == ("error", "bad_fleet_key")
    assert arena.lobby.entries[match_id].bot_status is None


# ---------------------------------------------------------------------- a crowded lobby

ALICE = PlayerInfo(id="5f0c9c0b8f1e4a6c9d2b7e13a4c6d8f0", name="Alice", bot=False)
BOB = PlayerInfo(id="a81d4e0c9b2f4d7e8c1a6b3f5e9d2c70", name="Bob", bot=False)


def crowd_entry(
    server: Server, match_id: str, age_rank: int, status: str, bot_level: int | None
) -> LobbyEntry:
    """A lobby entry of ``server``'s own; a higher ``age_rank`` is a newer match."""
    return LobbyEntry(
        match_id=match_id, game="connect4", status=status, time_control="5+3",
        seats=[ALICE, None if status == "open" else BOB],
        bot=None if bot_level is None else BotRequest(level=bot_level),
        host=server.config.instance_id, url=server.ws_url,
        created_at=f"2026-03-01T12:00:00.{age_rank:06d}+00:00",
    )  # fmt: skip


def crowd(
    server: Server, bot_requests: int, other_open: int, live: int, bot_level: int = 3
) -> list[LobbyEntry]:
    """Fill ``server``'s lobby as a busy one is, its matches listed in no order of age; return the entries."""
    kinds = [("ask", "open", bot_level)] * bot_requests + [("open", "open", None)] * other_open
    kinds += [("live", "live", None)] * live
    ages = random.Random(7).sample(range(len(kinds)), len(kinds))
    entries = [
        crowd_entry(server, f"{prefix}{n:05d}", age, status, level)
        for n, ((prefix, status, level), age) in enumerate(zip(kinds, ages, strict=True))
    ]
    for entry in entries:
        server.lobby.show(entry)
    return entries


def ids(entries: list[Any]) -> list[str]:
    return [entry["match_id"] if isinstance(entry, dict) else entry.match_id for entry in entries]


def about(match_id: str) -> Callable[[dict[str, Any]], bool]:
    """For ``expect``: a ``lobby.update`` of the entry of ``match_id``."""
    return lambda message: message["entry"]["match_id"] == match_id


async def test_a_snapshot_of_a_crowded_lobby_is_bounded_bot_requests_first(
    arena: Server, connect: Connect
) -> None:
    """A busy server's whole lobby (some 4,000 open and live matches) is over 1 MiB, more than clients read
    in one message (websockets' default); each subscriber gets at most 400 entries, chosen once per change."""
    entries = crowd(arena, SNAPSHOT_BOT_REQUESTS + 50, SNAPSHOT_OPEN + 100, 3500)
    whole = LobbySnapshot(matches=entries, omitted=LobbyOmitted(bot_requests=0, open=0, live=0))
    assert len(encode(whole)) > 2**20
    watcher = await connect.player(arena, "Watcher")  # reads at most 1 MiB a message, as fleets did

    reply = await watcher.request("lobby.subscribe")
    snapshot = reply["matches"]

    by_age = sorted(entries, key=lambda entry: entry.created_at)
    asking = [entry for entry in by_age if entry.bot is not None]
    other_open = [entry for entry in reversed(by_age) if entry.status == "open" and entry.bot is None]
    live = [entry for entry in reversed(by_age) if entry.status == "live"]
    assert ids(snapshot) == ids(
        asking[:SNAPSHOT_BOT_REQUESTS] + other_open[:SNAPSHOT_OPEN] + live[:SNAPSHOT_LIVE]
    ), "the oldest bot requests (served first), then the newest open matches, then the newest live ones"
    assert len(json.dumps(snapshot)) < 200_000
    assert reply["omitted"] == {"bot_requests": 50, "open": 100, "live": 3500 - SNAPSHOT_LIVE}, "per kind"
    assert arena.lobby.snapshot(1).matches is arena.lobby.snapshot(2).matches, "unchanged: chosen once"
    assert arena.lobby.snapshot(1).omitted is arena.lobby.snapshot(2).omitted, "counted once, with them"

    arena.lobby.hide(live[0].match_id)
    arena.lobby.show(msgspec.structs.replace(asking[0], status="live", seats=[ALICE, BOB]))
    assert arena.lobby.snapshot(3).omitted == LobbyOmitted(
        bot_requests=49, open=100, live=3500 - SNAPSHOT_LIVE
    ), "counted again as the lobby changes: one live match gone, one bot request filled (now live)"


async def test_bot_requests_left_out_of_a_snapshot_are_sent_as_room_is_made(
    arena: Server, connect: Connect
) -> None:
    """Fleets need every bot request: each one that leaves the lobby brings the next in line into view."""
    asking = sorted(crowd(arena, SNAPSHOT_BOT_REQUESTS + 5, 0, 0), key=lambda entry: entry.created_at)
    fleet = await connect.player(arena, "Fleet", bot=True)
    snapshot = (await fleet.request("lobby.subscribe"))["matches"]
    assert ids(snapshot) == ids(asking[:SNAPSHOT_BOT_REQUESTS])

    for n, served in enumerate(asking[:5]):
        if n % 2:  # a bot joined it
            arena.lobby.show(msgspec.structs.replace(served, status="live", seats=[ALICE, BOB]))
        else:  # its creator cancelled it
            arena.lobby.hide(served.match_id)
        await fleet.expect(type_="lobby.update", where=about(asking[SNAPSHOT_BOT_REQUESTS + n].match_id))
    updated = {
        message["entry"]["match_id"] for message in fleet.received if message["type"] == "lobby.update"
    }
    assert set(ids(snapshot)) | updated == set(ids(asking)), "every bot request reached the subscriber"


def test_an_entry_at_every_limit_passes_the_bus_and_a_full_snapshot_of_them_fits_a_fleets_link() -> None:
    """What one snapshot can weigh at most (names, notes and the like at their limits, in 4-byte characters):
    less than any client of websockets reads in one message by default (1 MiB), a quarter of a fleet's."""
    wide = "\U0001f600"
    name = wide * MAX_NAME_LENGTH
    player = PlayerInfo(id="p" * MAX_ID_LENGTH, name=name, bot=True)
    note = BotStatus(state="unavailable", reason=wide * MAX_BOT_STATUS_LENGTH, by=name)
    entry = LobbyEntry(
        match_id="m" * MAX_ID_LENGTH, game="g" * MAX_NAME_LENGTH, status="open", time_control="t" * 16,
        seats=[player, player], bot=BotRequest(level=99, style="s" * MAX_NAME_LENGTH), host="h" * 64,
        url="wss://" + "u" * (MAX_URL_LENGTH - 6), created_at="c" * MAX_ID_LENGTH, bot_status=note,
    )  # fmt: skip
    assert Lobby._read_bus_entry(encode(entry)) == entry
    largest = len(
        encode(
            LobbySnapshot(
                matches=[entry] * (SNAPSHOT_BOT_REQUESTS + SNAPSHOT_OPEN + SNAPSHOT_LIVE),
                omitted=LobbyOmitted(bot_requests=2**53, open=2**53, live=2**53),
            )
        )
    )
    assert largest < 2**20 and largest < MAX_MESSAGE_BYTES / 4


@pytest.mark.parametrize(
    ("seat", "note_by", "said"),
    [
        ("Alice\u202e", "Fleet", r"U\+202E \(RIGHT-TO-LEFT OVERRIDE\).* at `\$\.seats\[0\]`"),
        ("\u3164", "Fleet", r"U\+3164 .* at `\$\.seats\[0\]`"),
        ("Alice ", "Fleet", r"not as names are kept.* at `\$\.seats\[0\]`"),
        ("Alice", "Zoe\u0308", r"not as names are kept.* at `\$\.bot_status`"),  # (in NFC: Zo\u00eb)
        ("Alice", "Fleet\ufe0f", r"not as names are kept.* at `\$\.bot_status`"),
    ],
)
def test_a_bus_entry_is_refused_for_a_name_that_clean_name_would_refuse_or_change(
    seat: str, note_by: str, said: str
) -> None:
    """Another instance's entry is shown as it comes, so its names must be what a local one could be."""
    note = BotStatus(state="queued", reason="busy", by=note_by)
    player = PlayerInfo(id="p1", name=seat, bot=False)
    entry = LobbyEntry(
        match_id="m1", game="connect4", status="open", time_control="5+3", seats=[player, None],
        bot=BotRequest(level=3), host="peer-1", url="ws://peer/ws", created_at="2026", bot_status=note,
    )  # fmt: skip
    with pytest.raises(BadLobbyMessage, match=said):
        Lobby._read_bus_entry(encode(entry))


@pytest.fixture(scope="module")
def pool() -> Iterator[SearchPool]:
    shared = SearchPool(1)
    yield shared
    shared.close()


async def test_a_fleet_following_a_crowded_lobby_seats_its_bots(
    arena: Server, connect: Connect, pool: SearchPool
) -> None:
    """As ``plyarena run`` does (WebSocket only, no broker). A snapshot of the whole lobby once killed the
    fleet's link (close code 1009), which reconnected at once, again and again, and seated no bot."""
    crowd(arena, 150, 2000, 1800, bot_level=99)  # requests for a level no fleet offers, waiting
    alice = await connect.player(arena, "Alice")
    match_id = (await alice.request("match.create", game="tictactoe", seat=0, bot={"level": 1}))["match_id"]
    config = FleetConfig(
        levels=parse_levels("tictactoe:1"), idle_wait_s=None, backoff=Backoff(initial_s=0.05, max_s=0.5)
    )
    async with Fleet(pool, config) as fleet:
        fleet.follow_server(arena.ws_url)
        started = await alice.expect(type_="started", match_id=match_id, timeout=10)
    assert started["turn"] == 0


@pytest.fixture(scope="module")
def mqtt_instances(mqtt_url: str) -> Iterator[list[str]]:
    """Instances started in this module; their retained status messages are cleared from the broker after."""
    instances: list[str] = []
    yield instances

    async def clear() -> None:
        host, port = mqtt_url.removeprefix("mqtt://").split(":")
        async with aiomqtt.Client(host, int(port)) as client:
            for instance in instances:
                await client.publish(f"plyarena/v1/instances/{instance}", b"", qos=1, retain=True)

    with ThreadPoolExecutor(max_workers=1) as pool:  # pytest-asyncio's loop is gone by now
        pool.submit(asyncio.run, clear()).result()


@pytest.fixture
def start_mqtt_server(start_server: StartServer, mqtt_url: str, mqtt_instances: list[str]) -> StartServer:
    async def start(**options: Any) -> Server:
        server = await start_server(mqtt_url=mqtt_url, **options)
        mqtt_instances.append(server.config.instance_id)
        return server

    return start


@pytest.fixture
async def mqtt(mqtt_url: str) -> AsyncIterator[aiomqtt.Client]:
    host, port = mqtt_url.removeprefix("mqtt://").split(":")
    async with aiomqtt.Client(host, int(port), identifier=None) as client:
        yield client


async def next_message(client: aiomqtt.Client, topic: str, timeout: float = 5.0) -> aiomqtt.Message:
    async def wait() -> aiomqtt.Message:
        async for message in client.messages:
            if message.topic.value == topic:
                return message
        raise AssertionError("the MQTT connection ended")

    return await asyncio.wait_for(wait(), timeout)


def payload(message: aiomqtt.Message) -> Any:
    assert isinstance(message.payload, bytes)
    return json.loads(message.payload) if message.payload else None


async def test_lobby_entries_and_match_events_arrive_over_mqtt(
    start_mqtt_server: StartServer, connect: Connect, mqtt: aiomqtt.Client
) -> None:
    server = await start_mqtt_server()
    instance = server.config.instance_id
    await mqtt.subscribe(f"plyarena/v1/lobby/{instance}/+", qos=1)
    alice = await connect.player(server, "Alice")
    bob = await connect.player(server, "Bob", bot=True, fleet_key=FLEET_KEY)
    state = await alice.request("match.create", game="connect4", seat=0, bot={"level": 5, "style": "sharp"})
    match_id = state["match_id"]
    topic = f"plyarena/v1/lobby/{instance}/{match_id}"
    entry = payload(await next_message(mqtt, topic))
    assert entry["match_id"] == match_id and entry["status"] == "open"
    assert entry["host"] == instance and entry["url"] == server.ws_url
    assert entry["bot"] == {"level": 5, "style": "sharp"} and entry["bot_status"] is None
    await bob.request("bot.status", match_id=match_id, state="unavailable", reason="no sharp bots here")
    noted = payload(await next_message(mqtt, topic))
    assert noted["bot_status"] == {"state": "unavailable", "reason": "no sharp bots here", "by": "Bob"}

    await mqtt.subscribe(f"plyarena/v1/match/{instance}/{match_id}", qos=0)
    await bob.request("match.join", match_id=match_id)
    cleared = await next_message(mqtt, topic)
    assert payload(cleared) is None, "a match that fills leaves the MQTT lobby"
    await alice.request("move", match_id=match_id, ply=0, move="4")
    events = []
    while len(events) < 3:
        events.append(payload(await next_message(mqtt, f"plyarena/v1/match/{instance}/{match_id}")))
    assert [event["type"] for event in events] == ["seated", "started", "moved"]
    assert events[2]["move"] == "4" and "id" not in events[2]


async def test_a_late_mqtt_subscriber_gets_the_retained_open_entries(
    start_mqtt_server: StartServer, connect: Connect, mqtt: aiomqtt.Client
) -> None:
    server = await start_mqtt_server()
    instance = server.config.instance_id
    alice = await connect.player(server, "Alice")
    match_id = (await alice.request("match.create", game="othello"))["match_id"]
    await asyncio.sleep(0.3)  # published before anyone listens
    await mqtt.subscribe(f"plyarena/v1/lobby/{instance}/+", qos=1)
    message = await next_message(mqtt, f"plyarena/v1/lobby/{instance}/{match_id}")
    assert message.retain and payload(message)["game"] == "othello"
    await alice.request("match.leave", match_id=match_id)
    assert payload(await next_message(mqtt, f"plyarena/v1/lobby/{instance}/{match_id}")) is None


async def test_instances_sharing_a_broker_list_each_others_open_matches(
    start_mqtt_server: StartServer, connect: Connect, mqtt: aiomqtt.Client
) -> None:
    first = await start_mqtt_server()
    second = await start_mqtt_server()
    watcher = await connect.player(second, "Watcher")
    await watcher.request("lobby.subscribe")
    alice = await connect.player(first, "Alice")
    bob = await connect.player(first, "Bob")
    match_id = (await alice.request("match.create", game="tictactoe", seat=0))["match_id"]
    update = await watcher.expect(
        type_="lobby.update", where=lambda message: message["entry"]["match_id"] == match_id, timeout=5
    )
    assert update["entry"]["host"] == first.config.instance_id and update["entry"]["url"] == first.ws_url
    await bob.request("match.join", match_id=match_id)
    await watcher.expect(type_="lobby.remove", match_id=match_id, timeout=5)


async def test_a_match_hosted_on_another_instance_is_answered_with_its_hosts_url(
    start_mqtt_server: StartServer, connect: Connect, mqtt: aiomqtt.Client
) -> None:
    """A private match is in no lobby: its id alone, asked of the wrong instance, says where to go."""
    host = await start_mqtt_server()
    other = await start_mqtt_server()
    await mqtt.subscribe(f"plyarena/v1/instances/{host.config.instance_id}", qos=1)
    status = payload(await next_message(mqtt, f"plyarena/v1/instances/{host.config.instance_id}"))
    assert status["online"] is True and status["url"] == host.ws_url
    alice = await connect.player(host, "Alice")
    created = await alice.request("match.create", game="tictactoe", seat=0, visibility="private")
    match_id = created["match_id"]
    bob = await connect.player(other, "Bob")
    await wait_until(lambda: host.config.instance_id in other.lobby.instance_urls, 5, "the host's URL")
    for request in ("match.join", "match.watch"):
        refused = await bob.request(request, match_id=match_id)
        assert refused["type"] == "error" and refused["code"] == "hosted_elsewhere", refused
        assert refused["url"] == host.ws_url
        assert host.ws_url in refused["message"]
    status_code, answer = await api_get(other.http_url, f"/api/matches/{match_id}")
    assert status_code == 200 and answer["host"] == host.config.instance_id
    assert answer["host_url"] == host.ws_url
    there = await connect.player(refused["url"], "Bob again")
    joined = await there.request("match.join", match_id=match_id)
    assert joined["status"] == "live"


async def test_a_match_filled_over_mqtt_lobby_is_joined_on_its_host(
    start_mqtt_server: StartServer, connect: Connect, mqtt: aiomqtt.Client
) -> None:
    """What a bot fleet does: learn of a match from the broker only, and join it at the URL it names."""
    server = await start_mqtt_server()
    instance = server.config.instance_id
    await mqtt.subscribe("plyarena/v1/lobby/+/+", qos=1)
    alice = await connect.player(server, "Alice")
    match_id = (await alice.request("match.create", game="tictactoe", seat=0, bot={"level": 1}))["match_id"]
    entry = payload(await next_message(mqtt, f"plyarena/v1/lobby/{instance}/{match_id}"))
    bot = await connect.player(entry["url"], "alphabeta-ttt-L1", bot=True)
    joined = await bot.request("match.join", match_id=entry["match_id"])
    assert joined["status"] == "live" and joined["you"] == 1 and joined["seats"][1]["bot"] is True
    assert (await alice.request("move", match_id=match_id, ply=0, move="b2"))["type"] == "moved"
    assert (await bot.expect(type_="moved", match_id=match_id))["move"] == "b2"


async def test_a_stopping_instance_withdraws_its_entries_from_every_lobby(
    start_mqtt_server: StartServer,
    connect: Connect,
    mqtt: aiomqtt.Client,
    mqtt_url: str,
    arena_db_url: str,
    mqtt_instances: list[str],
) -> None:
    observer = await start_mqtt_server()
    watcher = await connect.player(observer, "Watcher")
    await watcher.request("lobby.subscribe")
    config = ServerConfig(port=0, db_url=arena_db_url, mqtt_url=mqtt_url)
    mqtt_instances.append(config.instance_id)
    await mqtt.subscribe(f"plyarena/v1/lobby/{config.instance_id}/+", qos=1)
    async with running_server(config) as leaving:
        alice = await connect.player(leaving, "Alice")
        match_id = (await alice.request("match.create", game="checkers"))["match_id"]
        await watcher.expect(
            type_="lobby.update", where=lambda message: message["entry"]["match_id"] == match_id
        )
        topic = f"plyarena/v1/lobby/{config.instance_id}/{match_id}"
        assert payload(await next_message(mqtt, topic)) is not None
    assert payload(await next_message(mqtt, topic)) is None, "the retained entry is cleared on shutdown"
    await watcher.expect(type_="lobby.remove", match_id=match_id)


# ---------------------------------------------------------------------- what the bus may not do


def about_match(match_id: str) -> Callable[[dict[str, Any]], bool]:
    """Any lobby message about ``match_id``."""
    return lambda message: match_id in (message.get("match_id"), message.get("entry", {}).get("match_id"))


async def test_messages_on_the_bus_cannot_delist_or_redirect_a_match_hosted_here(
    start_mqtt_server: StartServer, connect: Connect, mqtt: aiomqtt.Client
) -> None:
    """Whoever may publish on the broker could otherwise clear an open match from this instance's lobby, or
    send whoever joins it to a server of theirs; and clear another instance's entries likewise."""
    server = await start_mqtt_server()
    alice = await connect.player(server, "Alice")
    match_id = (await alice.request("match.create", game="connect4", bot={"level": 3}))["match_id"]
    watcher = await connect.player(server, "Watcher")
    await watcher.request("lobby.subscribe")
    ours = server.lobby.entries[match_id]
    forged = {**msgspec.to_builtins(ours), "host": "evil-1", "url": "ws://evil.example/ws"}
    theirs = {**forged, "match_id": "theirs", "host": "peer-1", "url": "ws://peer.example/ws"}

    await mqtt.publish(f"plyarena/v1/lobby/evil-1/{match_id}", b"", qos=1)
    await mqtt.publish(f"plyarena/v1/lobby/evil-1/{match_id}", json.dumps(forged), qos=1)
    await mqtt.publish("plyarena/v1/lobby/peer-1/theirs", json.dumps(theirs), qos=1)
    await mqtt.publish("plyarena/v1/lobby/evil-1/theirs", b"", qos=1)
    marker = {**theirs, "match_id": "marker"}
    await mqtt.publish("plyarena/v1/lobby/peer-1/marker", json.dumps(marker), qos=1)
    await watcher.expect(type_="lobby.update", where=about("marker"), timeout=5)  # the rest came before it

    assert not [message for message in watcher.received if about_match(match_id)(message)]
    assert server.lobby.entries[match_id] == ours
    assert [
        (entry["match_id"], entry["url"]) for entry in (await watcher.request("lobby.subscribe"))["matches"]
    ] == [
        (match_id, server.ws_url),
        ("theirs", "ws://peer.example/ws"),
        ("marker", "ws://peer.example/ws"),
    ], "another instance's entry is cleared by that instance only"
    await mqtt.publish("plyarena/v1/lobby/peer-1/theirs", b"", qos=1)
    await watcher.expect(type_="lobby.remove", match_id="theirs", timeout=5)


async def test_bad_entries_on_the_bus_are_dropped_with_one_short_warning(
    arena: Server, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    """Entries from other instances keep a local entry's limits; a stream of bad ones is no log flood."""
    watcher = await connect.player(arena, "Watcher")
    await watcher.request("lobby.subscribe")
    good = msgspec.to_builtins(crowd_entry(arena, "good", 1, "open", 3)) | {"host": "peer-1"}
    seat = good["seats"][0]
    bad: list[tuple[str, bytes]] = [
        (name, json.dumps({**good, "match_id": name, **fields}).encode())
        for name, fields in [
            ("huge", {"game": "g" * 100_000}),
            ("long-game", {"game": "g" * 33}),
            ("unknown-field", {"colour": "red"}),
            ("not-a-websocket", {"url": "javascript:alert(1)"}),
            ("live", {"status": "live"}),
            ("elsewhere", {"match_id": "somewhere-else"}),
            ("someone-else", {"host": "peer-2"}),
            # names are held to what clean_name passes (server/text.py), not only to their length:
            ("hidden-name", {"seats": [{**seat, "name": "Alice\u202e"}, None]}),
            ("blank-name", {"seats": [{**seat, "name": "\u2800"}, None]}),
            ("unstripped-name", {"seats": [{**seat, "name": " Alice"}, None]}),
            ("decomposed-name", {"seats": [{**seat, "name": "Zoe\u0308"}, None]}),
            ("hidden-note-by", {"bot_status": {"state": "queued", "reason": "busy", "by": "Fleet\u200b"}}),
        ]
    ]
    bad.append(("not-json", b"{not json"))
    with caplog.at_level(logging.INFO, logger="server.lobby"):
        for name, payload in bad:
            await arena.bus.publish(f"plyarena/v1/lobby/peer-1/{name}", payload)
        await arena.bus.publish("plyarena/v1/instances/peer-1", b"[1, 2]")
        await arena.bus.publish("plyarena/v1/lobby/peer-1/good", json.dumps(good).encode())
        update = await watcher.expect(type_="lobby.update", timeout=5)  # (the bus keeps their order)

    assert update["entry"] == good and not watcher.take_unread()
    assert set(arena.lobby.entries) == {"good"}
    said = [record for record in caplog.records if record.name == "server.lobby"]
    assert [(record.levelno, record.exc_info) for record in said] == [(logging.WARNING, None)]
    warning = said[0].getMessage()
    assert "plyarena/v1/lobby/peer-1/huge" in warning and f"(at most {MAX_BUS_ENTRY_BYTES})" in warning, (
        warning
    )
    assert len(warning) < 300


def test_warnings_about_bad_messages_come_once_a_minute_counting_the_rest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    complaints = _Complaints(60.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="server.lobby"):
        for second in range(0, 150, 10):
            now[0] = second
            complaints.bad(f"topic/{second}", "bad")
    assert [record.getMessage() for record in caplog.records] == [
        "dropped a bad message on topic/0: bad",
        "dropped a bad message on topic/60: bad (5 more since the last warning)",
        "dropped a bad message on topic/120: bad (5 more since the last warning)",
    ]


async def test_a_lobby_subscriber_that_never_reads_is_dropped_at_the_write_allowance(
    start_server: StartServer, connect: Connect
) -> None:
    """Updates pile up for it, on the server and in the kernel's send queue; past the allowance (here
    256 KiB) it is dropped, and the others read on."""
    server = await start_server(max_write_buffer_bytes=256 * 1024)
    lurker = await connect.player(server, "Lurker")
    reader = await connect.player(server, "Reader")
    for client in (lurker, reader):
        await client.request("lobby.subscribe")
    lurker.websocket.transport.pause_reading()
    for n in range(5000):
        server.lobby.show(crowd_entry(server, f"flood{n:05d}", n, "open", None))
        await asyncio.sleep(0)
        if server.metrics.connections == 1:
            break
    assert server.metrics.connections == 1, "the lurker is gone"
    await reader.expect(type_="lobby.update", where=about(f"flood{n:05d}"))
    assert n > 256 * 1024 // 1000, "not before some 256 KiB were sent its way"
