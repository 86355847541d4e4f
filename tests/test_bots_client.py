"""The bot client's side of protocol v1: lenient reading, and a bot that shrugs off what it does not know.

The last tests run a bot against a scripted WebSocket server, to show over a
real socket that unknown and malformed messages are logged and ignored while
the bot goes on playing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import msgspec
import pytest
from support.fixtures import Connect, StartServer
from support.process import free_port
from websockets.asyncio.server import ServerConnection, serve

from bots import wire
from bots.capacity import Capacity
from bots.client import BotPlayer, BotSpec
from bots.fleet import parse_levels
from bots.levels import LEVEL_COUNT, level, level_table
from bots.link import MAX_MESSAGE_BYTES, UNREACHABLE_WARNING_AFTER, Backoff, Link
from bots.lobby_feeds import MqttLobby
from bots.manners import Manners
from bots.pool import SearchError, SearchPool, ThinkRequest, ThinkResult
from bots.session import MatchSession, move_seed
from games import get_game

# ---------------------------------------------------------------------- wire


def test_a_message_of_an_unknown_type_decodes_to_unknown() -> None:
    message = wire.decode('{"type": "tournament.invite", "id": 4, "from": "someone"}')
    assert isinstance(message, wire.Unknown) and message.type == "tournament.invite"


def test_an_unknown_match_event_still_counts_in_the_sequence() -> None:
    event = wire.decode('{"type": "clock.paused", "match_id": "m1", "seq": 7}')
    assert isinstance(event, wire.OtherEvent)
    assert (event.match_id, event.seq, event.type) == ("m1", 7, "clock.paused")


def test_fields_a_bot_does_not_know_are_ignored() -> None:
    moved = wire.decode(
        '{"type": "moved", "match_id": "m", "seq": 3, "ply": 1, "seat": 1, "move": "4", "think_ms": 5,'
        ' "clocks_ms": null, "engine": {"score": 3}, "sparkles": true}'
    )
    assert isinstance(moved, wire.Moved) and (moved.ply, moved.move) == (1, "4")


def test_a_catchup_keeps_its_events_in_order_including_unknown_ones() -> None:
    catchup = wire.decode(
        json.dumps({
            "type": "match.catchup", "id": 2, "match_id": "m", "log": "L", "seq": 9,
            "events": [
                {"type": "presence", "match_id": "m", "seq": 8, "seat": 0, "connected": True},
                {"type": "fireworks", "match_id": "m", "seq": 9},
            ],
        })
    )  # fmt: skip
    assert isinstance(catchup, wire.MatchCatchup)
    assert [type(event) for event in catchup.events] == [wire.PresenceChanged, wire.OtherEvent]
    assert [event.seq for event in catchup.events] == [8, 9]


@pytest.mark.parametrize("frame", ["not json", "[1, 2]", '{"no": "type"}', '{"type": "welcome", "id": 1}'])
def test_malformed_frames_raise_malformed_message_naming_the_frame(frame: str) -> None:
    with pytest.raises(wire.MalformedMessage, match="cannot read server frame"):
        wire.decode(frame)


def test_requests_are_encoded_as_the_protocol_says() -> None:
    assert json.loads(wire.encode(wire.Hello(name="alphabeta-c4-L5", bot=True))) == {
        "type": "hello", "name": "alphabeta-c4-L5", "bot": True,
    }  # fmt: skip
    move = wire.PlayMove(match_id="m", ply=0, move="4", engine=wire.EngineInfo(score=1, depth=2, pv=["4"]))
    assert json.loads(wire.encode(move)) == {
        "type": "move", "match_id": "m", "ply": 0, "move": "4",
        "engine": {"score": 1, "depth": 2, "pv": ["4"]},
    }  # fmt: skip
    book = wire.EngineInfo(score=999_979, pv=["4"], time_ms=0, source="book")
    assert json.loads(wire.encode(book)) == {"score": 999_979, "pv": ["4"], "time_ms": 0, "source": "book"}


def test_increments_come_from_the_time_control() -> None:
    assert [wire.increment_ms(tc) for tc in ("untimed", "5+3", "0:30+1", "10+0")] == [0, 3000, 1000, 0]
    with pytest.raises(ValueError, match="'fast'"):
        wire.increment_ms("fast")


# ---------------------------------------------------------------------- naming, offers, policies


def test_a_bot_name_says_its_style_game_and_level() -> None:
    assert BotSpec("connect4", 5, "alphabeta").name == "alphabeta-c4-L5"
    assert BotSpec("othello", 3, "expectimax").name == "expectimax-oth-L3"
    assert BotSpec.of("checkers", 4).name == f"{level('checkers', 4).style}-chk-L4"  # the level's style
    names = [BotSpec.of(game, n).name for game in level_table() for n in range(1, LEVEL_COUNT + 1)]
    assert max(len(name) for name in names) <= 32  # the protocol's limit on names


def test_levels_are_parsed_from_the_command_line() -> None:
    everything = parse_levels(None)  # every level but those an outside engine plays (chess's level 8)
    assert everything == {
        game: tuple(n for n in range(1, LEVEL_COUNT + 1) if rows[n - 1].engine is None)
        for game, rows in sorted(level_table().items())
    }
    assert parse_levels("connect4:1-3,othello:5,connect4:7") == {"connect4": (1, 2, 3, 7), "othello": (5,)}
    assert parse_levels("2")["checkers"] == (2,)
    for bad, reason in (("go:1", "unknown game 'go'"), ("connect4:0-3", "levels run from 1"),
                        ("x-y", "a level or a range")):  # fmt: skip
        with pytest.raises(ValueError, match=reason):
            parse_levels(bad)


def test_capacity_hands_out_tickets_up_to_its_limit_and_each_comes_back_once() -> None:
    released: list[str] = []
    capacity = Capacity(2, on_release=lambda ticket: released.append(ticket.label))
    first, second = capacity.claim("a"), capacity.claim("b")
    assert first is not None and second is not None and capacity.full and capacity.claim("c") is None
    first.release()
    first.release()
    assert released == ["a"] and capacity.in_use == 1 and not capacity.full


def test_a_game_already_under_way_takes_a_place_even_past_the_limit() -> None:
    claimed: list[str] = []
    capacity = Capacity(1, on_claim=lambda ticket: claimed.append(ticket.label))
    seated = capacity.claim("seated")
    resumed = capacity.claim_even_if_full("resumed")
    assert seated is not None and capacity.in_use == 2 and capacity.full and capacity.claim("new") is None
    seated.release()
    assert capacity.full, "still at the limit: one game in progress"
    resumed.release()
    assert not capacity.full and claimed == ["seated", "resumed"]


def test_the_draw_and_rematch_policy() -> None:
    manners = Manners()
    assert not manners.accepts_draw(None)  # never searched: no reason to think it stands worse
    assert manners.accepts_draw(0) and manners.accepts_draw(-40)
    assert not manners.accepts_draw(15)
    assert Manners(draw_max_score=20).accepts_draw(15)
    assert manners.accepts_rematch(has_room=True) and not manners.accepts_rematch(has_room=False)


# ---------------------------------------------------------------------- a bot against a scripted server

Script = Callable[[ServerConnection], Awaitable[None]]


@pytest.fixture
async def scripted_server() -> AsyncIterator[Callable[[Script], Awaitable[str]]]:
    servers = []

    async def start(script: Script) -> str:
        server = await serve(script, "127.0.0.1", 0)
        servers.append(server)
        return f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/ws"

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


async def receive(connection: ServerConnection) -> dict[str, Any]:
    return json.loads(await asyncio.wait_for(connection.recv(), 10))


def welcome(hello: dict[str, Any]) -> str:
    return json.dumps({
        "type": "welcome", "id": hello.get("id"), "token": "t0k3n", "protocol": 1, "instance": "scripted",
        "player": {"id": "p1", "name": hello["name"], "bot": hello["bot"]}, "matches": [],
    })  # fmt: skip


def live_state(match_id: str, you: int, moves: list[str], seq: int, **fields: Any) -> str:
    return json.dumps({
        "type": "match.state", "match_id": match_id, "log": "log-1", "seq": seq, "game": "tictactoe",
        "options": {"time_control": "untimed", "visibility": "public", "bot": None}, "status": "live",
        "seats": [{"id": "p1", "name": "me", "bot": True}, {"id": "p2", "name": "you", "bot": False}],
        "moves": moves, "turn": len(moves) % 2, "clocks_ms": None, "clock_running": None,
        "connected": [True, True], "draw_offer": None, "rematch_offer": None, "result": None, "you": you,
        **fields,
    })  # fmt: skip


@pytest.fixture(scope="module")
def pool() -> Any:
    shared = SearchPool(1)
    yield shared
    shared.close()


def test_each_match_has_a_seed_of_its_own_that_a_seeded_bot_gives_it_again(pool: SearchPool) -> None:
    """So two matches differ in their choices between equal moves, and a seeded bot's match replays; a
    search for one ply gets one seed however often it starts."""
    spec = BotSpec.of("connect4", 6)
    seeded, again = (BotPlayer("ws://127.0.0.1:9", spec, pool, seed=7) for _ in range(2))
    assert seeded.match_seed("m1") == again.match_seed("m1") != seeded.match_seed("m2")
    assert BotPlayer("ws://127.0.0.1:9", spec, pool, seed=8).match_seed("m1") != seeded.match_seed("m1")
    unseeded = BotPlayer("ws://127.0.0.1:9", spec, pool)
    assert unseeded.match_seed("m1") != unseeded.match_seed("m1")
    assert move_seed(5, 0) == move_seed(5, 0) != move_seed(5, 1)


async def test_a_bot_ignores_what_it_cannot_read_and_plays_on(
    scripted_server: Callable[[Script], Awaitable[str]], pool: SearchPool
) -> None:
    seen: dict[str, Any] = {}
    done = asyncio.Event()

    async def script(connection: ServerConnection) -> None:
        hello = await receive(connection)
        seen["hello"] = hello
        await connection.send(welcome(hello))
        for garbage in ("not json at all", '{"type": "surprise", "confetti": 3}', "[1, 2, 3]",
                        '{"type": "moved", "match_id": "m1"}'):  # fmt: skip
            await connection.send(garbage)
        await connection.send(live_state("m1", you=0, moves=[], seq=3))
        seen["move"] = await receive(connection)
        done.set()
        await connection.wait_closed()

    url = await scripted_server(script)
    async with BotPlayer(url, BotSpec.of("tictactoe", 8), pool, backoff=Backoff(initial_s=0.05)) as bot:
        await bot.link.wait_connected()
        await asyncio.wait_for(done.wait(), 10)
        assert bot.link.connections == 1  # never dropped the connection over the garbage

    assert seen["hello"] == {"type": "hello", "name": BotSpec.of("tictactoe", 8).name, "bot": True}
    move = seen["move"]
    assert (move["type"], move["match_id"], move["ply"]) == ("move", "m1", 0)
    assert move["move"] in {"a1", "b1", "c1", "a2", "b2", "c2", "a3", "b3", "c3"}
    assert move["engine"]["depth"] >= 1 and move["engine"]["pv"][0] == move["move"]
    assert move["engine"]["source"] == "searched" and move["engine"]["time_ms"] >= 0


class BrokenThinker:
    """A search pool that never answers: the bot has to play without it."""

    async def think(self, request: ThinkRequest) -> ThinkResult:
        raise SearchError("no search today")


async def test_a_move_nothing_searched_goes_without_search_info(
    scripted_server: Callable[[Script], Awaitable[str]],
) -> None:
    seen: dict[str, Any] = {}
    done = asyncio.Event()

    async def script(connection: ServerConnection) -> None:
        hello = await receive(connection)
        await connection.send(welcome(hello))
        await connection.send(live_state("m1", you=0, moves=[], seq=3))
        seen["move"] = await receive(connection)
        done.set()
        await connection.wait_closed()

    url = await scripted_server(script)
    async with BotPlayer(url, BotSpec.of("tictactoe", 8), BrokenThinker(), backoff=Backoff(initial_s=0.05)):
        await asyncio.wait_for(done.wait(), 10)
    assert seen["move"]["move"] in {"a1", "b1", "c1", "a2", "b2", "c2", "a3", "b3", "c3"}
    assert "engine" not in seen["move"]  # a random move: no score, depth or nodes to make up


async def test_a_bot_answers_offers_by_its_stated_policy(
    scripted_server: Callable[[Script], Awaitable[str]], pool: SearchPool
) -> None:
    answers: list[dict[str, Any]] = []
    done = asyncio.Event()

    async def script(connection: ServerConnection) -> None:
        await connection.send(welcome(await receive(connection)))
        # The opponent (seat 1) offers a draw before the bot has searched: declined.
        await connection.send(live_state("m1", you=0, moves=[], seq=3, draw_offer=1, turn=0))
        answers.append(await receive(connection))
        move = await receive(connection)
        answers.append(move)
        events = [
            {"type": "moved", "match_id": "m1", "seq": 4, "ply": 0, "seat": 0, "move": move["move"],
             "think_ms": 1, "clocks_ms": None},
            {"type": "draw.offered", "match_id": "m1", "seq": 5, "seat": 1},
        ]  # fmt: skip
        for event in events:
            await connection.send(json.dumps(event))
        answers.append(await receive(connection))  # perfect play scores 0: a draw is accepted
        for event in (
            {"type": "ended", "match_id": "m1", "seq": 6, "status": "finished", "winner": None,
             "reason": "draw by agreement", "clocks_ms": None},
            {"type": "rematch.offered", "match_id": "m1", "seq": 7, "seat": 1},
        ):  # fmt: skip
            await connection.send(json.dumps(event))
        answers.append(await receive(connection))
        done.set()
        await connection.wait_closed()

    url = await scripted_server(script)
    async with BotPlayer(url, BotSpec.of("tictactoe", 8), pool, manners=Manners(rematch_window_s=5)) as bot:
        await asyncio.wait_for(done.wait(), 15)
        assert bot.results["m1"].reason == "draw by agreement"

    assert [(answer["type"], answer.get("match_id")) for answer in answers] == [
        ("draw.decline", "m1"), ("move", "m1"), ("draw.accept", "m1"), ("rematch.accept", "m1"),
    ]  # fmt: skip
    assert answers[1]["engine"]["score"] == 0


async def test_a_bot_taken_on_to_its_rematch_has_nothing_to_leave(
    scripted_server: Callable[[Script], Awaitable[str]], pool: SearchPool
) -> None:
    """The server moves both players' connections to the rematch, off the finished match: the bot sends
    no ``match.leave`` for it once its rematch window is over (it would be refused ``not_found``)."""
    heard: list[dict[str, Any]] = []
    done = asyncio.Event()
    window_s = 0.3

    async def script(connection: ServerConnection) -> None:
        await connection.send(welcome(await receive(connection)))
        await connection.send(live_state("m1", you=1, moves=["b2"], seq=3, turn=0))
        for event in (
            {"type": "ended", "match_id": "m1", "seq": 4, "status": "finished", "winner": 0,
             "reason": "resignation", "clocks_ms": None},
            {"type": "rematch.offered", "match_id": "m1", "seq": 5, "seat": 0},
        ):  # fmt: skip
            await connection.send(json.dumps(event))
        heard.append(await receive(connection))
        await connection.send(json.dumps({"type": "rematch.started", "match_id": "m1", "seq": 6,
                                           "new_match_id": "m2"}))  # fmt: skip
        await connection.send(live_state("m2", you=0, moves=["a1"], seq=0, turn=1))
        with contextlib.suppress(TimeoutError):
            heard.append(json.loads(await asyncio.wait_for(connection.recv(), 3 * window_s)))
        done.set()
        await connection.wait_closed()

    url = await scripted_server(script)
    manners = Manners(rematch_window_s=window_s)
    async with BotPlayer(url, BotSpec.of("tictactoe", 8), pool, manners=manners) as bot:
        await asyncio.wait_for(done.wait(), 15)
        assert set(bot.sessions) == {"m2"}, "the finished match's session ended with its rematch's start"
    assert [(message["type"], message.get("match_id")) for message in heard] == [("rematch.accept", "m1")]


def test_wire_structs_round_trip_through_msgspec() -> None:
    entry = wire.LobbyEntry("m", "connect4", "open", [None, None], bot=wire.BotRequest(3))
    assert msgspec.json.decode(msgspec.json.encode(entry), type=wire.LobbyEntry) == entry
    assert entry.open_seats == [0, 1]


async def test_a_bot_whose_move_answer_was_lost_plays_on_from_the_state_it_catches_up_to(
    scripted_server: Callable[[Script], Awaitable[str]], pool: SearchPool
) -> None:
    """The connection drops before the move's answer; back, the state shows that move played and the
    opponent's reply: the bot moves at the new ply, though its old resend loop has not yet given up."""
    connections: list[ServerConnection] = []
    second_move: dict[str, Any] = {}
    done = asyncio.Event()

    async def script(connection: ServerConnection) -> None:
        connections.append(connection)
        hello = await receive(connection)
        if len(connections) == 1:
            await connection.send(welcome(hello))
            await connection.send(live_state("m1", you=0, moves=[], seq=3))
            first = await receive(connection)
            assert (first["type"], first["ply"]) == ("move", 0)
            await connection.close()  # stored, but the answer never leaves
            return
        await connection.send(welcome(hello).replace('"matches": []', '"matches": ["m1"]'))
        watch = await receive(connection)
        assert watch["type"] == "match.watch"
        await connection.send(live_state("m1", you=0, moves=["b2", "a1"], seq=5, id=watch["id"]))
        while (message := await receive(connection))["type"] != "move":
            pass
        second_move.update(message)
        done.set()
        await connection.wait_closed()

    url = await scripted_server(script)
    async with BotPlayer(url, BotSpec.of("tictactoe", 8), pool, backoff=Backoff(initial_s=0.01)) as bot:
        await asyncio.wait_for(done.wait(), 10)
        assert bot.link.connections == 2

    assert (second_move["match_id"], second_move["ply"]) == ("m1", 2)
    assert second_move["move"] not in ("b2", "a1")


