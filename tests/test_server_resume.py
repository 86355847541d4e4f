"""Time and absence over real sockets: resuming by sequence number, flag falls, grace periods."""

from __future__ import annotations

import asyncio
import time

from support.fixtures import Connect, StartServer
from support.play import open_match, play_moves

from server.app import Server, running_server
from server.config import ServerConfig


async def test_a_dropped_client_resumes_with_exactly_the_events_it_missed(
    arena: Server, connect: Connect
) -> None:
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob")
    state = await open_match(alice, bob, "tictactoe")
    match_id = state["match_id"]
    await play_moves("tictactoe", (alice, bob), match_id, ["a1"])
    last_seen = (await bob.expect(type_="moved", ply=0))["seq"]
    await bob.close()

    gone = await alice.expect(type_="presence", seat=1, connected=False)
    assert gone["grace_ms"] == 30_000
    await alice.request("chat", match_id=match_id, text="still there?")
    missed_by_bob = [
        m for m in alice.received if m.get("match_id") == match_id and m.get("seq", 0) > last_seen
    ]

    bob_again = await connect(arena)
    welcome = await bob_again.hello(token=bob.token)
    assert welcome["player"]["id"] == bob.player_id and welcome["matches"] == [match_id]
    catchup = await bob_again.request("match.watch", match_id=match_id, log=state["log"], since=last_seen)
    assert catchup["type"] == "match.catchup"
    *missed, back = catchup["events"]
    assert [strip_id(event) for event in missed] == [strip_id(event) for event in missed_by_bob]
    assert [event["type"] for event in missed] == ["presence", "chat"]
    # Bob's return is the last event of the reply, which so shows the match as it now stands.
    assert (back["type"], back["seat"], back["connected"]) == ("presence", 1, True)
    assert catchup["seq"] == back["seq"] == missed_by_bob[-1]["seq"] + 1
    assert (catchup["clocks_ms"], catchup["clock_running"]) == (None, None), "untimed: null, not left out"
    assert strip_id(await alice.expect(type_="presence", seat=1, connected=True)) == back

    # Play goes on with the new connection.
    await play_moves("tictactoe", (alice, bob_again), match_id, ["b2"], played=("a1",))


def strip_id(message: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in message.items() if key != "id"}


async def test_an_unknown_log_or_a_gap_gets_the_full_state(arena: Server, connect: Connect) -> None:
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob")
    state = await open_match(alice, bob, "tictactoe")
    for log, since in ((None, 1), ("another-log", 1), (state["log"], 10_000)):
        fields = {"since": since} if log is None else {"log": log, "since": since}
        reply = await bob.request("match.watch", match_id=state["match_id"], **fields)
        assert reply["type"] == "match.state" and reply["seq"] == state["seq"] and reply["you"] == 1


async def test_a_flag_falls_on_a_tiny_time_control(arena: Server, connect: Connect) -> None:
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "connect4", time_control="0:01+0"))["match_id"]
    await play_moves("connect4", (alice, bob), match_id, ["4"])
    ended = await alice.expect(type_="ended", match_id=match_id, timeout=5)
    assert (ended["winner"], ended["reason"]) == (0, "seat 1 ran out of time")
    assert ended["clocks_ms"][1] == 0
    late = await bob.request("move", match_id=match_id, ply=1, move="4")
    assert late["code"] == "match_over"
    record = await arena.store.get_match(match_id)
    assert record is not None and (record.status, record.winner) == ("finished", 0)
    assert len(record.moves) == 1


