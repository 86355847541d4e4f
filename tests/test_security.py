"""Security over real sockets: no one plays for anyone else, tokens stay secret, limits hold, text is text.

Adds to tests/test_server_errors.py (every error code once, a flood, an
oversized frame) and tests/test_server_http.py (browser origins, tokens kept
out of broadcasts, API responses and the in-process log). Runs on SQLite and
PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import logging
import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from support.client import ArenaClient
from support.fixtures import Connect, StartServer
from support.fuzz_arena import api_get, stored_rows
from support.play import decisive_game, open_match, play_moves
from support.process import ServerProcess
from test_server_http import http_get
from websockets.exceptions import ConnectionClosed, InvalidMessage, InvalidStatus
from websockets.frames import CloseCode
from websockets.server import ServerProtocol

from plyarena.commands import serve
from server.addresses import AddressQuota
from server.app import Server
from server.connection import Connection
from server.storage.engine import create_engine

ACTIONS = ("resign", "draw.offer", "draw.accept", "draw.decline", "abort",
           "rematch.offer", "rematch.accept", "rematch.decline")  # fmt: skip
SQL_NAME = "Robert'); DROP TABLE players;--"
SQL_CHAT = "'; DELETE FROM moves WHERE '1'='1'; SELECT * FROM players --"


@pytest.fixture
async def database(arena_db_url: str) -> AsyncIterator[AsyncEngine]:
    """The test's own connection to the server's database, to see what is stored."""
    engine = create_engine(arena_db_url)
    yield engine
    await engine.dispose()


async def signed_in(server: Server | str, connect: Connect, name: str) -> ArenaClient:
    client = await connect.player(server, name)
    return client


async def refused(client: ArenaClient, kind: str, **fields: Any) -> str:
    """Send a request that must be refused; its error code."""
    reply = await client.request(kind, **fields)
    assert reply["type"] == "error", (kind, fields, reply)
    return str(reply["code"])


# --------------------------------------------------------------------------- seats and identity


async def test_a_seat_answers_only_to_its_player_from_any_of_their_connections(
    arena: Server, connect: Connect, database: AsyncEngine
) -> None:
    alice, bob = await signed_in(arena, connect, "Alice"), await signed_in(arena, connect, "Bob")
    mallory = await signed_in(arena, connect, "Mallory")
    match_id = (await open_match(alice, bob, "connect4"))["match_id"]
    await play_moves("connect4", (alice, bob), match_id, ["4", "4"])
    watcher = await signed_in(arena, connect, "Sam")
    await watcher.request("match.watch", match_id=match_id)
    before = await stored_rows(database, [alice.player_id, bob.player_id])

    # Alice is to move. Nobody else can move, resign, offer, abort or chat for her seat:
    # not an outsider, not a spectator, not her opponent.
    for intruder in (mallory, watcher):
        assert await refused(intruder, "move", match_id=match_id, ply=2, move="3") == "not_a_player"
        assert await refused(intruder, "chat", match_id=match_id, text="gg") == "not_a_player"
        for action in ACTIONS:
            assert await refused(intruder, action, match_id=match_id) == "not_a_player", action
        assert await refused(intruder, "match.join", match_id=match_id, seat=0) == "seat_taken"
    assert await refused(bob, "move", match_id=match_id, ply=2, move="3") == "not_your_turn"
    # No field says who is acting: a request naming a player or a seat is refused as malformed.
    for claim in ({"player_id": alice.player_id}, {"seat": 0}, {"token": alice.token}):
        assert await refused(mallory, "move", match_id=match_id, ply=2, move="3", **claim) == "bad_field"
    # Taking Bob's token on an established connection does not make Mallory Bob.
    assert await refused(mallory, "hello", token=bob.token) == "not_allowed"
    assert await refused(mallory, "resign", match_id=match_id) == "not_a_player"
    assert await stored_rows(database, [alice.player_id, bob.player_id]) == before

    # The seat is Alice's, not her connection's: her second connection may move for her.
    alice_again = await connect.player(arena, token=alice.token)
    moved = await alice_again.request("move", match_id=match_id, ply=2, move="3")
    assert (moved["type"], moved["seat"]) == ("moved", 0)


async def test_forged_stale_and_mangled_tokens_are_refused(
    start_server: StartServer, connect: Connect, tmp_path: Path
) -> None:
    arena = await start_server()
    alice = await signed_in(arena, connect, "Alice")
    elsewhere = await start_server(db_url=f"sqlite+aiosqlite:///{tmp_path / 'elsewhere.sqlite3'}")
    stranger_there = await signed_in(elsewhere, connect, "Stranger")
    assert alice.token is not None and stranger_there.token is not None
    token = alice.token
    refused_tokens = {
        "forged": secrets.token_urlsafe(32),
        "stale (from another server's database)": stranger_there.token,
        "the stored hash": hashlib.sha256(token.encode()).hexdigest(),
        "one letter off": token[:-1] + ("A" if token[-1] != "A" else "B"),
        "case changed": token.swapcase(),
        "truncated": token[:20],
        "padded inside": token[:10] + " " + token[10:],
    }
    newcomer = await connect(arena)
    for what, wrong in refused_tokens.items():
        reply = await newcomer.request("hello", token=wrong, name="Alice")
        assert (reply["type"], reply.get("code")) == ("error", "bad_token"), what
        assert wrong not in reply["message"], "an error never repeats a token"
    for malformed in ("", "x" * 129):
        assert await refused(newcomer, "hello", token=malformed) == "bad_field"
    # After all that, the connection is still nobody, and the real token still works.
    assert await refused(newcomer, "match.create", game="tictactoe") == "hello_required"
    welcome = await newcomer.hello(token=token)
    assert welcome["player"]["id"] == alice.player_id


async def test_tokens_are_stored_only_as_their_sha256(
    arena: Server, connect: Connect, database: AsyncEngine, arena_db_url: str
) -> None:
    alice, bob = await signed_in(arena, connect, "Alice"), await signed_in(arena, connect, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await play_moves("tictactoe", (alice, bob), match_id, list(decisive_game("tictactoe")))
    tokens = {alice.player_id: alice.token, bob.player_id: bob.token}
    async with database.connect() as connection:
        for player_id, token in tokens.items():
            assert token is not None
            stored = await connection.scalar(
                text("SELECT token_hash FROM players WHERE id = :id"), {"id": player_id}
            )
            assert stored == hashlib.sha256(token.encode()).hexdigest()
        for table in ("players", "matches", "seats", "moves"):
            for row in await connection.execute(text(f"SELECT * FROM {table}")):
                assert not [token for token in tokens.values() if token and token in str(tuple(row))], table
    if arena_db_url.startswith("sqlite"):
        await arena.store.close()  # every write on disk
        path = Path(arena_db_url.split("///", 1)[1])
        files = [file for file in path.parent.iterdir() if file.name.startswith(path.name)]
        for file in files:
            content = file.read_bytes()
            assert not [token for token in tokens.values() if token and token.encode() in content], file


async def test_a_real_server_process_logs_no_token(
    arena_db_url: str, connect: Connect, tmp_path: Path
) -> None:
    server = ServerProcess(arena_db_url, f"security-{secrets.token_hex(3)}", tmp_path)
    await server.start()
    try:
        alice = await signed_in(server.ws_url, connect, "Alice")
        bob = await signed_in(server.ws_url, connect, "Bob")
        match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
        await alice.close()  # a dropped player: logged as a presence change
        alice_again = await connect.player(server.ws_url, token=alice.token)
        await alice_again.request("match.watch", match_id=match_id)
        near_miss = (alice.token or "")[:-2] + "zz"
        assert await refused(await connect(server.ws_url), "hello", token=near_miss) == "bad_token"
        await alice_again.request("resign", match_id=match_id)
    finally:
        await server.stop()
    log = "".join(server.output)
    assert "Ply Arena is serving" in log
    for secret in (alice.token, bob.token, near_miss):
        assert secret and secret not in log


async def test_the_event_bus_carries_no_token(arena: Server, connect: Connect) -> None:
    """Lobby entries and match events go to every bus subscriber (other instances, fleets): no token."""
    async with arena.bus.subscribe("plyarena/v1/#") as messages:
        alice, bob = await signed_in(arena, connect, "Alice"), await signed_in(arena, connect, "Bob")
        match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
        await alice.request("chat", match_id=match_id, text="hello")
        await play_moves("tictactoe", (alice, bob), match_id, list(decisive_game("tictactoe")))
        payloads = []
        while True:
            try:
                payloads.append(await asyncio.wait_for(anext(messages), 0.5))
            except TimeoutError:
                break
    assert any(match_id in topic for topic, _ in payloads), "the bus saw the match"
    for topic, payload in payloads:
        for token in (alice.token, bob.token):
            assert token and token.encode() not in payload and token not in topic


# --------------------------------------------------------------------------- limits


async def test_rate_and_frame_limits_are_per_connection_and_configurable(
    start_server: StartServer, connect: Connect
) -> None:
    arena = await start_server(rate_per_s=1.0, rate_burst=5, max_message_bytes=512)
    flooder = await signed_in(arena, connect, "Flood")
    for index in range(8):
        await flooder.send({"type": "lobby.subscribe", "id": index})
    answers = [(await flooder.expect(id=index)).get("code", "served") for index in range(8)]
    served = answers.count("served")
    assert served in (4, 5), answers  # the hello took one of the 5; one more may have refilled meanwhile
    assert answers == ["served"] * served + ["rate_limited"] * (8 - served)
    # The same player on another connection, and everyone else, have buckets of their own.
    flooder_again = await connect.player(arena, token=flooder.token)
    assert (await flooder_again.request("lobby.subscribe"))["type"] == "lobby.snapshot"
    bystander = await signed_in(arena, connect, "Bystander")
    assert (await bystander.request("lobby.subscribe"))["type"] == "lobby.snapshot"

    await bystander.send('{"type": "lobby.subscribe", "id": 1, "pad": "' + "x" * 480 + '"}')
    assert (await bystander.expect(id=1))["code"] == "frame_too_large"  # 525 bytes: over 512
    await bystander.send('{"type": "lobby.subscribe", "id": 2, "x": "' + "x" * 450 + '"}')
    assert (await bystander.expect(id=2))["code"] == "bad_field"  # 491 bytes: read, and refused for "x"


def test_a_client_that_stops_reading_is_dropped_once_and_said_once(caplog: pytest.LogCaptureFixture) -> None:
    """Messages for it until the connection is gone go nowhere, and do not each log the drop again."""

    class Transport:
        closing = False
        aborts = 0

        def get_write_buffer_size(self) -> int:
            return 5_000

        def is_closing(self) -> bool:
            return self.closing

        def abort(self) -> None:
            self.closing, self.aborts = True, self.aborts + 1

        def get_extra_info(self, name: str) -> object:
            return ("203.0.113.5", 4000) if name == "peername" else None

    transport = Transport()
    settings = SimpleNamespace(max_size=2**16, logger=None, rate_per_s=20, rate_burst=40, max_buffer=4_096)
    slow = Connection(settings)  # type: ignore[arg-type]
    slow.transport = transport  # type: ignore[assignment]
    with caplog.at_level(logging.WARNING, logger="server.connection"):
        for _ in range(10):
            slow.push(b'{"type":"chat"}')
    assert transport.aborts == 1
    assert [record.getMessage() for record in caplog.records] == [
        "closing ('203.0.113.5', 4000): more than 4096 bytes unread"
    ]


async def test_binary_frames_are_refused_unread_and_count_against_the_rate_limit(
    start_server: StartServer, connect: Connect
) -> None:
    arena = await start_server(rate_per_s=1.0, rate_burst=8)
    stranger = await connect(arena)
    await stranger.send(b'{"type": "hello", "id": "b1", "name": "Binary"}')
    error = await stranger.expect(id="b1")
    assert (error["type"], error["code"]) == ("error", "binary_frame") and error["message"], error
    # The binary hello was not read: the connection is still nobody, and open.
    assert await refused(stranger, "match.create", game="tictactoe") == "hello_required"
    # A binary message in fragments, then a text one: each is told apart, in order.
    await stranger.websocket.send([b'{"type": "hello", ', b'"id": "b2", ', b'"name": "Binary"}'])
    await stranger.send('{"type": "match.create", "id": "t2", "game": "tictactoe"}')
    assert (await stranger.expect(id="b2"))["code"] == "binary_frame"
    assert (await stranger.expect(id="t2"))["code"] == "hello_required"
    await stranger.hello("Binary")  # 5 of the burst of 8 are spent
    for index in range(6):
        await stranger.send(f'{{"type": "lobby.subscribe", "id": "f{index}"}}'.encode())
    codes = [(await stranger.expect(id=f"f{index}"))["code"] for index in range(6)]
    refused_binary = codes.count("binary_frame")
    assert refused_binary in (3, 4), codes  # the last 3 of the burst, and one more if a second passed
    assert codes == ["binary_frame"] * refused_binary + ["rate_limited"] * (6 - refused_binary), codes
    assert not [message for message in stranger.take_unread() if message["type"] == "lobby.snapshot"]


# --------------------------------------------------------------------------- per address


def behind_proxy(client: str) -> dict[str, Any]:
    """Connection options for a client that a trusted proxy on this host says is ``client``."""
    return {"additional_headers": {"X-Forwarded-For": f"198.51.100.200, {client}"}}


async def test_one_address_holds_only_so_many_connections(
    start_server: StartServer, connect: Connect
) -> None:
    arena = await start_server(
        max_connections_per_address=3, uncapped_networks=(), trusted_proxies=("127.0.0.1",)
    )
    held = [await connect(arena, **behind_proxy("203.0.113.5")) for _ in range(3)]
    with pytest.raises(InvalidStatus) as over:
        await connect(arena, **behind_proxy("203.0.113.5"))
    assert over.value.response.status_code == 429
    error = json.loads(over.value.response.body)["error"]
    assert error["code"] == "rate_limited" and "as many connections as it may (3)" in error["message"], error
    # Another client behind the same proxy has its own allowance; one that closes a connection gets it back.
    assert (await (await connect(arena, **behind_proxy("203.0.113.6"))).hello("Neighbour"))[
        "type"
    ] == "welcome"
    await held.pop().close()
    for _ in range(100):  # (the server counts the close once its handler has seen it)
        if arena.quota.connections.held.get("203.0.113.5") == 2:
            break
        await asyncio.sleep(0.01)
    assert (await (await connect(arena, **behind_proxy("203.0.113.5"))).hello("Back"))["type"] == "welcome"
    assert "plyarena_connections_refused_total 1" in arena.metrics.render(None)


async def test_the_handshake_headers_are_let_go_once_the_client_address_is_read(
    start_server: StartServer, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection keeps no headers of its opening handshake (a quarter of the objects it held), and the
    address read from them before still counts."""
    arena = await start_server(uncapped_networks=(), trusted_proxies=("127.0.0.1",))
    listener = arena._listener
    assert listener is not None
    kept: list[Any] = []  # (the handshake's request and response, as the connection saw them)
    opened, send_response = listener.opened, ServerProtocol.send_response

    def opened_keeping(connection: Connection, request: Any) -> bool:
        kept.append(request)
        return opened(connection, request)

    def send_keeping(protocol: ServerProtocol, response: Any) -> None:
        kept.append(response)
        send_response(protocol, response)

    monkeypatch.setattr(listener, "opened", opened_keeping)
    monkeypatch.setattr(ServerProtocol, "send_response", send_keeping)
    client = await connect(arena, **behind_proxy("203.0.113.7"))
    assert (await client.hello("Headless"))["type"] == "welcome"
    assert arena.quota.connections.held == {"203.0.113.7": 1}
    response, request = kept
    assert (response.status_code, dict(request.headers), dict(response.headers)) == (101, {}, {})


