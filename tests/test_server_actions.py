"""Everything a seated player can do besides moving, over real sockets, and what gets stored."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import pytest
from support.client import ArenaClient, Message
from support.commits import Commit, intercept_commits
from support.fixtures import Connect, StartServer
from support.play import open_match, play_moves

from server.app import Server
from server.storage import Store
from server.storage.writes import Write


async def pair(arena: Server, connect: Connect) -> tuple[ArenaClient, ArenaClient]:
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob")
    return alice, bob


def match_events(messages: list[Message]) -> list[Message]:
    """``messages`` without the spectator counts that come as followers come and go."""
    return [message for message in messages if message["type"] != "match.spectators"]


async def stored(arena: Server, match_id: str) -> tuple[str, int | None, str | None]:
    record = await arena.store.get_match(match_id)
    assert record is not None
    return record.status, record.winner, record.reason


async def test_resignation_ends_the_match_for_everyone(arena: Server, connect: Connect) -> None:
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "othello"))["match_id"]
    ended = await bob.request("resign", match_id=match_id)
    assert (ended["type"], ended["winner"], ended["reason"]) == ("ended", 0, "seat 1 resigned")
    assert (await alice.expect(type_="ended"))["seq"] == ended["seq"]
    assert await stored(arena, match_id) == ("finished", 0, "seat 1 resigned")


async def test_draw_offers_are_declined_by_word_or_by_moving_and_agreed(
    arena: Server, connect: Connect
) -> None:
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "connect4"))["match_id"]
    offered = await alice.request("draw.offer", match_id=match_id)
    assert (offered["type"], offered["seat"]) == ("draw.offered", 0)
    await bob.expect(type_="draw.offered")
    declined = await bob.request("draw.decline", match_id=match_id)
    assert (declined["type"], declined["seat"]) == ("draw.declined", 1)

    await bob.request("draw.offer", match_id=match_id)
    await play_moves("connect4", (alice, bob), match_id, ["4"])  # Alice moves instead of answering
    refused = await alice.request("draw.accept", match_id=match_id)
    assert refused["code"] == "not_allowed", "moving declined Bob's offer"

    await alice.request("draw.offer", match_id=match_id)
    ended = await bob.request("draw.accept", match_id=match_id)
    assert (ended["type"], ended["winner"], ended["reason"]) == ("ended", None, "draw by agreement")
    assert await stored(arena, match_id) == ("finished", None, "draw by agreement")


async def test_abort_before_both_sides_have_moved(arena: Server, connect: Connect) -> None:
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "checkers"))["match_id"]
    await play_moves("checkers", (alice, bob), match_id, ["11-15"])
    ended = await bob.request("abort", match_id=match_id)
    assert (ended["status"], ended["winner"], ended["reason"]) == ("aborted", None, "aborted by seat 1")
    assert await stored(arena, match_id) == ("aborted", None, "aborted by seat 1")


async def test_leaving_an_open_match_cancels_it_with_no_grace_period(arena: Server, connect: Connect) -> None:
    alice, bob = await pair(arena, connect)
    match_id = (await alice.request("match.create", game="tictactoe", seat=0))["match_id"]
    await bob.request("match.watch", match_id=match_id)
    assert (await alice.request("match.leave", match_id=match_id))["type"] == "ok"
    assert await stored(arena, match_id) == ("aborted", None, "aborted by seat 0")
    seen = [(event["type"], event.get("grace_ms")) for event in match_events(await bob.settle())]
    assert seen == [("ended", None), ("presence", None)], "ended at once; gone from a match that is over"


async def test_a_player_may_have_only_so_many_matches_waiting_for_an_opponent(
    start_server: StartServer, connect: Connect
) -> None:
    """Else one client could fill the lobby for everyone: the cap counts open matches, not games."""
    arena = await start_server(max_open_matches=2)
    alice, bob = await pair(arena, connect)
    first = (await alice.request("match.create", game="tictactoe"))["match_id"]
    await alice.request("match.create", game="connect4", visibility="private")
    refused = await alice.request("match.create", game="othello")
    assert (refused["type"], refused["code"]) == ("error", "not_allowed")
    assert "2 matches waiting for an opponent" in refused["message"]

    await bob.request("match.join", match_id=first)  # a match that fills no longer counts
    assert (await alice.request("match.create", game="othello"))["type"] == "match.state"
    assert (await bob.request("match.create", game="othello"))["type"] == "match.state"  # a cap each


async def test_the_cap_on_waiting_matches_holds_against_requests_from_many_connections_at_once(
    start_server: StartServer, connect: Connect
) -> None:
    """Each request is checked while the others are still being stored: those count too."""
    arena = await start_server(max_open_matches=3)
    alice = await connect.player(arena, "Alice")
    others = [await connect(arena) for _ in range(7)]
    for other in others:
        assert (await other.hello(token=alice.token))["type"] == "welcome"
    replies = await asyncio.gather(
        *(client.request("match.create", game="tictactoe") for client in (alice, *others))
    )
    answers = sorted(reply["type"] if reply["type"] == "match.state" else reply["code"] for reply in replies)
    assert answers == ["match.state"] * 3 + ["not_allowed"] * 5, answers
    assert arena.host.open_count(alice.player_id) == 3


async def test_a_bot_is_not_asked_for_where_no_bot_can_find_the_match(
    arena: Server, connect: Connect
) -> None:
    """Bots find their matches in the lobby, which lists no private match: the request would wait for ever."""
    alice = await connect.player(arena, "Alice")
    refused = await alice.request("match.create", game="connect4", visibility="private", bot={"level": 1})
    assert (refused["type"], refused["code"]) == ("error", "bad_field")
    assert refused["message"] == "a private match is listed nowhere, so no bot finds it: make it public"
    assert arena.host.open_count(alice.player_id) == 0


async def test_a_spectator_who_joins_gets_the_state_and_not_the_events_it_holds(
    arena: Server, connect: Connect
) -> None:
    """As for any joiner, the reply's ``match.state`` holds the seat and the start: no ``seated`` or
    ``started`` comes to the joining connection, though it was following the match already."""
    alice, bob = await pair(arena, connect)
    match_id = (await alice.request("match.create", game="tictactoe", seat=0))["match_id"]
    await bob.request("match.watch", match_id=match_id)
    joined = await bob.request("match.join", match_id=match_id)
    assert (joined["type"], joined["status"], joined["you"]) == ("match.state", "live", 1)
    assert [event["type"] for event in match_events(await alice.settle())] == ["seated", "started"]
    assert match_events(await bob.settle()) == []
    await play_moves("tictactoe", (alice, bob), match_id, ["b2"])  # and it follows the match still


async def test_a_rematch_swaps_seats_and_starts_at_once(arena: Server, connect: Connect) -> None:
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "tictactoe", time_control="1+0"))["match_id"]
    await alice.request("resign", match_id=match_id)
    offered = await alice.request("rematch.offer", match_id=match_id)
    assert offered["type"] == "rematch.offered"
    started = await bob.request("rematch.accept", match_id=match_id)
    assert started["type"] == "rematch.started"
    new_id = started["new_match_id"]
    for client, seat in ((alice, 1), (bob, 0)):
        state = await client.expect(type_="match.state", match_id=new_id)
        assert (state["status"], state["you"], state["options"]["time_control"]) == ("live", seat, "1+0")
    await play_moves("tictactoe", (bob, alice), new_id, ["b2"])
    record = await arena.store.get_match(new_id)
    assert record is not None and record.rematch_of == match_id and record.status == "live"
    assert [seat.player_name for seat in record.seats] == ["Bob", "Alice"]


async def test_a_match_has_one_rematch_even_once_the_server_has_forgotten_it(
    start_server: StartServer, connect: Connect
) -> None:
    """A finished match leaves memory (``finished_ttl_s``, or a restart) and is loaded again from the
    store when watched: its rematch comes with it, so the same pair cannot start a second one."""
    arena = await start_server(finished_ttl_s=0.01)
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await alice.request("resign", match_id=match_id)
    await alice.request("rematch.offer", match_id=match_id)
    new_id = (await bob.request("rematch.accept", match_id=match_id))["new_match_id"]
    while match_id in arena.host.matches:
        await asyncio.sleep(0.01)

    state = await alice.request("match.watch", match_id=match_id)
    assert (state["type"], state["status"], state["rematch_id"]) == ("match.state", "finished", new_id)
    refused = await alice.request("rematch.offer", match_id=match_id)
    assert (refused["code"], refused["message"]) == (
        "not_allowed",
        f"the rematch has started as match {new_id}",
    )
    record = await arena.store.get_match(match_id)
    assert record is not None and record.rematch_id == new_id


def finished_in_memory(arena: Server) -> set[str]:
    return {match_id for match_id, live in arena.host.matches.items() if live.match.is_over}


async def finished_and_left(arena: Server, connect: Connect, count: int) -> list[tuple[str, list[str]]]:
    """``count`` tic-tac-toe matches that seat 1 resigned after one to three moves, each left by both
    players: their ids and moves."""
    ann, ben = await connect.player(arena, "Ann"), await connect.player(arena, "Ben")
    played = []
    for index in range(count):
        match_id = (await open_match(ann, ben, "tictactoe"))["match_id"]
        moves = ["a1", "b2", "c3"][: index % 3 + 1]
        await play_moves("tictactoe", (ann, ben), match_id, moves)
        assert (await ben.request("resign", match_id=match_id))["type"] == "ended"
        for client in (ann, ben):
            assert (await client.request("match.leave", match_id=match_id))["type"] == "ok"
        played.append((match_id, moves))
    return played


async def test_watching_more_finished_matches_than_the_cap_holds_the_cap_and_reloads_the_rest(
    start_server: StartServer, connect: Connect
) -> None:
    """Any client may watch any finished match, loaded from the store if need be: ``max_finished_in_memory``
    of them stay in memory, the most recently used, and a forgotten one is loaded again as it was."""
    arena = await start_server(max_finished_in_memory=2)
    played = await finished_and_left(arena, connect, 4)
    assert finished_in_memory(arena) == {played[2][0], played[3][0]}, "the first two made room for them"
    spectator = await connect.player(arena, "Sam")
    for match_id, moves in played + played:  # each one forgotten, then watched again
        state = await spectator.request("match.watch", match_id=match_id)
        assert (state["type"], state["status"], state["moves"], state["result"], state["rematch_id"]) == (
            "match.state",
            "finished",
            moves,
            {"status": "finished", "winner": 0, "reason": "seat 1 resigned"},
            None,
        )
        assert [seat["name"] for seat in state["seats"]] == ["Ann", "Ben"]
        held = finished_in_memory(arena)
        assert match_id in held and len(held) == 2
    assert (arena.host.metrics.finished_matches, arena.host.metrics.finished_matches_evicted_total) == (2, 10)
    assert "plyarena_finished_matches 2\n" in arena.host.metrics.render(None)


async def test_a_flood_of_watched_finished_matches_never_forgets_a_live_or_an_open_match(
    start_server: StartServer, connect: Connect
) -> None:
    arena = await start_server(max_finished_in_memory=1)
    played = await finished_and_left(arena, connect, 3)
    alice, bob = await pair(arena, connect)
    live_id = (await open_match(alice, bob, "connect4"))["match_id"]
    await play_moves("connect4", (alice, bob), live_id, ["4"])
    open_id = (await alice.request("match.create", game="othello"))["match_id"]
    spectator = await connect.player(arena, "Sam")
    for match_id, _ in played + played:
        assert (await spectator.request("match.watch", match_id=match_id))["status"] == "finished"
        assert len(finished_in_memory(arena)) == 1
    assert {live_id, open_id} <= arena.host.matches.keys()
    assert arena.host.counts() == {"open_matches": 1, "live_matches": 1}
    await play_moves("connect4", (alice, bob), live_id, ["4", "3"], played=("4",))
    assert (await alice.expect(type_="moved", match_id=live_id, ply=1))["move"] == "4"


async def test_a_post_game_room_outlasts_a_flood_of_watched_finished_matches(
    start_server: StartServer, connect: Connect
) -> None:
    """Finished matches that no player follows any more go first: the players still in the one they
    just finished hear each other's words and rematch offer, and the rematch starts for both."""
    arena = await start_server(max_finished_in_memory=2)
    played = await finished_and_left(arena, connect, 3)
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await alice.request("resign", match_id=match_id)
    await bob.expect(type_="ended", match_id=match_id)
    spectator = await connect.player(arena, "Sam")
    for old_id, _ in played:
        await spectator.request("match.watch", match_id=old_id)
    assert finished_in_memory(arena) == {match_id, played[-1][0]}

    said = await bob.request("chat", match_id=match_id, text="gg, again?")
    assert (await alice.expect(type_="chat", match_id=match_id))["seq"] == said["seq"]
    assert (await alice.request("rematch.offer", match_id=match_id))["type"] == "rematch.offered"
    await bob.expect(type_="rematch.offered", match_id=match_id)
    new_id = (await bob.request("rematch.accept", match_id=match_id))["new_match_id"]
    await alice.expect(type_="rematch.started", match_id=match_id)
    for client, seat in ((alice, 1), (bob, 0)):
        state = await client.expect(type_="match.state", match_id=new_id)
        assert (state["status"], state["you"]) == ("live", seat)