class Silent:
    """A link owner that hears nothing (the link never connects)."""

    async def on_welcome(self, welcome: wire.Welcome) -> None:
        raise AssertionError("welcomed by a server that is not there")

    async def on_message(self, message: wire.Incoming) -> None:
        raise AssertionError("a message from a server that is not there")


class Listening:
    """A link owner that keeps what it hears."""

    def __init__(self) -> None:
        self.messages: list[wire.Incoming] = []

    async def on_welcome(self, welcome: wire.Welcome) -> None:
        pass

    async def on_message(self, message: wire.Incoming) -> None:
        self.messages.append(message)


async def test_a_link_welcomed_then_dropped_at_once_backs_off_until_a_connection_lasts(
    scripted_server: Callable[[Script], Awaitable[str]],
) -> None:
    """A welcome alone does not start the delays over: a server that welcomes the link and drops it at once
    (over a message too large to read, say) was called again at once, eight times a second, forever."""
    backoff = Backoff(initial_s=0.01, factor=8.0, max_s=5.0, jitter=0.0, reset_after_s=0.2)
    loop = asyncio.get_running_loop()
    welcomed: list[float] = []
    dropped: list[float] = []

    async def script(connection: ServerConnection) -> None:
        await connection.send(welcome(await receive(connection)))
        welcomed.append(loop.time())
        if len(welcomed) == 4:
            await asyncio.sleep(0.3)  # this one lasts longer than reset_after_s
        dropped.append(loop.time())  # (before the close: the link may start its wait once it reads it)
        await connection.close(1009, "frame too large")

    link = Link(await scripted_server(script), "fleet-f1", Listening(), backoff=backoff)
    running = asyncio.create_task(link.run())
    try:
        async with asyncio.timeout(10):
            while len(welcomed) < 5:
                await asyncio.sleep(0.01)
    finally:
        running.cancel()
    waits = [again - gone for gone, again in zip(dropped, welcomed[1:], strict=False)]
    assert waits[0] >= 0.01 and waits[1] >= 0.08 and waits[2] >= 0.64, waits
    assert waits[3] < 2.0, f"after a lasting connection the delays start over: {waits}"
    assert link.connections == 5