async def test_handshakes_at_once_cannot_pass_the_cap_together(
    start_server: StartServer, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    arena = await start_server(max_connections_per_address=3, uncapped_networks=())
    arena.quota.openings.cap = 0  # (twelve handshakes at once: this test is about the connections)
    # As if all twelve were checked before any of them was counted: the count itself must hold the line.
    monkeypatch.setattr(AddressQuota, "may_connect", lambda quota, address: True)
    clients = await asyncio.gather(*(connect(arena) for _ in range(12)))
    welcomed = 0
    for index, client in enumerate(clients):
        with contextlib.suppress(ConnectionClosed):
            welcomed += (await client.request("hello", name=f"Racer {index}"))["type"] == "welcome"
    closed = [client.websocket.close_code for client in clients if client.websocket.close_code is not None]
    assert welcomed == 3 and closed == [CloseCode.TRY_AGAIN_LATER] * 9, (welcomed, closed)
    assert arena.quota.connections.held == {"127.0.0.1": 3}


async def test_sockets_that_send_no_request_count_against_their_address(
    start_server: StartServer, connect: Connect
) -> None:
    arena = await start_server(max_connections_per_address=3, uncapped_networks=())
    silent = [await asyncio.open_connection("127.0.0.1", arena.port) for _ in range(3)]
    await until(lambda: arena.quota.openings.held == {"127.0.0.1": 3})
    # A fourth socket is dropped as soon as it is accepted, before it can send anything.
    reader, writer = await asyncio.open_connection("127.0.0.1", arena.port)
    assert await reader.read() == b""
    writer.close()
    with pytest.raises(InvalidMessage):  # (no HTTP response: the socket closed first)
        await connect(arena)
    # One that sends its request stops counting as a handshake under way, and one that closes gives its
    # place back: a client opens again.
    _, slow_writer = silent.pop()
    slow_writer.write(b"GET /healthz HTTP/1.1\r\nHost: arena\r\nConnection: close\r\n\r\n")
    _, closing_writer = silent.pop()
    closing_writer.close()
    await until(lambda: arena.quota.openings.held == {"127.0.0.1": 1})
    assert (await (await connect(arena)).hello("Patient"))["type"] == "welcome"
    assert "plyarena_connections_refused_total 2" in arena.metrics.render(None)
    for _, writer in silent:
        writer.close()
    await until(lambda: arena.quota.openings.held == {})
    slow_writer.close()


async def test_a_trusted_proxys_sockets_are_told_apart_only_by_their_requests(
    start_server: StartServer, connect: Connect
) -> None:
    arena = await start_server(
        max_connections_per_address=3, uncapped_networks=(), trusted_proxies=("127.0.0.1",)
    )
    silent = [await asyncio.open_connection("127.0.0.1", arena.port) for _ in range(5)]
    assert (await (await connect(arena, **behind_proxy("203.0.113.7"))).hello("Proxied"))["type"] == "welcome"
    assert arena.quota.openings.held == {}
    for _, writer in silent:
        writer.close()


async def until(condition: Callable[[], bool]) -> None:
    """Wait for the server's event loop to get to what ``condition`` checks (shared with it, in process)."""
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.01)
    assert condition()


