"""Fair use of bots over real sockets: a stalled bot game ends and frees its bot, a person holds only so
many bot games at once, and a fleet serves a second player while the first floods it with requests."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fixtures import FLEET_KEY, Connect, StartServer

from bots.fleet import Fleet, FleetConfig, parse_levels
from bots.link import Backoff
from bots.pool import SearchPool
from server.app import Server

StartFleet = Callable[..., Awaitable[Fleet]]


@pytest.fixture
def arena_db_url(tmp_path: Path) -> str:
    """SQLite only: the server's own suite covers PostgreSQL."""
    return f"sqlite+aiosqlite:///{tmp_path / 'arena.sqlite3'}"


@pytest.fixture(scope="module")
def pool() -> Iterator[SearchPool]:
    shared = SearchPool(1)
    yield shared
    shared.close()


@pytest.fixture
async def start_fleet(pool: SearchPool) -> AsyncIterator[StartFleet]:
    """``await start_fleet(server, **config)``: a running fleet that follows ``server``, closed after."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(server: Server, **options: Any) -> Fleet:
            defaults = {"levels": parse_levels("1-3"), "idle_wait_s": None, "fleet_key": FLEET_KEY}
            config = FleetConfig(**{**defaults, "backoff": Backoff(initial_s=0.05, max_s=0.5), **options})
            fleet = Fleet(pool, config)
            fleet.follow_server(server.ws_url)
            return await stack.enter_async_context(fleet)

        yield start


async def test_a_stalled_bot_game_is_aborted_and_its_bot_seated_for_the_next_request(
    start_server: StartServer, connect: Connect, start_fleet: StartFleet
) -> None:
    arena = await start_server(bot_idle_untimed_s=1.0)
    await start_fleet(arena, max_games=1)
    alice = await connect.player(arena, "Alice")
    stalled = (await alice.request("match.create", game="connect4", seat=0, bot={"level": 1}))["match_id"]
    await alice.expect(type_="seated", match_id=stalled, seat=1, timeout=5)
    bob = await connect.player(arena, "Bob")
    waiting = (await bob.request("match.create", game="connect4", seat=0, bot={"level": 1}))["match_id"]
    queued = await bob.expect(type_="bot.status", match_id=waiting, timeout=5)
    assert queued["bot_status"]["state"] == "queued", "the fleet's one game is Alice's"

    ended = await alice.expect(type_="ended", match_id=stalled, timeout=10)  # Alice never moves

    assert (ended["status"], ended["winner"]) == ("aborted", None)
    assert ended["reason"] == "seat 0 made no first move within 1 s"
    seated = await bob.expect(type_="seated", match_id=waiting, seat=1, timeout=10)
    assert seated["player"]["bot"], "the freed bot serves the request that waited"


async def test_a_person_who_stops_moving_against_a_bot_loses(
    start_server: StartServer, connect: Connect, start_fleet: StartFleet
) -> None:
    arena = await start_server(bot_idle_untimed_s=5.0)  # (the rule holds for the bot too: time to think)
    await start_fleet(arena, max_games=1)
    alice = await connect.player(arena, "Alice")
    match_id = (await alice.request("match.create", game="connect4", seat=0, bot={"level": 1}))["match_id"]
    started = await alice.expect(type_="started", match_id=match_id, timeout=10)
    answer = await alice.request("move", match_id=match_id, ply=0, move=started["legal"][0])
    assert answer["type"] == "moved"
    await alice.expect(type_="moved", match_id=match_id, ply=1, timeout=10)

    ended = await alice.expect(type_="ended", match_id=match_id, timeout=15)  # and then she stops

    assert (ended["status"], ended["winner"]) == ("finished", 1)
    assert ended["reason"] == "seat 0 left its turn unplayed for 5 s"
    record = await arena.store.get_match(match_id)
    assert record is not None and record.status == "finished", "stored as it was announced"


async def test_a_third_bot_game_is_refused_and_not_made(arena: Server, connect: Connect) -> None:
    alice = await connect.player(arena, "Alice")
    first = (await alice.request("match.create", game="connect4", seat=0, bot={"level": 1}))["match_id"]
    second = (await alice.request("match.create", game="tictactoe", seat=0, bot={"level": 2}))["match_id"]

    refused = await alice.request("match.create", game="connect4", seat=0, bot={"level": 3})

    assert (refused["type"], refused["code"]) == ("error", "too_many_bot_games")
    assert sorted(arena.host.unfinished_of(alice.player_id)) == sorted([first, second]), "nothing made"
    assert len(arena.lobby.entries) == 2
    plain = await alice.request("match.create", game="connect4", seat=0)
    assert plain["type"] == "match.state", "a match against a person is not a bot game"

    robot = await connect.player(arena, "Robot", bot=True)
    robots = (await robot.request("match.create", game="connect4", seat=1))["match_id"]
    joining = await alice.request("match.join", match_id=robots)
    assert (joining["type"], joining["code"]) == ("error", "too_many_bot_games"), "a bot sits in it"
    asking = {"game": "tictactoe", "seat": 0}
    asks = [await robot.request("match.create", **asking, bot={"level": n}) for n in (1, 2, 3)]
    assert [ask["type"] for ask in asks] == ["match.state", "match.state", "error"], "bot: true exempts none"
    fleet = await connect.player(arena, "fleet-f1", bot=True, fleet_key=FLEET_KEY)
    asks = [await fleet.request("match.create", **asking, bot={"level": n}) for n in (1, 2, 3)]
    assert [ask["type"] for ask in asks] == ["match.state"] * 3, "a trusted fleet is capped by its own size"
    answering = await connect.player(arena, "Answerer", bot=True)
    answers = [await answering.request("match.join", match_id=ask["match_id"]) for ask in asks]
    assert [answer["status"] for answer in answers] == ["live"] * 3, "a bot serving requests asks for none"

    await alice.request("match.leave", match_id=first)  # cancels the request: one bot game fewer
    assert (await alice.request("match.join", match_id=robots))["status"] == "live"
    await alice.request("resign", match_id=robots)
    third = await alice.request("match.create", game="connect4", seat=0, bot={"level": 3})
    assert third["type"] == "match.state", "the resigned game no longer counts"
    rematch = await alice.request("rematch.offer", match_id=robots)
    assert (rematch["type"], rematch["code"]) == ("error", "too_many_bot_games"), "a rematch is a bot game"


async def test_a_second_player_is_seated_before_the_first_players_flood(
    start_server: StartServer, connect: Connect, start_fleet: StartFleet
) -> None:
    arena = await start_server(max_bot_games=10)
    await start_fleet(arena, max_games=1)
    alice = await connect.player(arena, "Alice")
    playing = (await alice.request("match.create", game="connect4", seat=0, bot={"level": 1}))["match_id"]
    await alice.expect(type_="seated", match_id=playing, seat=1, timeout=5)
    flood = [
        (await alice.request("match.create", game="connect4", seat=0, bot={"level": 1}))["match_id"]
        for _ in range(3)
    ]
    note = await alice.expect(type_="bot.status", match_id=flood[2], timeout=5)
    assert "number 3 in line" in note["bot_status"]["reason"]

    bob = await connect.player(arena, "Bob")
    asked = (await bob.request("match.create", game="connect4", seat=0, bot={"level": 1}))["match_id"]
    bobs_note = await bob.expect(type_="bot.status", match_id=asked, timeout=5)
    assert "number 2 in line" in bobs_note["bot_status"]["reason"], "after Alice's first, before her others"

    def fourth(message: dict[str, Any]) -> bool:
        return "number 4 in line" in message["bot_status"]["reason"]

    moved_back = await alice.expect(type_="bot.status", match_id=flood[2], where=fourth, timeout=5)
    assert moved_back["bot_status"]["state"] == "queued", "Alice's last request moved back behind Bob's"

    await alice.request("resign", match_id=playing)
    await alice.expect(type_="seated", match_id=flood[0], seat=1, timeout=10)
    await alice.request("resign", match_id=flood[0])
    seated = await bob.expect(type_="seated", match_id=asked, seat=1, timeout=10)

    assert seated["player"]["bot"]
    assert [arena.host.matches[match_id].match.status for match_id in flood[1:]] == ["open", "open"]
