"""Every error code, provoked over a real socket: answered with its code and the request's id, and
nothing stored changes. Runs on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine
from support.client import ArenaClient
from support.fixtures import Connect
from support.play import open_match, play_moves

from server.app import Server
from server.errors import ErrorCode
from server.match import Match
from server.storage.engine import create_engine

TABLES = ("players", "matches", "seats", "moves")


@dataclass
class Scene:
    """A server with a live match ``live`` (Alice vs Bob, two moves in), an open match ``waiting``
    (Dave's), a finished match ``over``, and Carol, who holds no seat anywhere."""

    server: Server
    alice: ArenaClient
    bob: ArenaClient
    carol: ArenaClient
    dave: ArenaClient
    live: str
    waiting: str
    over: str
    database: AsyncEngine
    """The test's own connection to the server's database, to see what is stored."""

    async def snapshot(self) -> dict[str, Any]:
        """Row counts of every table, and the stored matches of the scene in full."""
        async with self.database.connect() as connection:
            counts = {
                table: await connection.scalar(text(f"SELECT count(*) FROM {table}")) for table in TABLES
            }
        records = {
            match_id: await self.server.store.get_match(match_id)
            for match_id in (self.live, self.waiting, self.over)
        }
        return {"counts": counts, "records": records}


@pytest.fixture
async def scene(arena: Server, connect: Connect, arena_db_url: str) -> AsyncIterator[Scene]:
    clients = []
    for name in ("Alice", "Bob", "Carol", "Dave"):
        client = await connect.player(arena, name)
        clients.append(client)
    alice, bob, carol, dave = clients
    live = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await play_moves("tictactoe", (alice, bob), live, ["a1", "b2"])
    waiting = (await dave.request("match.create", game="tictactoe", time_control="5+0", seat=0))["match_id"]
    over = (await open_match(carol, dave, "tictactoe"))["match_id"]
    await carol.request("resign", match_id=over)
    # Carol's seat in the finished match does not matter below: she acts only in the live one.
    database = create_engine(arena_db_url)
    try:
        yield Scene(arena, alice, bob, carol, dave, live, waiting, over, database)
    finally:
        await database.dispose()


async def assert_refused(
    scene: Scene, client: ArenaClient, request: dict[str, Any] | str | bytes, code: ErrorCode
) -> dict[str, Any]:
    """Send ``request``; expect exactly one ``error`` with ``code`` echoing its id, and no stored change."""
    before = await scene.snapshot()
    request_id = request.get("id") if isinstance(request, dict) else None
    await client.send(request)
    error = await client.expect(type_="error")
    assert error["code"] == code, (request, error)
    assert error["id"] == request_id, (request, error)
    assert error["message"], "every error says what was wrong"
    assert await scene.snapshot() == before, f"{code} changed stored data"
    return error


async def test_every_error_code_is_answered_with_its_code_and_request_id(
    scene: Scene, connect: Connect
) -> None:
    alice, bob, carol, dave = scene.alice, scene.bob, scene.carol, scene.dave
    live, waiting, over = scene.live, scene.waiting, scene.over
    await alice.settle(0.1)

    await assert_refused(scene, alice, "{not json", ErrorCode.BAD_JSON)
    resign = json.dumps({"type": "resign", "match_id": live}).encode()
    await assert_refused(scene, alice, resign, ErrorCode.BINARY_FRAME)  # bytes go in a binary frame
    await assert_refused(scene, alice, "[1, 2]", ErrorCode.BAD_JSON)
    # (json.dumps writes the lone surrogate as the escape "\ud800": JSON, but no Unicode string)
    lone = {"type": "move", "id": 7, "match_id": live, "ply": 2, "move": "\ud800"}
    error = await assert_refused(scene, alice, lone, ErrorCode.BAD_JSON)
    assert "lone surrogate escape" in error["message"]
    await assert_refused(scene, alice, {"type": "teleport", "id": "u1"}, ErrorCode.UNKNOWN_TYPE)
    await assert_refused(
        scene,
        alice,
        {"type": "move", "id": "f1", "match_id": live, "ply": "two", "move": "c3"},
        ErrorCode.BAD_FIELD,
    )
    await assert_refused(
        scene, alice, {"type": "resign", "id": "f2", "match_id": live, "please": 1}, ErrorCode.BAD_FIELD
    )
    await assert_refused(
        scene,
        alice,
        {"type": "match.create", "id": "f3", "game": "tictactoe", "time_control": "9"},
        ErrorCode.BAD_FIELD,
    )
    await assert_refused(
        scene, alice, {"type": "chat", "id": "f4", "match_id": live, "text": "ring\x07"}, ErrorCode.BAD_FIELD
    )

    stranger = await connect(scene.server)
    await assert_refused(
        scene, stranger, {"type": "chat", "id": "h1", "match_id": "m", "text": "hi"}, ErrorCode.HELLO_REQUIRED
    )
    await assert_refused(scene, stranger, {"type": "hello", "id": "h2", "name": "  "}, ErrorCode.BAD_FIELD)
    await assert_refused(scene, stranger, {"type": "hello", "id": "h3"}, ErrorCode.BAD_FIELD)
    await assert_refused(
        scene, stranger, {"type": "hello", "id": "t1", "token": "forged-token"}, ErrorCode.BAD_TOKEN
    )
    await assert_refused(scene, alice, {"type": "hello", "id": "t2", "name": "Again"}, ErrorCode.NOT_ALLOWED)

    await assert_refused(
        scene, alice, {"type": "match.watch", "id": "n1", "match_id": "no-such-match"}, ErrorCode.NOT_FOUND
    )
    await assert_refused(
        scene, alice, {"type": "match.create", "id": "n2", "game": "go"}, ErrorCode.NOT_FOUND
    )
    await assert_refused(
        scene, alice, {"type": "match.leave", "id": "n3", "match_id": waiting}, ErrorCode.NOT_FOUND
    )

    await assert_refused(
        scene, carol, {"type": "match.join", "id": "s1", "match_id": live}, ErrorCode.SEAT_TAKEN
    )
    await assert_refused(
        scene, alice, {"type": "match.join", "id": "s2", "match_id": waiting, "seat": 0}, ErrorCode.SEAT_TAKEN
    )
    await assert_refused(
        scene,
        carol,
        {"type": "move", "id": "p1", "match_id": live, "ply": 2, "move": "c3"},
        ErrorCode.NOT_A_PLAYER,
    )
    await assert_refused(
        scene, carol, {"type": "chat", "id": "p2", "match_id": live, "text": "psst"}, ErrorCode.NOT_A_PLAYER
    )
    await assert_refused(
        scene,
        dave,
        {"type": "move", "id": "o1", "match_id": waiting, "ply": 0, "move": "a1"},
        ErrorCode.NOT_STARTED,
    )
    await assert_refused(
        scene,
        bob,
        {"type": "move", "id": "m1", "match_id": live, "ply": 2, "move": "c3"},
        ErrorCode.NOT_YOUR_TURN,
    )
    await assert_refused(
        scene,
        alice,
        {"type": "move", "id": "m2", "match_id": live, "ply": 1, "move": "c3"},
        ErrorCode.STALE_PLY,
    )
    await assert_refused(
        scene,
        alice,
        {"type": "move", "id": "m3", "match_id": live, "ply": 3, "move": "c3"},
        ErrorCode.STALE_PLY,
    )
    illegal = await assert_refused(
        scene,
        alice,
        {"type": "move", "id": "m4", "match_id": live, "ply": 2, "move": "b2"},
        ErrorCode.ILLEGAL_MOVE,
    )
    assert "b2 is taken" in illegal["message"], "the reason comes from the rules"
    await assert_refused(
        scene,
        alice,
        {"type": "move", "id": "m5", "match_id": live, "ply": 2, "move": "z9"},
        ErrorCode.ILLEGAL_MOVE,
    )
    await assert_refused(
        scene,
        dave,
        {"type": "move", "id": "e1", "match_id": over, "ply": 0, "move": "a1"},
        ErrorCode.MATCH_OVER,
    )
    await assert_refused(
        scene, carol, {"type": "match.join", "id": "e2", "match_id": over}, ErrorCode.MATCH_OVER
    )
    await assert_refused(scene, alice, {"type": "abort", "id": "a1", "match_id": live}, ErrorCode.NOT_ALLOWED)
    await assert_refused(
        scene, alice, {"type": "draw.accept", "id": "a2", "match_id": live}, ErrorCode.NOT_ALLOWED
    )
    await assert_refused(
        scene, alice, {"type": "rematch.accept", "id": "a3", "match_id": live}, ErrorCode.NOT_ALLOWED
    )
    await assert_refused(
        scene,
        alice,
        {"type": "chat", "id": "big", "match_id": live, "text": "x" * 5000},
        ErrorCode.FRAME_TOO_LARGE,
    )

    # After all that, the match plays on as if nothing happened.
    await play_moves("tictactoe", (alice, bob), live, ["c3"], played=("a1", "b2"))


async def test_a_flood_is_rate_limited_and_the_connection_survives(arena: Server, connect: Connect) -> None:
    flooder = await connect.player(arena, "Flood")
    burst = arena.config.rate_burst
    for index in range(burst + 20):
        await flooder.send({"type": "lobby.subscribe", "id": index})
    replies = [await flooder.expect(id=index) for index in range(burst + 20)]
    limited = [reply for reply in replies if reply["type"] == "error"]
    assert limited and all(reply["code"] == "rate_limited" for reply in limited)
    assert len(limited) >= 15, "the bucket refills at rate_per_s, so most of the excess is refused"
    await flooder.settle(1.0)
    assert (await flooder.request("lobby.subscribe"))["type"] == "lobby.snapshot"


async def test_a_bug_is_answered_internal_and_changes_nothing(
    scene: Scene, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_chat(self: Match, player_id: str, text: str, now: float) -> None:
        raise RuntimeError("a bug in chat")

    monkeypatch.setattr(Match, "chat", broken_chat)
    await assert_refused(
        scene,
        scene.alice,
        {"type": "chat", "id": "x1", "match_id": scene.live, "text": "hi"},
        ErrorCode.INTERNAL,
    )
    await play_moves("tictactoe", (scene.alice, scene.bob), scene.live, ["c3"], played=("a1", "b2"))


async def test_a_storage_failure_is_answered_unavailable_and_the_move_is_not_played(scene: Scene) -> None:
    await scene.server.store.close()  # every later write fails as the database would during an outage
    await assert_refused(
        scene,
        scene.alice,
        {"type": "move", "id": 7, "match_id": scene.live, "ply": 2, "move": "c3"},
        ErrorCode.UNAVAILABLE,
    )
    state = await scene.bob.request("match.watch", match_id=scene.live)
    assert state["moves"] == ["a1", "b2"] and state["turn"] == 0


async def test_an_oversized_frame_closes_only_that_connection(arena: Server, connect: Connect) -> None:
    alice = await connect.player(arena, "Alice")
    rogue = await connect(arena)
    await rogue.send(json.dumps({"type": "chat", "text": "x" * (arena.config.max_frame_bytes + 1)}))
    await rogue.websocket.wait_closed()
    assert rogue.websocket.close_code == 1009
    assert (await alice.request("lobby.subscribe"))["type"] == "lobby.snapshot"