async def test_one_address_makes_new_players_only_so_fast(
    start_server: StartServer, connect: Connect
) -> None:
    arena = await start_server(new_players_burst=2, uncapped_networks=())
    first = await connect.player(arena, "First")
    await connect.player(arena, "Second")
    third = await connect(arena)
    reply = await third.request("hello", name="Third")
    assert reply["code"] == "rate_limited" and "token" in reply["message"], reply
    # Returning players are not new: the address may bring back as many as it made.
    assert (await third.hello(token=first.token))["player"]["name"] == "First"
    local = await start_server(new_players_burst=2)  # this host is uncapped by default
    for index in range(5):
        await connect.player(local, f"Local {index}")


async def test_metrics_are_for_the_operators_network(start_server: StartServer) -> None:
    private = await start_server(trusted_proxies=("127.0.0.1",))
    assert (await http_get(private, "/metrics"))[0] == 200
    assert (await http_get(private, "/metrics", {"X-Forwarded-For": "10.1.2.3"}))[0] == 200
    status, _, body = await http_get(private, "/metrics", {"X-Forwarded-For": "203.0.113.5"})
    assert status == 403 and json.loads(body)["error"]["code"] == "not_allowed"
    elsewhere = await start_server(metrics_networks=("192.0.2.0/24",))
    assert (await http_get(elsewhere, "/metrics"))[0] == 403
    assert (await http_get(elsewhere, "/healthz"))[0] == 200  # health is for load balancers: open