async def test_a_flag_that_fell_before_the_match_timer_fired_is_decided_by_the_next_request(
    arena_db_url: str, connect: Connect
) -> None:
    """The server's clock past a deadline whose timer the loop has not fired: a request asks time first,
    so the late move is refused and the match ends on time, as the timer would have ended it."""
    skipped = [0.0]
    config = ServerConfig(port=0, db_url=arena_db_url, grace_s=600.0)
    async with running_server(config, now=lambda: time.monotonic() + skipped[0]) as server:
        alice = await connect.player(server, "Alice")
        bob = await connect.player(server, "Bob")
        match_id = (await open_match(alice, bob, "connect4", time_control="1+0"))["match_id"]
        await play_moves("connect4", (alice, bob), match_id, ["4"])
        skipped[0] = 61.0  # (the timer is armed in the loop's time, a minute away: it does not fire)
        late = await bob.request("move", match_id=match_id, ply=1, move="4")
        assert late["code"] == "match_over"
        ended = await alice.expect(type_="ended", match_id=match_id)
        assert (ended["winner"], ended["reason"]) == (0, "seat 1 ran out of time")
        record = await server.store.get_match(match_id)
        assert record is not None and (record.status, record.winner, len(record.moves)) == ("finished", 0, 1)


async def test_a_player_away_past_the_grace_period_loses(start_server: StartServer, connect: Connect) -> None:
    server = await start_server(grace_s=0.3)
    alice = await connect.player(server, "Alice")
    bob = await connect.player(server, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await bob.close()
    ended = await alice.expect(type_="ended", match_id=match_id, timeout=5)
    assert (ended["status"], ended["winner"], ended["reason"]) == (
        "finished",
        0,
        "seat 1 left and did not come back",
    )


async def test_a_grace_period_shorter_than_the_clock_ends_the_match_on_time(
    start_server: StartServer, connect: Connect
) -> None:
    """The match's timer, armed for the first flag fall minutes away, is moved earlier for the grace."""
    server = await start_server(grace_s=0.3)
    alice = await connect.player(server, "Alice")
    bob = await connect.player(server, "Bob")
    match_id = (await open_match(alice, bob, "connect4", time_control="5+0"))["match_id"]
    await play_moves("connect4", (alice, bob), match_id, ["4"])
    await bob.close()
    ended = await alice.expect(type_="ended", match_id=match_id, timeout=5)
    assert (ended["winner"], ended["reason"]) == (0, "seat 1 left and did not come back")


async def test_coming_back_within_the_grace_period_keeps_the_match(
    start_server: StartServer, connect: Connect
) -> None:
    server = await start_server(grace_s=0.6)
    alice = await connect.player(server, "Alice")
    bob = await connect.player(server, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await bob.close()
    bob_again = await connect.player(server, token=bob.token)
    await bob_again.request("match.watch", match_id=match_id)
    await asyncio.sleep(0.8)
    assert not [m for m in alice.take_unread() if m["type"] == "ended"]
    await play_moves("tictactoe", (alice, bob_again), match_id, ["a1", "b2"])


async def test_a_returning_player_is_told_each_unfinished_match_in_the_order_it_took_its_seat(
    arena: Server, connect: Connect
) -> None:
    alice, bob, carol = await connect(arena), await connect(arena), await connect(arena)
    for client, name in ((alice, "Alice"), (bob, "Bob"), (carol, "Carol")):
        await client.hello(name)
    first = (await open_match(alice, bob, "tictactoe"))["match_id"]
    finished = (await open_match(carol, alice, "tictactoe"))["match_id"]
    waiting = (await alice.request("match.create", game="connect4"))["match_id"]
    with_carol = (await open_match(carol, bob, "connect4"))["match_id"]
    await carol.request("resign", match_id=finished)
    await alice.expect(type_="ended", match_id=finished)

    again = await connect(arena)
    assert (await again.hello(token=alice.token))["matches"] == [first, waiting]
    again = await connect(arena)
    assert (await again.hello(token=bob.token))["matches"] == [first, with_carol]
    assert arena.host.unfinished_of(carol.player_id) == [with_carol]

    arena.host.registry.expire(arena.host.matches[finished])  # a finished match leaves memory after a while
    assert finished not in arena.host.matches
    assert arena.host.unfinished_of(alice.player_id) == [first, waiting]
