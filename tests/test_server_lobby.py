"""The lobby over WebSocket and over MQTT (Mosquitto): entries appear, fill, end, and name their host."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import aiomqtt
import pytest
from support.fixtures import Connect, StartServer

from server.app import Server, running_server
from server.config import ServerConfig


async def test_lobby_subscribers_see_public_matches_open_fill_and_end(
    arena: Server, connect: Connect
) -> None:
    watcher = await connect.player(arena, "Watcher")
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob")
    snapshot = await watcher.request("lobby.subscribe")
    assert snapshot["type"] == "lobby.snapshot" and snapshot["matches"] == []

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
    fleet = await connect.player(arena, "fleet-f1", bot=True)
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
    fleet = await connect.player(arena, "fleet-f1", bot=True)
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
    assert (await posing.request("bot.status", **note(asking)))["code"] == "not_allowed"


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
    bob = await connect.player(server, "Bob", bot=True)
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

    await mqtt.subscribe(f"plyarena/v1/match/{match_id}", qos=0)
    await bob.request("match.join", match_id=match_id)
    cleared = await next_message(mqtt, topic)
    assert payload(cleared) is None, "a match that fills leaves the MQTT lobby"
    await alice.request("move", match_id=match_id, ply=0, move="4")
    events = []
    while len(events) < 3:
        events.append(payload(await next_message(mqtt, f"plyarena/v1/match/{match_id}")))
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