async def test_one_address_reads_the_api_only_so_fast(start_server: StartServer) -> None:
    """Each API request (and each health check) may read the database; pages and the browser client's
    files are not counted."""
    arena = await start_server(api_rate_per_s=0.01, api_burst=4, trusted_proxies=("127.0.0.1",))
    client = {"X-Forwarded-For": "203.0.113.5"}
    paths = ("/api/games", "/api/matches", "/api//matches/nothing", "/healthz")
    assert [(await http_get(arena, path, client))[0] for path in paths] == [200, 200, 404, 200]
    for path in ("/api/games", "/healthz"):
        status, _, body = await http_get(arena, path, client)
        assert status == 429 and json.loads(body)["error"]["code"] == "rate_limited", body
    assert (await http_get(arena, "/", client))[0] == 200
    assert (await http_get(arena, "/api/games", {"X-Forwarded-For": "203.0.113.6"}))[0] == 200
    assert all([(await http_get(arena, "/api/games"))[0] == 200 for _ in range(5)])  # this host: uncapped


def test_address_options_come_from_the_command_line() -> None:
    parser = argparse.ArgumentParser()
    serve.configure(parser)
    config = serve.config_from(
        parser.parse_args(
            ["--max-connections-per-address", "0", "--uncapped-network", "10.0.0.0/8",
             "--uncapped-network", "2001:db8::/32", "--trusted-proxy", "127.0.0.1", "--metrics-from", "::1"]
        )
    )  # fmt: skip
    assert config.max_connections_per_address == 0
    # Naming networks never locks this host out: its loopback stays uncapped, and may read the metrics.
    assert config.uncapped_networks == ("127.0.0.0/8", "::1/128", "10.0.0.0/8", "2001:db8::/32")
    assert config.trusted_proxies == ("127.0.0.1",)
    assert config.metrics_networks == ("127.0.0.0/8", "::1/128", "::1")
    defaults = serve.config_from(parser.parse_args([]))
    assert defaults.uncapped_networks == ("127.0.0.0/8", "::1/128") and defaults.trusted_proxies == ()
    with pytest.raises(SystemExit):
        parser.parse_args(["--trusted-proxy", "10.0.0.x"])


