"""Limits that count players and matches (server/fair_use.py), over real sockets: a player's chat across all
their connections, a match's chat and what it stores, and public matches per player and per address."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncEngine
from support.client import ArenaClient
from support.fixtures import Connect, StartServer
from support.play import open_match

from server.app import Server
from server.config import ServerConfig
from server.storage.engine import create_engine

NO_REFILL = 1e-6
"""A rate that refills nothing while a test runs: what a burst allows is all there is."""


@pytest.fixture
async def database(arena_db_url: str) -> AsyncIterator[AsyncEngine]:
    """The test's own connection to the server's database, to see what is stored."""
    engine = create_engine(arena_db_url)
    yield engine
    await engine.dispose()


async def stored_chat(database: AsyncEngine, match_id: str) -> list[str]:
    async with database.connect() as connection:
        rows = await connection.execute(
            text("SELECT text FROM chat_lines WHERE match_id = :id ORDER BY seq"), {"id": match_id}
        )
        return [row[0] for row in rows]


async def stored_open_matches(database: AsyncEngine, player_ids: Sequence[str]) -> int:
    statement = text(
        "SELECT count(*) FROM matches WHERE status = 'open' AND id IN "
        "(SELECT match_id FROM seats WHERE player_id IN :ids)"
    ).bindparams(bindparam("ids", expanding=True))
    async with database.connect() as connection:
        return int(await connection.scalar(statement, {"ids": list(player_ids)}) or 0)


async def more_connections(
    arena: Server, connect: Connect, player: ArenaClient, count: int
) -> list[ArenaClient]:
    """``count`` more connections of ``player``, each said hello with its token."""
    return [await connect.player(arena, token=player.token) for _ in range(count)]


def outcomes(replies: Sequence[dict[str, Any]]) -> Counter[str]:
    """How many replies were each message type, or each error code."""
    return Counter(reply["code"] if reply["type"] == "error" else reply["type"] for reply in replies)


async def test_a_chat_flood_from_many_connections_of_one_player_stops_at_their_allowance(
    start_server: StartServer, connect: Connect, database: AsyncEngine
) -> None:
    arena = await start_server(
        chat_burst=5, chat_rate_per_s=NO_REFILL, match_chat_burst=7, match_chat_rate_per_s=NO_REFILL
    )
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    flooders = [alice, *await more_connections(arena, connect, alice, 10)]
    # Three lines a connection: well within each connection's own rate, thirty-three from the player.
    replies = await asyncio.gather(
        *(
            client.request("chat", match_id=match_id, text=f"spam {n}")
            for client in flooders
            for n in range(3)
        )
    )
    assert outcomes(replies) == {"chat": 5, "rate_limited": 28}, outcomes(replies)
    refusal = next(reply for reply in replies if reply["type"] == "error")
    assert "from all your connections" in refusal["message"]
    said = sorted(reply["text"] for reply in replies if reply["type"] == "chat")
    heard = [message for message in await bob.settle() if message["type"] == "chat"]
    assert sorted(line["text"] for line in heard) == said
    assert sorted(await stored_chat(database, match_id)) == said

    # Bob has an allowance of his own, but the match takes only 7 lines at once from both.
    answers = [await bob.request("chat", match_id=match_id, text=f"bob {n}") for n in range(3)]
    assert [answer.get("code", answer["type"]) for answer in answers] == ["chat", "chat", "rate_limited"]
    assert "this match took more than 7 chat lines" in answers[-1]["message"]
    assert len(await stored_chat(database, match_id)) == 7


async def test_a_match_stores_only_so_many_chat_lines(
    start_server: StartServer, connect: Connect, database: AsyncEngine
) -> None:
    arena = await start_server(max_chat_lines=4)
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    for speaker, line in ((alice, "hi"), (bob, "hello"), (alice, "gl"), (bob, "hf")):
        assert (await speaker.request("chat", match_id=match_id, text=line))["type"] == "chat"
    for speaker in (alice, bob, alice):
        refused = await speaker.request("chat", match_id=match_id, text="one more")
        assert (refused["type"], refused["code"]) == ("error", "not_allowed"), refused
        assert "chat is full" in refused["message"] and "(4)" in refused["message"]
    assert await stored_chat(database, match_id) == ["hi", "hello", "gl", "hf"]
    # Moves go on as ever: only the chat is full.
    assert (await alice.request("move", match_id=match_id, ply=0, move="b2"))["type"] == "moved"


async def test_many_players_of_one_address_open_only_so_many_public_matches(
    start_server: StartServer, connect: Connect, database: AsyncEngine
) -> None:
    arena = await start_server(
        uncapped_networks=(),
        trusted_proxies=("127.0.0.1",),
        max_open_public_matches=2,
        max_open_public_matches_per_address=5,
    )
    players = [await connect.player(arena, f"Flood {n}") for n in range(6)]
    # Six players ask for three public matches each, at once, from one address: five in all may wait.
    replies = await asyncio.gather(
        *(player.request("match.create", game="tictactoe") for player in players for _ in range(3))
    )
    assert outcomes(replies) == {"match.state": 5, "not_allowed": 13}, outcomes(replies)
    messages = {reply["message"] for reply in replies if reply["type"] == "error"}
    assert any("your address has 5 public matches" in message for message in messages), messages
    player_ids = [player.player_id for player in players]
    assert await stored_open_matches(database, player_ids) == 5
    assert arena.host.open_public_from("127.0.0.1") == 5
    lobby = await players[0].request("lobby.subscribe")
    assert len(lobby["matches"]) == 5

    # Each player's own public cap holds too, however many addresses they come from.
    creator = next(player for player in players if arena.host.open_public_count(player.player_id))
    counts = [arena.host.open_public_count(player_id) for player_id in player_ids]
    assert max(counts) <= 2 and sum(counts) == 5, counts
    # A private match lists nowhere, so the address may still open one; another address has its own cap.
    private = await creator.request("match.create", game="tictactoe", visibility="private")
    assert private["type"] == "match.state"
    neighbour = await connect(arena, additional_headers={"X-Forwarded-For": "203.0.113.9"})
    await neighbour.hello("Neighbour")
    assert (await neighbour.request("match.create", game="tictactoe"))["type"] == "match.state"

    # A match that fills no longer counts: the address may open another.
    public_id = next(reply["match_id"] for reply in replies if reply["type"] == "match.state")
    assert (await neighbour.request("match.join", match_id=public_id))["type"] == "match.state"
    fresh = next(player for player in players if not arena.host.open_public_count(player.player_id))
    assert (await fresh.request("match.create", game="tictactoe"))["type"] == "match.state"
    assert arena.host.open_public_from("127.0.0.1") == 5
    assert await stored_open_matches(database, player_ids) == 6  # (five public, and the private one)


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("chat_rate_per_s", 0.0, "chat lines per second"),
        ("match_chat_burst", 0, "chat lines per second"),
        ("max_chat_lines", -1, "0 (no cap) or more"),
        ("max_open_public_matches_per_address", -1, "0 (no cap) or more"),
    ],
)
def test_limits_that_allow_nothing_are_refused_at_startup(option: str, value: float, said: str) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        ServerConfig(**{option: value})
