"""Quick pairing over real sockets: two people in one pool are paired and play; pools across instances
that share a broker; the bot offered after a long wait; leaving, and bad requests."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from support.client import ArenaClient
from support.fixtures import Connect, StartServer
from support.services import PrivateMosquitto
from test_rated_matches import profile_when, rated_in

from server.app import Server
from server.glicko2 import NEW_PLAYER, Result, rate

TIC_TAC_TOE_WIN = ["a1", "a2", "b1", "b2", "c1"]
"""Seat 0 takes the top row."""


async def play_out(by_seat: dict[int, ArenaClient], match_id: str, moves: list[str]) -> dict[str, Any]:
    """Play ``moves`` in turn from seat 0 in ``match_id``; the ``ended`` both players get."""
    for ply, move in enumerate(moves):
        reply = await by_seat[ply % 2].request("move", match_id=match_id, ply=ply, move=move)
        assert reply["type"] == "moved", reply
    ended = [await client.expect(type_="ended", match_id=match_id) for client in by_seat.values()]
    assert ended[0]["winner"] == ended[1]["winner"]
    return ended[0]


async def test_two_people_in_one_pool_are_paired_and_play_a_game(arena: Server, connect: Connect) -> None:
    ann = await connect.player(arena, "Ann")
    bob = await connect.player(arena, "Bob")
    waiting = await ann.request("pool.join", game="tictactoe", time_control="1+0", rated=True)
    assert waiting["type"] == "pool.waiting", waiting
    assert (waiting["game"], waiting["time_control"], waiting["rated"]) == ("tictactoe", "1+0", True)
    assert (waiting["waiting"], waiting["rating"], waiting["range"]) == (1, 1500, [1400, 1600])
    assert (await bob.request("pool.join", game="tictactoe", time_control="1+0"))["waiting"] == 2

    paired = {name: await client.expect(type_="paired") for name, client in (("ann", ann), ("bob", bob))}
    assert paired["ann"]["match_id"] == paired["bob"]["match_id"]
    match_id = paired["ann"]["match_id"]
    assert {paired["ann"]["seat"], paired["bob"]["seat"]} == {0, 1}
    assert paired["ann"]["opponent"]["name"] == "Bob" and paired["bob"]["opponent"]["name"] == "Ann"
    assert paired["ann"]["url"] == arena.ws_url and paired["ann"]["rated"] is True
    await ann.expect(type_="started", match_id=match_id)

    by_seat = {paired["ann"]["seat"]: ann, paired["bob"]["seat"]: bob}
    ended = await play_out(by_seat, match_id, TIC_TAC_TOE_WIN)
    assert ended["winner"] == 0 and ended["status"] == "finished"
    # Paired once: neither waits any more, so leaving says so.
    assert (await ann.request("pool.leave"))["code"] == "not_found"

    # The game was rated: both profiles show the new ratings and the game.
    winner = rate(NEW_PLAYER, [Result(NEW_PLAYER, 1.0)], periods=0.0)
    loser = rate(NEW_PLAYER, [Result(NEW_PLAYER, 0.0)], periods=0.0)
    for client, after in ((by_seat[0], winner), (by_seat[1], loser)):
        profile = await profile_when(arena, f"id:{client.player_id}", rated_in("tictactoe"))
        assert profile["ratings"]["tictactoe"]["rating"] == round(after.rating)
        [game] = profile["games"]
        assert game["match_id"] == match_id and game["rated"] is True
        assert game["rating"] == {"before": 1500, "after": round(after.rating)}


async def test_waiters_of_different_pools_are_not_paired_and_leaving_twice_is_refused(
    arena: Server, connect: Connect
) -> None:
    ann = await connect.player(arena, "Ann")
    bob = await connect.player(arena, "Bob")
    await ann.request("pool.join", game="tictactoe", time_control="1+0")
    await bob.request("pool.join", game="connect4", time_control="1+0")
    await ann.settle(2.5)
    assert not [m for m in ann.take_unread() + bob.take_unread() if m["type"] == "paired"]
    left = await bob.request("pool.leave")
    assert left["type"] == "ok"
    assert (await bob.request("pool.leave"))["code"] == "not_found"


async def test_bad_pool_requests_get_clear_errors_and_change_nothing(arena: Server, connect: Connect) -> None:
    ann = await connect.player(arena, "Ann")
    unknown = await ann.request("pool.join", game="go", time_control="1+0")
    assert unknown["type"] == "error" and unknown["code"] == "not_found"
    assert "known games" in unknown["message"]
    bad = await ann.request("pool.join", game="chess", time_control="soon")
    assert bad["code"] == "bad_field"
    extra = await ann.request("pool.join", game="chess", time_control="1+0", colour="white")
    assert extra["code"] == "bad_field"
    assert (await ann.request("pool.accept_bot"))["code"] == "not_found"
    assert not arena.pool.pool.waiters


async def test_a_long_waiter_is_offered_a_bot_of_about_their_rating_and_may_accept_it(
    start_server: StartServer, connect: Connect
) -> None:
    arena = await start_server(pool_bot_offer_s=1.0)

    def bot(level: int, name: str, elo: int) -> dict[str, Any]:
        rating = {"elo": elo, "ci_low": elo - 50, "ci_high": elo + 50}
        return {"level": level, "style": "alphabeta", "name": name, "rating": rating}

    offer = {"fleet": "test-fleet", "games": {"tictactoe": [bot(2, "Weak", 900), bot(5, "Fair", 1450)]}}
    arena.bus.publish_nowait("plyarena/v1/bots/test-fleet", json.dumps(offer).encode(), True)
    ann = await connect.player(arena, "Ann")
    first = await ann.request("pool.join", game="tictactoe", time_control="1+0")
    assert first.get("bot") is None
    assert (await ann.request("pool.accept_bot"))["code"] == "not_allowed"  # (not yet)
    offered = await ann.expect(type_="pool.waiting", where=lambda m: m.get("bot") is not None)
    assert offered["bot"] == {"level": 5, "style": "alphabeta", "name": "Fair", "rating": 1450}

    state = await ann.request("pool.accept_bot")
    assert state["type"] == "match.state", state
    assert state["options"]["bot"] == {"level": 5, "style": "alphabeta"}
    assert state["status"] == "open"
    assert state["match_id"] in arena.lobby.entries  # (listed, where fleets find bot requests)
    assert not arena.pool.pool.waiters


async def test_a_disconnected_waiter_is_not_paired_and_one_seated_elsewhere_leaves_the_pool(
    arena: Server, connect: Connect
) -> None:
    ann = await connect.player(arena, "Ann")
    await ann.request("pool.join", game="tictactoe", time_control="1+0")
    await ann.close()
    bob = await connect.player(arena, "Bob")
    await bob.request("pool.join", game="tictactoe", time_control="1+0")
    await bob.settle(2.5)
    assert not [m for m in bob.take_unread() if m["type"] == "paired"]
    created = await bob.request("match.create", game="chess", time_control="5+0")
    assert created["type"] == "match.state"
    left = await bob.expect(type_="pool.left")
    assert left["reason"] == "you took a seat in a match"


async def test_two_instances_sharing_a_broker_pair_their_waiters_across_them(
    start_server: StartServer, connect: Connect, private_broker: PrivateMosquitto
) -> None:
    one = await start_server(mqtt_url=private_broker.url)
    two = await start_server(mqtt_url=private_broker.url)
    ann = await connect.player(one, "Ann")
    bob = await connect.player(two, "Bob")
    await ann.request("pool.join", game="tictactoe", time_control="1+0")
    await bob.request("pool.join", game="tictactoe", time_control="1+0")
    paired_ann = await ann.expect(type_="paired")
    paired_bob = await bob.expect(type_="paired")
    # Made once, by the instance of the longer waiter (Ann), which hosts it.
    assert paired_ann["match_id"] == paired_bob["match_id"]
    assert paired_bob["host"] == one.config.instance_id and paired_bob["url"] == one.ws_url
    match_id = paired_ann["match_id"]

    bob_there = await connect.player(one, token=bob.token)
    state = await bob_there.request("match.watch", match_id=match_id)
    assert state["type"] == "match.state" and state["status"] == "live"
    by_seat = {paired_ann["seat"]: ann, paired_bob["seat"]: bob_there}
    ended = await play_out(by_seat, match_id, TIC_TAC_TOE_WIN)
    assert ended["winner"] == 0
    assert not one.pool.pool.waiters and not two.pool.pool.waiters


async def announce_ghost_waiter(arena: Server, player: dict[str, Any], since: float) -> None:
    """Announce, as an instance "ghost" sharing the arena's bus would, a waiter of the tic-tac-toe pool."""
    waiter = {"player": player, "game": "tictactoe", "time_control": "1+0", "rated": True}
    payload = json.dumps({**waiter, "rating": 1500.0, "since": since}).encode()
    arena.bus.publish_nowait(f"plyarena/v1/pool/ghost/{player['id']}", payload, True)