# --------------------------------------------------------------------------- text


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("N" * 32, "N" * 32),
        ("  Alice  ", "Alice"),
        ("Zoë 🎲 中文", "Zoë 🎲 中文"),
        (SQL_NAME, SQL_NAME),
        ("E\u0301lodie", "\u00c9lodie"),  # one spelling: NFC, so it looks and compares the same
        (" " + "N" * 32 + " ", "N" * 32),  # the limit counts what is left after stripping ...
        ("e\u0301" * 32, "\u00e9" * 32),  # ... and after normalising: 64 code points sent, 32 kept
        ("\u05d3\u05e0\u05d4 Dana", "\u05d3\u05e0\u05d4 Dana"),  # right-to-left letters are letters
    ],
)
async def test_names_are_stripped_and_kept_as_given(
    arena: Server, connect: Connect, database: AsyncEngine, name: str, shown: str
) -> None:
    client = await connect(arena)
    welcome = await client.hello(name)
    assert welcome["player"]["name"] == shown
    async with database.connect() as connection:
        stored = await connection.scalar(
            text("SELECT name FROM players WHERE id = :id"), {"id": welcome["player"]["id"]}
        )
    assert stored == shown


@pytest.mark.parametrize(
    "name", ["N" * 33, "a\x00b", "line\nbreak", "a\u2028b", "a\x85b", "tab\there", "\x1b[31mred"]
)
async def test_names_too_long_or_with_control_characters_are_refused(
    arena: Server, connect: Connect, name: str
) -> None:
    client = await connect(arena)
    assert await refused(client, "hello", name=name) == "bad_field"