async def test_a_pair_that_stays_in_many_finished_matches_holds_only_its_last_rooms(
    start_server: StartServer, connect: Connect
) -> None:
    """A pair that finishes game after game and follows them all is in its last 3 rooms, not in every
    one: the others go before the room another pair is still in."""
    arena = await start_server(max_finished_in_memory=4)
    alice, bob = await pair(arena, connect)
    room = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await alice.request("resign", match_id=room)
    await bob.expect(type_="ended", match_id=room)
    xena, yann = await connect.player(arena, "Xena"), await connect.player(arena, "Yann")
    theirs = []
    for _ in range(6):  # each followed by both to the end of the test
        match_id = (await open_match(xena, yann, "tictactoe"))["match_id"]
        assert (await yann.request("resign", match_id=match_id))["type"] == "ended"
        theirs.append(match_id)
    assert finished_in_memory(arena) == {room, *theirs[-3:]}
    assert (await alice.request("rematch.offer", match_id=room))["type"] == "rematch.offered"
    await bob.expect(type_="rematch.offered", match_id=room)


async def test_a_players_old_matches_loaded_by_others_do_not_push_out_their_room(
    start_server: StartServer, connect: Connect
) -> None:
    """Someone watching a player's old games loads them after the player's room: the player does not
    follow them, so they do not count among the rooms the player is in."""
    arena = await start_server(max_finished_in_memory=4)
    alice, bob = await pair(arena, connect)
    old = []
    for _ in range(3):
        match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
        assert (await bob.request("resign", match_id=match_id))["type"] == "ended"
        for client in (alice, bob):
            assert (await client.request("match.leave", match_id=match_id))["type"] == "ok"
        old.append(match_id)
    room = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await alice.request("resign", match_id=room)
    await bob.expect(type_="ended", match_id=room)
    others = await finished_and_left(arena, connect, 3)  # Alice's old games make room for these
    assert finished_in_memory(arena) == {room, *(match_id for match_id, _ in others)}
    spectator = await connect.player(arena, "Sam")
    for match_id in old:  # loaded again, after the room
        assert (await spectator.request("match.watch", match_id=match_id))["status"] == "finished"
    assert finished_in_memory(arena) == {room, *old}
    for match_id in old:  # watched again: the room is now the least recently used
        assert (await spectator.request("match.watch", match_id=match_id))["status"] == "finished"
    await finished_and_left(arena, connect, 1)  # room for one more: an old game goes, not the room
    assert room in finished_in_memory(arena)
    assert (await alice.request("rematch.offer", match_id=room))["type"] == "rematch.offered"
    await bob.expect(type_="rematch.offered", match_id=room)