async def test_another_instances_waiter_is_claimed_first_and_seated_once_it_is_confirmed(
    arena: Server, connect: Connect
) -> None:
    gus = await connect.player(arena, "Gus")  # (a player of the shared database, waiting at "ghost")
    gus_info = {"id": gus.player_id, "name": "Gus", "bot": False}
    await gus.close()
    ann = await connect.player(arena, "Ann")
    here = arena.config.instance_id
    async with arena.bus.subscribe(f"plyarena/v1/pool-inbox/ghost/{here}") as inbox:
        await ann.request("pool.join", game="tictactoe", time_control="1+0")
        await announce_ghost_waiter(arena, gus_info, since=time.time() + 1)  # (Ann waited longer)
        _, payload = await asyncio.wait_for(anext(inbox), 5)
        claim = json.loads(payload)
        assert claim == {"type": "claim", "claim_id": claim["claim_id"], "player_id": gus.player_id}
        # "ghost" says Gus is no longer free: Ann waits on, and is claimed for again later.
        answer = {"type": "answer", "claim_id": claim["claim_id"], "free": False}
        arena.bus.publish_nowait(f"plyarena/v1/pool-inbox/{here}/ghost", json.dumps(answer).encode())
        claim = json.loads((await asyncio.wait_for(anext(inbox), 5))[1])
        assert not [m for m in ann.take_unread() if m["type"] == "paired"]
        # An answer counts only from the instance asked (the topic's last level, which the ACL guards).
        answer = {"type": "answer", "claim_id": claim["claim_id"], "free": True}
        arena.bus.publish_nowait(f"plyarena/v1/pool-inbox/{here}/impostor", json.dumps(answer).encode())
        assert not [m for m in await ann.settle(0.5) if m["type"] == "paired"]
        arena.bus.publish_nowait(f"plyarena/v1/pool-inbox/{here}/ghost", json.dumps(answer).encode())
        made = json.loads((await asyncio.wait_for(anext(inbox), 5))[1])
    assert made["type"] == "made" and made["claim_id"] == claim["claim_id"]
    paired = await ann.expect(type_="paired")
    assert made["paired"]["match_id"] == paired["match_id"] and made["paired"]["url"] == arena.ws_url
    assert made["paired"]["opponent"]["name"] == "Ann" and paired["opponent"]["name"] == "Gus"
    assert made["paired"]["seat"] == 1 - paired["seat"]

    # Gus comes to the match at the URL he was given, as a player paired across instances does.
    gus_here = await connect.player(arena, token=gus.token)
    state = await gus_here.request("match.watch", match_id=paired["match_id"])
    assert state["status"] == "live" and state["you"] == made["paired"]["seat"]
    assert state["connected"] == [True, True]


