"""Whole matches over real sockets, on SQLite and PostgreSQL: games to the end, spectators, results."""

from __future__ import annotations

import pytest
from support.client import ArenaClient
from support.fixtures import Connect
from support.fuzz_arena import api_get
from support.play import decisive_game, open_match, play_moves

from games import GAMES, get_game
from server.app import Server
from server.storage import EngineInfo

ALL_GAMES = sorted(GAMES)


async def player(connect: Connect, server: Server, name: str, *, bot: bool = False) -> ArenaClient:
    client = await connect.player(server, name, bot=bot)
    return client


@pytest.mark.parametrize("game", ALL_GAMES)
async def test_two_clients_play_a_complete_game_that_a_spectator_follows(
    arena: Server, connect: Connect, game: str
) -> None:
    alice = await player(connect, arena, "Alice")
    bob = await player(connect, arena, "Bob", bot=True)
    spectator = await player(connect, arena, "Sam")
    state = await open_match(alice, bob, game)
    match_id = state["match_id"]
    watched = await spectator.request("match.watch", match_id=match_id)
    assert watched["type"] == "match.state" and watched["you"] is None and watched["moves"] == []

    moves = list(decisive_game(game))
    replies = await play_moves(game, (alice, bob), match_id, moves)

    outcome = get_game(game).replay(moves).outcome()
    assert outcome is not None and outcome.winner is not None
    assert [reply["move"] for reply in replies] == moves
    for client in (alice, bob, spectator):
        ended = await client.expect(type_="ended", match_id=match_id)
        assert (ended["status"], ended["winner"], ended["reason"]) == (
            "finished",
            outcome.winner,
            outcome.reason,
        )
    # The spectator saw every event, in order, with consecutive sequence numbers and no request ids.
    events = [
        m
        for m in spectator.received
        if m.get("match_id") == match_id and "seq" in m and m["type"] != "match.state"
    ]
    assert [e["seq"] for e in events] == list(range(watched["seq"] + 1, watched["seq"] + 1 + len(events)))
    assert [e["move"] for e in events if e["type"] == "moved"] == moves
    assert all("id" not in e for e in events)

    record = await arena.store.get_match(match_id)
    assert record is not None
    assert (record.status, record.winner, record.reason) == ("finished", outcome.winner, outcome.reason)
    assert [move.notation for move in record.moves] == moves
    assert [seat.player_name for seat in record.seats] == ["Alice", "Bob"]
    assert record.seats[1].is_bot


SQL_LOOKING_NAME = "Robert'); DROP TABLE players;--"


async def test_moves_carry_clocks_and_engine_info_into_the_record(arena: Server, connect: Connect) -> None:
    alice = await player(connect, arena, "Alice")
    bob = await player(connect, arena, SQL_LOOKING_NAME, bot=True)
    match_id = (await open_match(alice, bob, "connect4", time_control="5+3"))["match_id"]
    engine = {
        "source": "searched",
        "score": 42,
        "depth": 7,
        "nodes": 12345,
        "pv": ["4", "4", "3"],
        "time_ms": 80,
    }
    first = await alice.request("move", match_id=match_id, ply=0, move="4")
    reply = await bob.request("move", match_id=match_id, ply=1, move="4", engine=engine)
    # Kept from everyone while the game is played: Alice would read what the bot means to play next.
    assert "engine" not in reply
    seen = await alice.expect(type_="moved", ply=1)
    assert "engine" not in seen and "id" not in seen
    live = await api_get(arena.http_url, f"/api/matches/{match_id}")
    assert [move["engine"] for move in live[1]["moves"]] == [None, None]
    assert first["clocks_ms"][1] == 300_000 and 300_000 <= first["clocks_ms"][0] <= 303_000
    record = await arena.store.get_match(match_id)
    assert record is not None
    stored = record.moves[1]
    assert stored.engine == EngineInfo(42, 7, 12345, ("4", "4", "3"), "searched", 80)
    assert stored.clocks_ms == tuple(reply["clocks_ms"])
    assert record.seats[1].player_name == SQL_LOOKING_NAME, "stored as plain text"
    await alice.request("resign", match_id=match_id)  # over: the record shows the bot's search
    over = await api_get(arena.http_url, f"/api/matches/{match_id}")
    assert over[1]["moves"][1]["engine"] == engine


async def test_each_source_of_a_bot_move_comes_back_as_the_bot_said_it(
    arena: Server, connect: Connect
) -> None:
    """A book move has no depth or nodes, a solved one no depth, and a bot that does not say has no
    source: the record leaves each out (``null``) rather than make one up."""
    alice = await player(connect, arena, "Alice")
    bot = await player(connect, arena, "Perfect", bot=True)
    match_id = (await open_match(bot, alice, "connect4"))["match_id"]
    said = [
        {"source": "book", "score": 999_979, "pv": ["4"], "time_ms": 0},
        {"source": "solved", "score": -999_971, "nodes": 1_200_000, "pv": ["4"], "time_ms": 85},
        {
            "source": "searched",
            "score": 35,
            "depth": 9,
            "nodes": 48_211,
            "pv": ["3", "4", "3"],
            "time_ms": 400,
        },
        {"score": 12, "depth": 3, "pv": ["3"]},  # an older bot's
    ]
    for index, engine in enumerate(said):
        await bot.request("move", match_id=match_id, ply=2 * index, move=engine["pv"][0], engine=engine)
        await alice.request("move", match_id=match_id, ply=2 * index + 1, move="1122"[index])
    assert (await alice.request("resign", match_id=match_id))["type"] == "ended"
    record = await api_get(arena.http_url, f"/api/matches/{match_id}")
    fields = ("source", "score", "depth", "nodes", "pv", "time_ms")
    assert [move["engine"] for move in record[1]["moves"][::2]] == [
        {field: engine.get(field) for field in fields} for engine in said
    ]
    assert [move["engine"] for move in record[1]["moves"][1::2]] == [None] * len(said)