async def test_a_link_reads_a_lobby_snapshot_larger_than_websockets_default_limit(
    scripted_server: Callable[[Script], Awaitable[str]],
) -> None:
    """A server bounds its snapshot (docs/protocol.md); a link still reads more than the 1 MiB a client of
    websockets reads by default, so a server with a larger lobby (or an older one) does not shut it out."""
    entry = {
        "match_id": "m", "game": "connect4", "status": "live", "time_control": "5+3",
        "seats": [{"id": "p" * 32, "name": "Al", "bot": False}, {"id": "q" * 32, "name": "Bob", "bot": True}],
        "bot": None, "host": "arena-1", "url": "ws://127.0.0.1:8765/ws",
        "created_at": "2026-03-01T12:00:00.000000+00:00", "bot_status": None,
    }  # fmt: skip
    snapshot = json.dumps(
        {"type": "lobby.snapshot", "matches": [{**entry, "match_id": f"m{n}"} for n in range(5000)]}
    )
    assert 2**20 < len(snapshot) < MAX_MESSAGE_BYTES

    async def script(connection: ServerConnection) -> None:
        await connection.send(welcome(await receive(connection)))
        await connection.send(snapshot)
        await connection.wait_closed()

    owner = Listening()
    link = Link(await scripted_server(script), "fleet-f1", owner, backoff=Backoff(initial_s=0.01))
    running = asyncio.create_task(link.run())
    try:
        async with asyncio.timeout(10):
            while not owner.messages and not link.failures:
                await asyncio.sleep(0.01)
    finally:
        running.cancel()
    assert link.failures == 0, link.last_error
    assert isinstance(owner.messages[0], wire.LobbySnapshot) and len(owner.messages[0].matches) == 5000