@pytest.mark.parametrize(
    ("name", "culprit"),
    [
        ("Alice\u202eecilA", "U+202E"),  # right-to-left override: what follows shows reversed
        ("\u2067Bob", "U+2067"),  # right-to-left isolate
        ("Mallory\u202c", "U+202C"),  # pop directional formatting
        ("Al\u200bice", "U+200B"),  # zero-width space: a second "Alice" that is not Alice
        ("Ali\u200dce", "U+200D"),  # zero-width joiner
        ("\u200eAlice", "U+200E"),  # left-to-right mark
        ("Alice\u200f", "U+200F"),  # right-to-left mark
        ("A\u061clice", "U+061C"),  # Arabic letter mark
        ("Ali\u2060ce", "U+2060"),  # word joiner
        ("\ufeffAlice", "U+FEFF"),  # byte order mark
        ("\u200b", "U+200B"),  # a name that shows nothing at all
        ("\u3164", "U+3164"),  # a Hangul filler: a "letter" that shows nothing
        ("tag\U000e0041", "U+E0041"),  # a tag character (format)
        ("private\ue000", "U+E000"),  # private use: shows as whatever a font makes of it
        ("unassigned\u0378", "U+0378"),  # no character at all (yet)
    ],
)
async def test_names_with_invisible_or_direction_changing_characters_are_refused(
    arena: Server, connect: Connect, database: AsyncEngine, name: str, culprit: str
) -> None:
    client = await connect(arena)
    players = await _player_count(database)
    reply = await client.request("hello", name=name)
    assert (reply["type"], reply["code"]) == ("error", "bad_field"), reply
    assert culprit in reply["message"], "the error names the character, so the player can find it"
    assert await _player_count(database) == players, "a refused name stores no player"
    assert (await client.hello("Alice"))["player"]["name"] == "Alice", "the connection stays usable"