async def test_a_dead_instances_waiters_vanish_from_the_pool(arena: Server, connect: Connect) -> None:
    ghost = {"id": "ghost-player", "name": "Ghost", "bot": False}
    await announce_ghost_waiter(arena, ghost, since=time.time())
    ann = await connect.player(arena, "Ann")
    assert (await ann.request("pool.join", game="tictactoe", time_control="untimed"))["waiting"] == 1
    await until(lambda: "ghost-player" in arena.pool.pool.waiters)
    arena.bus.publish_nowait("plyarena/v1/instances/ghost", b'{"online": false}', True)
    await until(lambda: "ghost-player" not in arena.pool.pool.waiters)
    # And an announcement of an instance known to be offline is not believed.
    await announce_ghost_waiter(arena, ghost, since=time.time())
    await asyncio.sleep(0.2)
    assert "ghost-player" not in arena.pool.pool.waiters


async def until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    async def wait() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(wait(), timeout)


async def test_a_waiter_back_on_a_new_connection_keeps_their_place(arena: Server, connect: Connect) -> None:
    ann = await connect.player(arena, "Ann")
    await ann.request("pool.join", game="othello", time_control="3+2")
    await ann.close()
    await asyncio.sleep(1.2)
    again = await connect.player(arena, token=ann.token)
    waiting = await again.request("pool.join", game="othello", time_control="3+2")
    assert waiting["waiting"] == 1 and waiting["waited_ms"] >= 1000
    assert waiting["range"] == [1400, 1600]