async def test_a_link_that_cannot_reach_its_server_says_so_as_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each lost connection is information; a server not reached after three attempts in a row is worth
    a warning, so a fleet given a wrong URL does not look idle and fine."""
    nowhere = f"ws://127.0.0.1:{free_port()}/ws"
    link = Link(nowhere, "lonely", Silent(), backoff=Backoff(initial_s=0.01, max_s=0.01))
    with caplog.at_level(logging.INFO, logger="bots.link"):
        running = asyncio.create_task(link.run())
        try:
            while link.failures < UNREACHABLE_WARNING_AFTER + 1:
                await asyncio.sleep(0.01)
        finally:
            running.cancel()
    levels = [record.levelno for record in caplog.records if record.name == "bots.link"]
    assert levels[: UNREACHABLE_WARNING_AFTER + 1] == [logging.INFO] * (UNREACHABLE_WARNING_AFTER - 1) + [
        logging.WARNING,
        logging.INFO,
    ]
    warning = next(record.getMessage() for record in caplog.records if record.levelno == logging.WARNING)
    assert "cannot reach ws://127.0.0.1:" in warning and "3 attempts in a row" in warning


async def test_a_refused_connection_is_logged_with_the_servers_reason(
    start_server: StartServer, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    """A fleet on another machine with more bots than the server lets one address connect hears why."""
    arena = await start_server(max_connections_per_address=1, uncapped_networks=())
    await connect(arena)  # the address's one connection
    link = Link(arena.ws_url, "crowded", Silent(), backoff=Backoff(initial_s=0.01, max_s=0.01))
    with caplog.at_level(logging.INFO, logger="bots.link"):
        running = asyncio.create_task(link.run())
        try:
            while not link.failures:
                await asyncio.sleep(0.01)
        finally:
            running.cancel()
    said = next(record.getMessage() for record in caplog.records if record.name == "bots.link")
    assert (
        "the server refused the connection: HTTP 429: your address holds as many connections as it may (1)"
        in said
    ), said


class RecordingSink:
    """A fleet's view of the lobby, as a broker's messages leave it."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}

    def lobby_entry(self, source: str, entry: wire.LobbyEntry, url: str) -> None:
        self.entries[entry.match_id] = url

    def lobby_gone(self, source: str, match_id: str) -> None:
        self.entries.pop(match_id, None)


