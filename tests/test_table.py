"""At the table, over real sockets: watching without a name, the spectator count, takebacks."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.client import ArenaClient
from support.fixtures import FLEET_KEY, Connect
from support.play import open_match, play_moves

from server.app import Server, running_server
from server.config import ServerConfig


async def pair(arena: Server, connect: Connect) -> tuple[ArenaClient, ArenaClient]:
    return await connect.player(arena, "Alice"), await connect.player(arena, "Bob")


async def test_a_spectator_with_no_name_watches_a_live_game_and_sees_each_move(
    arena: Server, connect: Connect
) -> None:
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "connect4"))["match_id"]
    await play_moves("connect4", (alice, bob), match_id, ["4"])
    watcher = await connect(arena)  # no hello

    snapshot = await watcher.request("lobby.subscribe")
    assert snapshot["type"] == "lobby.snapshot"
    assert match_id in [entry["match_id"] for entry in snapshot["matches"]]
    state = await watcher.request("match.watch", match_id=match_id)
    assert (state["type"], state["moves"], state["you"]) == ("match.state", ["4"], None)

    played = await play_moves("connect4", (alice, bob), match_id, ["4", "3", "5"], played=("4",))
    for moved in played:
        seen = await watcher.expect(type_="moved", match_id=match_id, ply=moved["ply"])
        assert (seen["move"], seen["seq"], seen["board"]) == (moved["move"], moved["seq"], moved["board"])

    for refused in (
        await watcher.request("chat", match_id=match_id, text="hello"),
        await watcher.request("move", match_id=match_id, ply=4, move="1"),
        await watcher.request("match.create", game="connect4"),
    ):
        assert (refused["type"], refused["code"]) == ("error", "hello_required")
    assert (await watcher.request("match.leave", match_id=match_id))["type"] == "ok"


async def spectators_seen(client: ArenaClient, match_id: str, count: int) -> None:
    """Wait until ``client`` is told that ``count`` watch ``match_id``."""
    await client.expect(type_="match.spectators", match_id=match_id, spectators=count)


async def test_the_spectator_count_rises_and_falls_counting_people_not_tabs(
    arena: Server, connect: Connect
) -> None:
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    anonymous = [await connect(arena) for _ in range(2)]
    carol = await connect.player(arena, "Carol")
    carol_again = await connect.player(arena, token=carol.token)  # a second tab: the same viewer
    for watcher in (*anonymous, carol, carol_again):
        await watcher.request("match.watch", match_id=match_id)
    await spectators_seen(alice, match_id, 3)
    await spectators_seen(bob, match_id, 3)
    late = await connect(arena)
    state = await late.request("match.watch", match_id=match_id)
    assert state["spectators"] == 4, "match.state says how many watch, the new watcher counted"

    for watcher in (*anonymous, carol, late):
        await watcher.close()
    await spectators_seen(alice, match_id, 1)  # Carol's second tab still watches
    await carol_again.request("match.leave", match_id=match_id)
    await spectators_seen(bob, match_id, 0)


async def test_a_takeback_asked_for_and_declined_changes_nothing(arena: Server, connect: Connect) -> None:
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "connect4"))["match_id"]
    refused = await alice.request("takeback.offer", match_id=match_id)
    assert (refused["code"], refused["message"]) == ("not_allowed", "you have made no move to take back")

    await play_moves("connect4", (alice, bob), match_id, ["4"])
    offered = await alice.request("takeback.offer", match_id=match_id)
    assert (offered["type"], offered["seat"]) == ("takeback.offered", 0)
    assert (await bob.expect(type_="takeback.offered"))["seq"] == offered["seq"]
    state = await bob.request("match.watch", match_id=match_id)
    assert state["takeback_offer"] == 0
    declined = await bob.request("takeback.decline", match_id=match_id)
    assert (declined["type"], declined["seat"]) == ("takeback.declined", 1)
    await alice.expect(type_="takeback.declined")
    assert (await bob.request("takeback.accept", match_id=match_id))["code"] == "not_allowed"

    await alice.request("takeback.offer", match_id=match_id)
    await play_moves("connect4", (alice, bob), match_id, ["3"], played=("4",))  # a move lets it lapse
    assert (await bob.request("takeback.accept", match_id=match_id))["code"] == "not_allowed"
    record = await arena.store.get_match(match_id)
    assert record is not None and [move.notation for move in record.moves] == ["4", "3"]


async def test_a_rated_game_between_people_refuses_takebacks_once_the_opponent_has_moved_twice(
    arena: Server, connect: Connect
) -> None:
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "connect4", rated=True))["match_id"]
    await play_moves("connect4", (alice, bob), match_id, ["4", "4"])
    assert (await alice.request("takeback.offer", match_id=match_id))["type"] == "takeback.offered"
    await bob.request("takeback.decline", match_id=match_id)
    await play_moves("connect4", (alice, bob), match_id, ["3", "3"], played=("4", "4"))
    refused = await alice.request("takeback.offer", match_id=match_id)
    assert refused["code"] == "not_allowed" and "rated" in refused["message"]


async def test_a_takeback_accepted_removes_the_askers_last_move_and_sets_the_clocks_back(
    arena: Server, connect: Connect
) -> None:
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "connect4", time_control="5+3"))["match_id"]
    played = await play_moves("connect4", (alice, bob), match_id, ["4", "4", "3"])

    # Bob moved last but one, and it is his turn again: his move and Alice's reply go.
    await bob.request("takeback.offer", match_id=match_id)
    taken = await alice.request("takeback.accept", match_id=match_id)
    assert (taken["type"], taken["seat"], taken["ply"], taken["turn"]) == ("takeback.accepted", 1, 1, 1)
    assert taken["clocks_ms"] == played[0]["clocks_ms"], "the clocks as they were after Alice's first move"
    assert taken["legal"] == played[0]["legal"] and taken["board"] == played[0]["board"]
    assert (await bob.expect(type_="takeback.accepted"))["seq"] == taken["seq"]
    state = await bob.request("match.watch", match_id=match_id)
    assert (state["moves"], state["turn"]) == (["4"], 1)
    assert "takeback_offer" not in state

    # Alice moved last: only her move goes, and the clocks are the start's.
    await alice.request("takeback.offer", match_id=match_id)
    taken = await bob.request("takeback.accept", match_id=match_id)
    assert (taken["ply"], taken["turn"], taken["clocks_ms"]) == (0, 0, [300_000, 300_000])
    replayed = await play_moves("connect4", (alice, bob), match_id, ["1", "2"])
    assert [moved["ply"] for moved in replayed] == [0, 1]
    record = await arena.store.get_match(match_id)
    assert record is not None and [move.notation for move in record.moves] == ["1", "2"]


async def test_a_restarted_server_restores_the_position_without_the_moves_taken_back(
    arena_db_url: str, connect: Connect, tmp_path: Path
) -> None:
    config = ServerConfig(
        port=0, db_url=arena_db_url, grace_s=30.0, fleet_key=FLEET_KEY, instance_id=f"table-{tmp_path.name}"
    )
    async with running_server(config) as server:
        alice, bob = await pair(server, connect)
        match_id = (await open_match(alice, bob, "othello", time_control="3+2"))["match_id"]
        played = await play_moves("othello", (alice, bob), match_id, ["d3", "c5", "e6"])
        await alice.request("takeback.offer", match_id=match_id)
        taken = await bob.request("takeback.accept", match_id=match_id)
        assert taken["ply"] == 2
        tokens = alice.token, bob.token
        await asyncio.gather(alice.close(), bob.close())

    async with running_server(config) as server:
        alice = await connect.player(server, token=tokens[0])
        state = await alice.request("match.watch", match_id=match_id)
        assert (state["status"], state["moves"], state["turn"]) == ("live", ["d3", "c5"], 0)
        assert state["board"] == played[1]["board"]
        assert state["clocks_ms"][1] == played[1]["clocks_ms"][1], "as stored with the last move kept"