async def test_a_player_waiting_at_two_instances_is_paired_once(
    start_server: StartServer, connect: Connect, private_broker: PrivateMosquitto
) -> None:
    one = await start_server(mqtt_url=private_broker.url)
    two = await start_server(mqtt_url=private_broker.url)
    ann_one = await connect.player(one, "Ann")
    await ann_one.request("pool.join", game="tictactoe", time_control="untimed")
    await until(lambda: ann_one.player_id in two.pool.pool.waiters)
    # Ann joins the same pool at the other instance: the newer wait wins, the older is taken out.
    ann_two = await connect.player(two, token=ann_one.token)
    await ann_two.request("pool.join", game="tictactoe", time_control="untimed")
    left = await ann_one.expect(type_="pool.left")
    assert left["reason"] == "you joined a pool on another server since"
    await until(lambda: one.pool.pool.waiters.get(ann_one.player_id, None) is not None)
    assert one.pool.pool.waiters[ann_one.player_id].instance == two.config.instance_id

    bob = await connect.player(one, "Bob")
    await bob.request("pool.join", game="tictactoe", time_control="untimed")
    paired = await ann_two.expect(type_="paired")
    assert (await bob.expect(type_="paired"))["match_id"] == paired["match_id"]
    await ann_two.settle(1.5)
    assert not [m for m in ann_one.take_unread() + ann_two.take_unread() if m["type"] == "paired"]


async def test_a_waiter_announced_beyond_a_local_players_limits_is_not_believed(arena: Server) -> None:
    bad = [
        {"id": "p-bad-name", "name": "Eve\u202e", "bot": False},  # (a name no local player could have)
        {"id": "p-long-name", "name": "E" * 33, "bot": False},
    ]
    for player in bad:
        await announce_ghost_waiter(arena, player, since=time.time())
    await announce_ghost_waiter(arena, {"id": "p-ok", "name": "Ok", "bot": False}, since=-5.0)
    await announce_ghost_waiter(arena, {"id": "p-fine", "name": "Fine", "bot": False}, since=time.time())
    await until(lambda: "p-fine" in arena.pool.pool.waiters)
    assert set(arena.pool.pool.waiters) == {"p-fine"}