async def test_a_fleet_believes_a_lobby_entry_only_from_the_topic_of_the_instance_that_hosts_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = RecordingSink()
    lobby = MqttLobby("mqtt://127.0.0.1:1883", sink, identifier="fleet-test")

    def entry(host: str, match_id: str, url: str) -> bytes:
        seats = [{"id": "p1", "name": "Alice", "bot": False}, None]
        return msgspec.json.encode({"match_id": match_id, "game": "connect4", "status": "open",
                                    "seats": seats, "host": host, "url": url})  # fmt: skip

    lobby._deliver("plyarena/v1/lobby/alpha/m1", entry("alpha", "m1", "ws://alpha/ws"))
    with caplog.at_level(logging.WARNING, logger="bots.lobby_feeds"):
        # Another instance's topic cannot clear it, or send a bot elsewhere for it.
        lobby._deliver("plyarena/v1/lobby/mallory/m1", b"")
        lobby._deliver("plyarena/v1/lobby/mallory/m1", entry("mallory", "m1", "ws://evil.example/ws"))
        lobby._deliver("plyarena/v1/lobby/mallory/m2", entry("alpha", "m2", "ws://evil.example/ws"))
        lobby._deliver("plyarena/v1/lobby/mallory/m3", entry("mallory", "m4", "ws://evil.example/ws"))
    assert sink.entries == {"m1": "ws://alpha/ws"}
    assert len(caplog.records) == 3 and all("not that instance's" in r.getMessage() for r in caplog.records)
    lobby._deliver("plyarena/v1/lobby/alpha/m1", b"")  # its own host clears it
    assert sink.entries == {}


async def test_a_bot_does_not_search_a_game_its_last_move_ended_before_the_end_arrives() -> None:
    """The move that ends a game comes before its ``ended``: the bot must not search the final position."""
    moves = ["b2", "a1", "a2", "c3", "c2"]  # the first player's middle column
    bot = BotPlayer("ws://127.0.0.1:9/ws", BotSpec.of("tictactoe", 1), pool=None)  # type: ignore[arg-type]
    session = MatchSession("m1", log="log", status="live", you=1, game="tictactoe", moves=moves,
                           position=get_game("tictactoe").replay(moves))  # fmt: skip
    assert session.our_turn
    bot._think_if_our_turn(session)
    assert session.thinking is None