def hold_the_next_commit(monkeypatch: pytest.MonkeyPatch) -> tuple[asyncio.Event, asyncio.Event]:
    """Make the next commit wait until the second event is set; the first is set once it waits. Later
    commits go through."""
    waiting, go_on = asyncio.Event(), asyncio.Event()

    def hold_once(store: Store, rows: tuple[Write, ...], commit: Commit) -> Awaitable[None] | None:
        if waiting.is_set():
            return None
        waiting.set()

        async def held() -> None:
            await go_on.wait()
            await commit(store, *rows)

        return held()

    intercept_commits(monkeypatch, hold_once)
    return waiting, go_on


async def test_a_finished_match_is_not_forgotten_while_a_request_acts_on_it(
    start_server: StartServer, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rematch accepted while the cap needs room: the match stays until its rematch is stored and
    both players have it (forgotten under the request, it would start for no one), and the cap is met
    again by the next match to end."""
    arena = await start_server(max_finished_in_memory=1)
    [(old_id, _)] = await finished_and_left(arena, connect, 1)
    alice, bob = await pair(arena, connect)
    spectator = await connect.player(arena, "Sam")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await alice.request("resign", match_id=match_id)
    await alice.request("rematch.offer", match_id=match_id)
    await bob.expect(type_="rematch.offered", match_id=match_id)
    assert finished_in_memory(arena) == {match_id}

    committing, go_on = hold_the_next_commit(monkeypatch)
    accepting = asyncio.create_task(bob.request("rematch.accept", match_id=match_id))
    try:
        await committing.wait()  # the rematch is being stored, under the match's lock
        assert (await spectator.request("match.watch", match_id=old_id))["status"] == "finished"
        assert finished_in_memory(arena) == {match_id, old_id}, "over the cap rather than under the request"
    finally:
        go_on.set()  # (else the request, and the server's shutdown, would wait for ever)
    new_id = (await accepting)["new_match_id"]
    await alice.expect(type_="rematch.started", match_id=match_id)
    for client in (alice, bob):
        assert (await client.expect(type_="match.state", match_id=new_id))["status"] == "live"

    await alice.request("resign", match_id=new_id)
    assert finished_in_memory(arena) == {new_id}


async def test_a_rematch_agreed_during_play_starts_as_the_last_move_lands(
    arena: Server, connect: Connect
) -> None:
    """A pair playing a series: with the rematch agreed before the end, the match that ends gives way to
    its rematch in the same step, so the server never holds fewer live matches between the two."""
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "tictactoe", time_control="1+0"))["match_id"]
    assert (await bob.request("rematch.offer", match_id=match_id))["type"] == "rematch.offered"
    agreed = await alice.request("rematch.offer", match_id=match_id)  # meets Bob's offer
    assert agreed["type"] == "rematch.agreed"
    await bob.expect(type_="rematch.agreed", match_id=match_id)
    assert arena.host.counts()["live_matches"] == 1

    moved = await play_moves("tictactoe", (alice, bob), match_id, ["a1", "a2", "b1", "b2", "c1"])
    assert arena.host.counts()["live_matches"] == 1, "the rematch took the finished match's place at once"
    for client in (alice, bob):
        ended = await client.expect(type_="ended", match_id=match_id)
        started = await client.expect(type_="rematch.started", match_id=match_id)
        assert ended["seq"] == moved[-1]["seq"] + 1 and started["seq"] == ended["seq"] + 1
    new_id = started["new_match_id"]
    for client, seat in ((alice, 1), (bob, 0)):
        state = await client.expect(type_="match.state", match_id=new_id)
        assert (state["status"], state["you"], state["rematch_agreed"]) == ("live", seat, False)
    assert await stored(arena, match_id) == ("finished", 0, "three in a row")
    record = await arena.store.get_match(new_id)
    assert record is not None and record.rematch_of == match_id and record.status == "live"
    assert [seat.player_name for seat in record.seats] == ["Bob", "Alice"]


async def test_the_players_go_on_to_their_rematch_and_off_the_finished_match(
    arena: Server, connect: Connect
) -> None:
    """Once the rematch starts, the old match sends its players nothing more and shows them away, with no
    ``presence`` event: its spectators learn where they went from ``rematch.started``."""
    alice, bob = await pair(arena, connect)
    spectator = await connect.player(arena, "Sam")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await spectator.request("match.watch", match_id=match_id)
    await alice.request("resign", match_id=match_id)
    await alice.request("rematch.offer", match_id=match_id)
    new_id = (await bob.request("rematch.accept", match_id=match_id))["new_match_id"]
    await alice.expect(type_="rematch.started", match_id=match_id)
    for client in (alice, bob):
        await client.expect(type_="match.state", match_id=new_id)
    seen = [message["type"] for message in match_events(await spectator.settle())]
    assert seen == ["ended", "rematch.offered", "rematch.started"], "no presence event"
    said = await bob.request("chat", match_id=match_id, text="that one was yours")
    assert (await spectator.expect(type_="chat", match_id=match_id))["seq"] == said["seq"]
    assert match_events(await alice.settle()) == [], "the old match says nothing more to its players"
    state = await spectator.request("match.watch", match_id=match_id)
    assert (state["status"], state["connected"], state["rematch_id"]) == ("finished", [False, False], new_id)
    refused = await alice.request("match.leave", match_id=match_id)
    assert (refused["type"], refused["code"]) == ("error", "not_found"), "nothing to leave"
    chat = await alice.request("chat", match_id=new_id, text="again!")
    assert chat["type"] == "chat" and (await bob.expect(type_="chat", match_id=new_id))["text"] == "again!"


async def test_chat_reaches_players_and_spectators_as_plain_text(arena: Server, connect: Connect) -> None:
    alice, bob = await pair(arena, connect)
    spectator = await connect.player(arena, "Sam")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await spectator.request("match.watch", match_id=match_id)
    line = "<b>gg</b>'); DROP TABLE moves; --"
    said = await alice.request("chat", match_id=match_id, text=f"  {line}  ")
    assert (said["type"], said["text"], said["name"], said["seat"]) == ("chat", line, "Alice", 0)
    for client in (bob, spectator):
        assert (await client.expect(type_="chat"))["text"] == line
    late = await connect.player(arena, "Late")
    state = await late.request("match.watch", match_id=match_id)
    assert state["chat"] == [{key: value for key, value in said.items() if key != "id"}], (
        "a late page sees it"
    )


async def test_a_resent_move_is_not_replayed_and_the_reply_is_the_state(
    arena: Server, connect: Connect
) -> None:
    alice, bob = await pair(arena, connect)
    match_id = (await open_match(alice, bob, "connect4"))["match_id"]
    await play_moves("connect4", (alice, bob), match_id, ["4"])
    await bob.expect(type_="moved", ply=0)
    again = await alice.request("move", match_id=match_id, ply=0, move="4")
    assert again["type"] == "match.state" and again["moves"] == ["4"] and again["turn"] == 1
    assert not [m for m in await bob.settle() if m["type"] == "moved"], "nothing was broadcast again"
    record = await arena.store.get_match(match_id)
    assert record is not None and [move.notation for move in record.moves] == ["4"]