async def _player_count(database: AsyncEngine) -> int:
    async with database.connect() as connection:
        return int(await connection.scalar(text("SELECT count(*) FROM players")) or 0)


async def test_chat_is_validated_capped_and_echoed_verbatim(
    arena: Server, connect: Connect, database: AsyncEngine
) -> None:
    alice, bob = await signed_in(arena, connect, SQL_NAME), await signed_in(arena, connect, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    for line in ("c" * 201, "two\nlines", "bell\x07", "nul\x00", "  ", "a\u2029b"):
        assert await refused(alice, "chat", match_id=match_id, text=line) == "bad_field", repr(line)
    # Bidi embeddings, overrides and isolates turn the direction of everything after them: refused,
    # terminated or not. So is a line of nothing but invisible characters.
    for line in (
        "gg\u202e",
        "\u202dgg",
        "\u202agg\u202c",
        "\u2066gg\u2069",
        "gg\u2067",
        "\u2068",
        "\u200b\ufeff",
    ):
        error = await alice.request("chat", match_id=match_id, text=line)
        assert (error["type"], error["code"]) == ("error", "bad_field"), (repr(line), error)
    # The format characters of real writing stay, as sent: an emoji family (zero-width joiners), Persian
    # (a zero-width non-joiner), Hebrew after a right-to-left mark.
    writing = (
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0645",
        "\u200f\u05e9\u05dc\u05d5\u05dd",
    )
    for line, shown in (
        ("c" * 200, "c" * 200),
        ("  " + "c" * 200 + "  ", "c" * 200),  # the limit counts what is left after stripping
        ("  padded  ", "padded"),
        (SQL_CHAT, SQL_CHAT),
        *((kept, kept) for kept in writing),
    ):
        said = await alice.request("chat", match_id=match_id, text=line)
        heard = await bob.expect(type_="chat", seq=said["seq"])
        assert said["text"] == heard["text"] == shown
        assert heard["name"] == SQL_NAME
    async with database.connect() as connection:
        assert await connection.scalar(text("SELECT count(*) FROM players")) >= 2  # the table is there


async def test_sql_looking_ids_and_queries_find_nothing_and_break_nothing(
    arena: Server, connect: Connect
) -> None:
    alice = await signed_in(arena, connect, SQL_NAME)
    assert (await alice.request("match.create", game="tictactoe"))["type"] == "match.state"
    for match_id in ("' OR '1'='1", "x'; DROP TABLE matches; --", "%", "_"):
        assert await refused(alice, "match.watch", match_id=match_id) == "not_found"
        assert await refused(alice, "match.join", match_id=match_id) == "not_found"
    assert await refused(alice, "match.create", game="tictactoe' OR '1'='1") == "not_found"
    for query in ("player=%27%20OR%20%271%27=%271", "before=%27%20OR%201=1--", "player=%25"):
        status, body = await api_get(arena.http_url, f"/api/matches?{query}")
        assert (status, body["matches"]) == (200, []), query
    status, body = await api_get(arena.http_url, "/api/matches/%27%20OR%20%271%27=%271")
    assert (status, body["error"]["code"]) == (404, "not_found")
    status, body = await api_get(arena.http_url, f"/api/matches?player={alice.player_id}")
    assert [match["seats"][0]["player"]["name"] for match in body["matches"]] == [SQL_NAME]


# --------------------------------------------------------------------------- browser origins


async def test_allowed_origins_come_from_the_command_line(
    start_server: StartServer, connect: Connect
) -> None:
    parser = argparse.ArgumentParser()
    serve.configure(parser)
    args = parser.parse_args(
        ["--allow-origin", "https://play.example/", "--allow-origin", "https://b.example"]
    )
    config = serve.config_from(args)
    assert config.allowed_origins == ("https://play.example/", "https://b.example")
    assert serve.config_from(parser.parse_args([])).allowed_origins is None  # this server's own URL

    server = await start_server(allowed_origins=config.allowed_origins)
    for origin in ("https://play.example", "https://b.example"):  # a trailing slash in the option is fine
        assert (await (await connect(server, origin=origin)).hello("Browser"))["type"] == "welcome"
    with pytest.raises(InvalidStatus) as refused_origin:
        await connect(server, origin="https://play.example.evil.test")
    assert refused_origin.value.response.status_code == 403

    anyone = await start_server(allowed_origins=("*",))
    assert (await (await connect(anyone, origin="https://anywhere.test")).hello("Any"))["type"] == "welcome"
