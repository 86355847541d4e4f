"""Bots as ordinary clients, over real sockets: fleets seat them, they play, they survive failures.

Every server here is a real one on a free port; every bot reaches it only over
the WebSocket (and the fleet over the lobby feed or MQTT), as a third-party bot would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import multiprocessing
import os
import signal
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from support.client import ArenaClient
from support.fixtures import FLEET_KEY, Connect, StartServer
from support.play import play_against_bot
from support.process import free_port
from support.waiting import wait_until

from bots import wire
from bots.client import BotPlayer, BotSpec
from bots.fleet import GAMES_PER_CONNECTION, Fleet, FleetConfig, parse_levels
from bots.fleet_state import FleetState
from bots.levels import level
from bots.link import Backoff
from bots.pool import SearchPool, ThinkRequest, ThinkResult
from games import get_game
from server.app import Server, running_server
from server.config import ServerConfig
from server.storage.records import EngineInfo

FAST_BACKOFF = Backoff(initial_s=0.05, max_s=0.5)


@pytest.fixture
def arena_db_url(tmp_path: Path) -> str:
    """SQLite only: the server's own suite covers PostgreSQL; these tests are about the bots."""
    return f"sqlite+aiosqlite:///{tmp_path / 'arena.sqlite3'}"


class WatchedPool(SearchPool):
    """A search pool that counts the searches in flight, so a test can strike mid-search."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.in_flight = 0

    async def think(self, request: ThinkRequest) -> ThinkResult:
        self.in_flight += 1
        try:
            return await super().think(request)
        finally:
            self.in_flight -= 1


@pytest.fixture(scope="module")
def pool() -> Iterator[WatchedPool]:
    """One pool for the module, as one fleet shares one pool among all its bots."""
    shared = WatchedPool(2)
    yield shared
    shared.close()


StartFleet = Callable[..., Awaitable[Fleet]]


@pytest.fixture
async def start_fleet(pool: WatchedPool) -> AsyncIterator[StartFleet]:
    """``await start_fleet(server=..., mqtt=..., state=..., **config)``: a running fleet, closed after the
    test."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(
            *,
            server: Server | None = None,
            mqtt: str | None = None,
            announce: Any = None,
            state: FleetState | None = None,
            **options: Any,
        ) -> Fleet:
            config = FleetConfig(**{"levels": parse_levels("1-3"), "idle_wait_s": None,
                                    "backoff": FAST_BACKOFF, "fleet_key": FLEET_KEY, **options})  # fmt: skip
            fleet = Fleet(pool, config, announce=announce, state=state)
            if server is not None:
                fleet.follow_server(server.ws_url)
            if mqtt is not None:
                fleet.follow_mqtt(mqtt)
            return await stack.enter_async_context(fleet)

        yield start


async def finish(player: BotPlayer, match_id: str, timeout: float = 60) -> wire.MatchResult:
    await wait_until(lambda: match_id in player.results, timeout, f"the end of match {match_id}")
    return player.results[match_id]


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


async def api(server: Server, path: str) -> Any:
    return await asyncio.to_thread(get_json, f"{server.http_url}{path}")


def rules_reason(game: str, record: dict[str, Any]) -> str | None:
    """Why the rules say the stored game is over (``None`` if they say it is not)."""
    outcome = get_game(game).replay(move["move"] for move in record["moves"]).outcome()
    return None if outcome is None else outcome.reason


# ---------------------------------------------------------------------- playing


@pytest.mark.parametrize("game", ["tictactoe", "connect4", "othello", "checkers"])
async def test_a_bot_plays_a_bot_that_a_fleet_seats_to_the_end(
    game: str, arena: Server, pool: WatchedPool, start_fleet: StartFleet
) -> None:
    await start_fleet(server=arena)
    async with BotPlayer(arena.ws_url, BotSpec.of(game, 2), pool, backoff=FAST_BACKOFF) as host:
        match_id = await host.create(game, bot=wire.BotRequest(level=1))
        result = await finish(host, match_id)
        session = host.sessions[match_id]

    record = await api(arena, f"/api/matches/{match_id}")
    assert result.status == "finished" and result.reason == rules_reason(game, record)
    names = sorted(seat["player"]["name"] for seat in record["seats"])
    assert names == sorted([BotSpec.of(game, 1).name, BotSpec.of(game, 2).name])
    assert all(seat["player"]["bot"] for seat in record["seats"])
    assert [move["move"] for move in record["moves"]] == session.moves
    for move in record["moves"]:  # every move carries the search behind it, stored for replays
        engine = move["engine"]
        assert engine["source"] == "searched" and engine["time_ms"] >= 0
        assert engine["depth"] >= 1 and engine["nodes"] >= 1 and engine["pv"][0] == move["move"]


async def stored_engine(arena: Server, match_id: str, ply: int) -> EngineInfo:
    """The search a bot sent with a move: stored, though kept from its opponent until the game is over."""
    record = await arena.store.get_match(match_id)
    assert record is not None
    engine = record.moves[ply].engine
    assert engine is not None, f"no search stored with move {ply}"
    return engine


async def test_a_lobby_asking_for_a_level_3_connect4_bot_gets_it_within_a_second(
    arena: Server, connect: Connect, start_fleet: StartFleet
) -> None:
    await start_fleet(server=arena)
    await asyncio.sleep(0.2)  # the fleet has its lobby snapshot
    alice = await connect.player(arena, "Alice")
    started = time.monotonic()
    state = await alice.request("match.create", game="connect4", seat=1, bot={"level": 3})
    seated = await alice.expect(type_="seated", match_id=state["match_id"], seat=0, timeout=5)
    elapsed = time.monotonic() - started

    assert elapsed < 1.0, f"the bot took {elapsed:.3f} s to sit down"
    assert (seated["player"]["name"], seated["player"]["bot"]) == (BotSpec.of("connect4", 3).name, True)
    first = await alice.expect(type_="moved", match_id=state["match_id"], ply=0, timeout=10)
    assert first["seat"] == 0 and "engine" not in first  # (kept from Alice until the game is over)
    engine = await stored_engine(arena, state["match_id"], 0)
    assert engine.depth is not None and engine.depth >= 1 and engine.pv[0] == first["move"]
    assert engine.source == "searched"


async def test_the_perfect_level_says_its_first_move_came_from_its_book(
    arena: Server, connect: Connect, start_fleet: StartFleet
) -> None:
    await start_fleet(server=arena, levels=parse_levels("connect4:8"))
    alice = await connect.player(arena, "Alice")
    state = await alice.request("match.create", game="connect4", seat=1, bot={"level": 8})
    first = await alice.expect(type_="moved", match_id=state["match_id"], ply=0, timeout=10)
    await alice.request("resign", match_id=state["match_id"])
    record = await api(arena, f"/api/matches/{state['match_id']}")
    engine = record["moves"][0]["engine"]
    assert (engine["source"], engine["depth"], engine["nodes"]) == ("book", None, None)  # nothing searched
    assert engine["pv"] == [first["move"]] and engine["score"] > 0 and engine["time_ms"] >= 0


async def test_a_person_alone_in_a_public_lobby_gets_a_bot_after_the_wait(
    arena: Server, connect: Connect, start_fleet: StartFleet
) -> None:
    await start_fleet(server=arena, idle_wait_s=0.6, public_level=2)
    alice = await connect.player(arena, "Alice")
    started = time.monotonic()
    state = await alice.request("match.create", game="tictactoe", seat=0)
    private = await alice.request("match.create", game="tictactoe", seat=0, visibility="private")
    seated = await alice.expect(type_="seated", match_id=state["match_id"], seat=1, timeout=5)
    waited = time.monotonic() - started

    assert 0.6 <= waited < 3.0
    assert seated["player"]["name"] == BotSpec.of("tictactoe", 2).name and seated["player"]["bot"]
    assert not [m for m in await alice.settle(0.8) if m.get("match_id") == private["match_id"]]


async def test_a_full_fleet_says_so_and_seats_the_waiting_lobby_when_a_game_ends(
    arena: Server, connect: Connect, start_fleet: StartFleet
) -> None:
    async def announce(topic: str, payload: bytes) -> None:
        await arena.bus.publish(topic, payload, retain=True)

    fleet = await start_fleet(server=arena, max_games=1, announce=announce)
    alice = await connect.player(arena, "Alice")
    first = await alice.request("match.create", game="connect4", seat=0, bot={"level": 1})
    await alice.expect(type_="seated", match_id=first["match_id"], seat=1)
    second = await alice.request("match.create", game="connect4", seat=0, bot={"level": 2})

    await wait_until(lambda: fleet.capacity.full, 5, "the fleet to fill")

    def offer_says_full() -> bool:
        offer = arena.bot_catalog.offers.get(fleet.config.fleet_id)
        return offer is not None and offer.full

    await wait_until(offer_says_full, 5, "the offer to say full")
    listing = await api(arena, "/api/bots")
    assert listing["fleets"] == [{"fleet": fleet.config.fleet_id, "max_games": 1, "playing": 1, "full": True}]
    assert not any(bot["available"] for bot in listing["games"]["connect4"])
    note = (await alice.expect(type_="bot.status", match_id=second["match_id"], timeout=5))["bot_status"]
    assert note["state"] == "queued" and fleet.config.fleet_id in note["reason"]
    lobby = await alice.request("lobby.subscribe")
    entry = next(entry for entry in lobby["matches"] if entry["match_id"] == second["match_id"])
    assert entry["bot_status"] == note, "the waiting request's lobby entry says it is queued"
    assert not [m for m in await alice.settle(0.5) if m.get("match_id") == second["match_id"]]

    await alice.request("resign", match_id=first["match_id"])
    seated = await alice.expect(type_="seated", match_id=second["match_id"], seat=1, timeout=5)
    assert seated["player"]["name"] == BotSpec.of("connect4", 2).name


async def test_a_waiting_request_is_told_its_new_place_in_line_as_the_line_moves(
    start_server: StartServer, connect: Connect, start_fleet: StartFleet
) -> None:
    arena = await start_server(max_bot_games=3)  # (one person's three requests: past the default cap)
    await start_fleet(server=arena, max_games=1)
    alice = await connect.player(arena, "Alice")
    first = await alice.request("match.create", game="connect4", seat=0, bot={"level": 1})
    await alice.expect(type_="seated", match_id=first["match_id"], seat=1)
    second = await alice.request("match.create", game="connect4", seat=0, bot={"level": 1})
    third = await alice.request("match.create", game="connect4", seat=0, bot={"level": 1})
    note = await alice.expect(type_="bot.status", match_id=third["match_id"], timeout=5)
    assert "number 2 in line" in note["bot_status"]["reason"]

    await alice.request("match.leave", match_id=second["match_id"])  # the request ahead of it goes
    moved_up = await alice.expect(type_="bot.status", match_id=third["match_id"], timeout=5)
    assert moved_up["bot_status"]["state"] == "queued"
    assert "number 1 in line" in moved_up["bot_status"]["reason"]


async def test_a_fleet_without_the_key_plays_but_its_notes_are_refused(
    arena: Server, connect: Connect, start_fleet: StartFleet, caplog: pytest.LogCaptureFixture
) -> None:
    """``bot: true`` grants nothing: a fleet the operator did not give the key is an ordinary client."""
    await start_fleet(server=arena, max_games=1, fleet_key=None)
    alice = await connect.player(arena, "Alice")
    first = await alice.request("match.create", game="connect4", seat=0, bot={"level": 1})
    await alice.expect(type_="seated", match_id=first["match_id"], seat=1, timeout=5)
    with caplog.at_level(logging.INFO, logger="bots.fleet"):
        second = await alice.request("match.create", game="connect4", seat=0, bot={"level": 1})
        await wait_until(lambda: "not_a_fleet" in caplog.text, 5, "the fleet's note to be refused")
    assert arena.lobby.entries[second["match_id"]].bot_status is None
    assert not [m for m in await alice.settle(0.2) if m["type"] == "bot.status"]


async def test_a_fleet_with_a_wrong_key_is_refused_at_hello_and_says_why(
    arena: Server, start_fleet: StartFleet, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="bots.link"):
        await start_fleet(server=arena, fleet_key="not-" + FLEET_KEY)
        await wait_until(lambda: "bad_fleet_key" in caplog.text, 5, "the refusal to be logged")
    assert FLEET_KEY not in caplog.text, "the key itself is logged nowhere"


async def test_api_bots_lists_what_a_running_fleet_offers(arena: Server, start_fleet: StartFleet) -> None:
    async def announce(topic: str, payload: bytes) -> None:
        await arena.bus.publish(topic, payload, retain=True)

    assert await api(arena, "/api/bots") == {"games": {}, "fleets": []}
    fleet = await start_fleet(server=arena, levels=parse_levels("connect4:1-2,othello:3"), announce=announce)
    await wait_until(lambda: bool(arena.bot_catalog.offers), 5, "the offer")
    listing = await api(arena, "/api/bots")
    assert sorted(listing["games"]) == ["connect4", "othello"]
    assert [(bot["level"], bot["player"], bot["available"]) for bot in listing["games"]["connect4"]] == [
        (1, BotSpec.of("connect4", 1).name, True),
        (2, BotSpec.of("connect4", 2).name, True),
    ]
    othello = listing["games"]["othello"]
    assert [(bot["level"], bot["style"], bot["player"]) for bot in othello] == [
        (3, level("othello", 3).style, BotSpec.of("othello", 3).name)
    ]
    assert othello[0]["name"] and othello[0]["description"]
    await fleet.close()
    await wait_until(lambda: not arena.bot_catalog.offers, 5, "the offer to be withdrawn")


async def test_a_bot_declines_a_draw_before_it_has_searched_accepts_one_it_cannot_win_and_rematches(
    arena: Server, connect: Connect, start_fleet: StartFleet
) -> None:
    await start_fleet(server=arena, levels=parse_levels("tictactoe:8"))
    alice = await connect.player(arena, "Alice")
    state = await alice.request("match.create", game="tictactoe", seat=0, bot={"level": 8})
    match_id = state["match_id"]
    await alice.expect(type_="started", match_id=match_id)
    assert (await alice.request("draw.offer", match_id=match_id))["type"] == "draw.offered"
    await alice.expect(type_="draw.declined", match_id=match_id, seat=1)  # it has not searched yet

    await alice.request("move", match_id=match_id, ply=0, move="b2")
    await alice.expect(type_="moved", match_id=match_id, ply=1)  # perfect play: the game is a draw
    await alice.request("draw.offer", match_id=match_id)
    ended = await alice.expect(type_="ended", match_id=match_id)
    assert (ended["winner"], ended["reason"]) == (None, "draw by agreement")

    assert (await alice.request("rematch.offer", match_id=match_id))["type"] == "rematch.offered"
    started = await alice.expect(type_="rematch.started", match_id=match_id)  # the bot accepted
    rematch = await alice.expect(type_="match.state", match_id=started["new_match_id"])
    assert rematch["you"] == 1 and rematch["status"] == "live"
    first = await alice.expect(type_="moved", match_id=started["new_match_id"], ply=0)
    assert first["seat"] == 0 and (await stored_engine(arena, started["new_match_id"], 0)).score == 0

    # Asked for during the game, the next rematch is agreed at once and starts as this game ends.
    second = started["new_match_id"]
    assert (await alice.request("rematch.offer", match_id=second))["type"] == "rematch.offered"
    await alice.expect(type_="rematch.agreed", match_id=second)  # the bot accepted
    assert (await alice.request("resign", match_id=second))["type"] == "ended"
    started = await alice.expect(type_="rematch.started", match_id=second)
    third = await alice.expect(type_="match.state", match_id=started["new_match_id"])
    assert third["you"] == 0 and third["status"] == "live"


async def test_a_busy_bot_spreads_its_games_over_connections_yet_stays_one_player(
    start_server: StartServer, connect: Connect, start_fleet: StartFleet
) -> None:
    arena = await start_server(max_bot_games=GAMES_PER_CONNECTION + 1)  # (one person asks for them all)
    fleet = await start_fleet(server=arena, max_games=GAMES_PER_CONNECTION + 1)
    alice = await connect.player(arena, "Alice")
    match_ids = []
    for _ in range(GAMES_PER_CONNECTION + 1):
        state = await alice.request("match.create", game="connect4", seat=0, bot={"level": 1})
        match_ids.append(state["match_id"])
    seated = [await alice.expect(type_="seated", match_id=match_id, seat=1) for match_id in match_ids]

    assert len({message["player"]["id"] for message in seated}) == 1
    (shards,) = fleet.players.values()
    assert [player.playing for player in shards] == [GAMES_PER_CONNECTION, 1]


# ---------------------------------------------------------------------- failures


async def test_a_worker_killed_mid_search_is_replaced_and_the_game_finishes(
    arena: Server, pool: WatchedPool, start_fleet: StartFleet
) -> None:
    await start_fleet(server=arena, levels=parse_levels("othello:8"))
    replacements = pool.replacements
    async with BotPlayer(arena.ws_url, BotSpec.of("othello", 1), pool, backoff=FAST_BACKOFF) as host:
        # The fleet's top-level bot moves first: a 10-ply search, about a tenth of a second.
        match_id = await host.create("othello", seat=1, time_control="0:30+0", bot=wire.BotRequest(level=8))
        await wait_until(lambda: pool.in_flight > 0, 10, "a search")
        await asyncio.sleep(0.03)
        workers = multiprocessing.active_children()
        assert workers, "no search worker to kill"
        os.kill(workers[0].pid, signal.SIGKILL)
        result = await finish(host, match_id)
    record = await api(arena, f"/api/matches/{match_id}")

    assert pool.replacements == replacements + 1
    assert result.status == "finished" and result.reason == rules_reason("othello", record)
    assert len(record["moves"]) >= 7


async def test_bots_never_lose_on_time_with_a_short_clock(
    arena: Server, pool: WatchedPool, start_fleet: StartFleet
) -> None:
    # Level 7 would think for up to 4 s a move; with 5 s for the whole game it must budget.
    await start_fleet(server=arena, levels=parse_levels("connect4:7"))
    async with BotPlayer(arena.ws_url, BotSpec.of("connect4", 7), pool, backoff=FAST_BACKOFF) as host:
        match_id = await host.create("connect4", time_control="0:05+0", bot=wire.BotRequest(level=7))
        result = await finish(host, match_id, timeout=30)
    assert "ran out of time" not in result.reason, result
    assert result.status == "finished"


async def test_bots_resume_their_game_after_the_server_restarts(
    tmp_path: Path, pool: WatchedPool, start_fleet: StartFleet
) -> None:
    config = ServerConfig(port=0, db_url=f"sqlite+aiosqlite:///{tmp_path / 'restart.sqlite3'}",
                          instance_id="bots-restart", grace_s=30.0, fleet_key=FLEET_KEY)  # fmt: skip
    async with contextlib.AsyncExitStack() as stack:
        async with running_server(config) as server:
            config = replace(config, port=server.port)
            fleet = await start_fleet(server=server, levels=parse_levels("connect4:3"))
            host = BotPlayer(server.ws_url, BotSpec.of("connect4", 3), pool, backoff=FAST_BACKOFF)
            stack.push_async_callback(host.close)
            match_id = await host.create("connect4", bot=wire.BotRequest(level=3))
            await wait_until(lambda: len(host.sessions[match_id].moves) >= 4, 30, "four moves")
            (guest,) = [player for player in fleet.bots() if player.sessions]
            player_ids = (player_id(host), player_id(guest))
        before = len(host.sessions[match_id].moves)  # the server went away in the middle of the game...

        async with running_server(config) as server:  # ... and comes back on the same port
            result = await finish(host, match_id)
            record = await api(server, f"/api/matches/{match_id}")

    assert result.status == "finished" and result.reason == rules_reason("connect4", record), result
    assert host.link.connections >= 2 and guest.link.connections >= 2
    assert (player_id(host), player_id(guest)) == player_ids
    assert len(record["moves"]) > before
    assert [move["ply"] for move in record["moves"]] == list(range(len(record["moves"])))


class GatedPool:
    """A search pool (duck-typed) whose searches wait for ``gate``: a bot using it holds its moves until a
    test opens the gate."""

    def __init__(self, pool: SearchPool, gate: asyncio.Event) -> None:
        self.pool = pool
        self.gate = gate

    async def think(self, request: ThinkRequest) -> ThinkResult:
        await self.gate.wait()
        return await self.pool.think(request)


async def test_after_the_server_restarts_each_connection_of_a_busy_bot_plays_on_in_its_own_games(
    tmp_path: Path, pool: WatchedPool, start_fleet: StartFleet
) -> None:
    config = ServerConfig(port=0, db_url=f"sqlite+aiosqlite:///{tmp_path / 'restart.sqlite3'}",
                          instance_id="bots-restart-shards", grace_s=30.0, fleet_key=FLEET_KEY,
                          max_bot_games=GAMES_PER_CONNECTION + 1)  # fmt: skip
    games = GAMES_PER_CONNECTION + 1  # (one host asks for them all: the server's cap on bot games allows it)
    spec = BotSpec.of("tictactoe", 1)
    gate = asyncio.Event()  # the host holds its moves until the server is back
    async with contextlib.AsyncExitStack() as stack:
        async with running_server(config) as server:
            config = replace(config, port=server.port)
            fleet = await start_fleet(server=server, levels=parse_levels("tictactoe:1"), max_games=games)
            host = BotPlayer(server.ws_url, BotSpec.of("tictactoe", 2), GatedPool(pool, gate),  # type: ignore[arg-type]
                             backoff=FAST_BACKOFF)  # fmt: skip
            stack.push_async_callback(host.close)
            match_ids = [
                await host.create("tictactoe", seat=1, bot=wire.BotRequest(level=1)) for _ in range(games)
            ]
            await wait_until(
                lambda: all(host.sessions[m].moves for m in match_ids), 10, "the bot's first moves"
            )
            shards = fleet.players[(server.ws_url, spec)]
            held = [set(shard.sessions) for shard in shards]
            assert sorted(map(len, held)) == [1, GAMES_PER_CONNECTION]

        async with running_server(config) as server:  # back on the same port, its matches restored
            await wait_until(
                lambda: all(shard.link.connections >= 2 for shard in shards), 10, "reconnections"
            )
            bot_id = player_id(shards[0])

            def followers(match_id: str) -> list[str | None]:
                return [watcher.player_id for watcher in server.host.matches[match_id].watchers]

            await wait_until(lambda: all(bot_id in followers(m) for m in match_ids), 10, "the bot to follow")
            assert all(followers(match_id).count(bot_id) == 1 for match_id in match_ids), "by one connection"
            assert [set(shard.sessions) for shard in shards] == held, "no connection took up another's game"
            gate.set()
            results = [await finish(host, match_id) for match_id in match_ids]

    assert all(result.status == "finished" for result in results), results
    assert fleet.playing == 0


def player_id(player: BotPlayer) -> str:
    """Who the server last welcomed ``player`` as."""
    assert player.link.welcome is not None
    return player.link.welcome.player.id


# ---------------------------------------------------------------------- restarting a fleet


async def test_a_fleet_restarted_with_its_state_file_plays_on_in_its_game_as_the_same_bot(
    arena: Server, connect: Connect, pool: WatchedPool, tmp_path: Path
) -> None:
    path = tmp_path / "fleet.json"
    name = BotSpec.of("tictactoe", 1).name
    config = FleetConfig(
        levels=parse_levels("tictactoe:1"), max_games=1, idle_wait_s=None, backoff=FAST_BACKOFF
    )
    alice = await connect.player(arena, "Alice")

    before = Fleet(pool, config, state=FleetState.open(path))
    before.follow_server(arena.ws_url)
    async with before:
        state = await alice.request("match.create", game="tictactoe", seat=0, bot={"level": 1})
        match_id = state["match_id"]
        seated = await alice.expect(type_="seated", match_id=match_id, seat=1, timeout=10)
        bot_id = seated["player"]["id"]
        assert (await alice.request("move", match_id=match_id, ply=0, move="b2"))["type"] == "moved"
        answer = await alice.expect(type_="moved", match_id=match_id, ply=1, seat=1)
    # Closed: its connections dropped, with no leave and no resign, as a killed process's would be.
    away = await alice.expect(type_="presence", match_id=match_id, seat=1, connected=False)
    assert away["grace_ms"] > 0, "the server gives the bot its grace to come back"
    token = FleetState.load(path).token(arena.ws_url, name)
    assert token is not None

    state_file = FleetState.open(path)
    written = path.stat().st_ino  # every write replaces the file: a new inode
    after = Fleet(pool, config, state=state_file)  # a new fleet, as a restarted process makes
    after.follow_server(arena.ws_url)
    async with after:
        await alice.expect(type_="presence", match_id=match_id, seat=1, connected=True, timeout=10)
        (bot,) = after.bots()
        assert player_id(bot) == bot_id and bot.link.token == token
        assert after.capacity.in_use == 1 and after.capacity.full, "the resumed game counts"
        ended = await play_against_bot(alice, "tictactoe", match_id, ("b2", answer["move"]))
        await wait_until(lambda: after.capacity.in_use == 0, 5, "the game's place to come back")

    record = await api(arena, f"/api/matches/{match_id}")
    assert (record["status"], ended["reason"]) == ("finished", rules_reason("tictactoe", record))
    assert record["seats"][1]["player"]["id"] == bot_id
    assert [move["ply"] for move in record["moves"]] == list(range(len(record["moves"])))
    assert len(record["moves"]) >= 4, "the bot moved again after the restart"
    assert path.stat().st_ino == written, "the same token again: the file is not rewritten"


async def test_a_fleet_restarted_with_more_games_than_a_connection_plays_spreads_them_over_connections(
    arena: Server, connect: Connect, pool: WatchedPool, tmp_path: Path
) -> None:
    path = tmp_path / "fleet.json"
    games = 2 * GAMES_PER_CONNECTION + 1  # a connection's worth, another's, and one more
    spec = BotSpec.of("tictactoe", 1)
    config = FleetConfig(
        levels=parse_levels("tictactoe:1"), max_games=games, idle_wait_s=None, backoff=FAST_BACKOFF
    )
    # One person per game: one connection playing them all would outrun the server's rate limit.
    people = [await connect.player(arena, f"Person {number}") for number in range(games)]

    played: dict[str, tuple[ArenaClient, tuple[str, ...]]] = {}
    before = Fleet(pool, config, state=FleetState.open(path))
    before.follow_server(arena.ws_url)
    async with before:
        for person in people:
            state = await person.request("match.create", game="tictactoe", seat=0, bot={"level": 1})
            played[state["match_id"]] = (person, ())
        for match_id, (person, _) in played.items():
            seated = await person.expect(type_="seated", match_id=match_id, seat=1, timeout=10)
            bot_id = seated["player"]["id"]
            assert (await person.request("move", match_id=match_id, ply=0, move="b2"))["type"] == "moved"
            answer = await person.expect(type_="moved", match_id=match_id, ply=1, seat=1)
            played[match_id] = (person, ("b2", answer["move"]))
        assert len(before.players[(arena.ws_url, spec)]) == 3, "the fleet played them on three connections"
    for match_id, (person, _) in played.items():  # closed as a killed process would be: no leave, no resign
        await person.expect(type_="presence", match_id=match_id, seat=1, connected=False)
    token = FleetState.load(path).token(arena.ws_url, spec.name)

    after = Fleet(pool, config, state=FleetState.open(path))
    after.follow_server(arena.ws_url)
    async with after:
        for match_id, (person, _) in played.items():
            await person.expect(type_="presence", match_id=match_id, seat=1, connected=True, timeout=10)
        shards = after.players[(arena.ws_url, spec)]

        def resumed() -> list[str]:
            """Each game a connection of the bot has the state of, once per connection that has it."""
            return [
                match_id for shard in shards for match_id, session in shard.sessions.items() if session.log
            ]

        await wait_until(lambda: len(resumed()) >= games, 10, "the bot to have the state of every game")
        assert sorted(resumed()) == sorted(played), "every game is resumed, and by one connection only"
        sizes = sorted(len(shard.sessions) for shard in shards)
        assert sizes == [1, GAMES_PER_CONNECTION, GAMES_PER_CONNECTION], "no more than a connection may play"
        assert {shard.link.token for shard in shards} == {token}
        assert {player_id(shard) for shard in shards} == {bot_id}, "one player over every connection"
        for match_id in played:  # the server agrees: one connection of the bot follows each game
            watchers = arena.host.matches[match_id].watchers
            assert [watcher.player_id for watcher in watchers].count(bot_id) == 1
        assert after.capacity.in_use == games and after.capacity.full, "every resumed game counts"

        ended = await asyncio.gather(
            *(
                play_against_bot(person, "tictactoe", match_id, moves)
                for match_id, (person, moves) in played.items()
            )
        )
        await wait_until(lambda: after.capacity.in_use == 0, 5, "every game's place to come back")

    for match_id, last in zip(played, ended, strict=True):
        record = await api(arena, f"/api/matches/{match_id}")
        assert (record["status"], last["reason"]) == ("finished", rules_reason("tictactoe", record))
        assert record["seats"][1]["player"]["id"] == bot_id
        assert len(record["moves"]) >= 4, "the bot moved again after the restart"


async def test_a_state_file_that_cannot_be_written_in_play_is_warned_of_and_the_bots_play_on(
    arena: Server, connect: Connect, start_fleet: StartFleet, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "gone").mkdir()
    path = tmp_path / "gone" / "fleet.json"
    fleet = await start_fleet(server=arena, state=FleetState.open(path))
    path.unlink()
    (tmp_path / "gone").rmdir()  # its directory removed while the fleet runs

    alice = await connect.player(arena, "Alice")
    state = await alice.request("match.create", game="tictactoe", seat=0, bot={"level": 1})
    await alice.expect(type_="seated", match_id=state["match_id"], seat=1, timeout=10)
    await alice.request("move", match_id=state["match_id"], ply=0, move="b2")
    await alice.expect(type_="moved", match_id=state["match_id"], ply=1, seat=1)
    warnings = [record.getMessage() for record in caplog.records if record.levelname == "WARNING"]
    assert f"cannot write fleet state {path}: No such file or directory; playing on" in "\n".join(warnings)
    assert fleet.playing == 1


async def test_a_kept_token_the_server_refuses_is_replaced_and_its_idle_bot_closed(
    arena: Server, connect: Connect, start_fleet: StartFleet, tmp_path: Path
) -> None:
    path = tmp_path / "fleet.json"
    name = BotSpec.of("tictactoe", 1).name
    stale = "a token of another database"
    FleetState.open(path).remember(arena.ws_url, name, stale)

    fleet = await start_fleet(server=arena, state=FleetState.open(path))

    def kept() -> str | None:
        return FleetState.load(path).token(arena.ws_url, name)

    await wait_until(lambda: kept() != stale, 10, "the new player's token in the file")
    await wait_until(lambda: not fleet.bots(), 10, "the bot with nothing to resume to be closed")
    new_token = kept()
    assert new_token is not None
    known_as = await connect.player(arena, token=new_token, bot=True)

    alice = await connect.player(arena, "Alice")
    state = await alice.request("match.create", game="tictactoe", seat=0, bot={"level": 1})
    seated = await alice.expect(type_="seated", match_id=state["match_id"], seat=1, timeout=10)
    assert seated["player"]["id"] == known_as.player_id, "seated later, the bot is the player the file keeps"
    assert kept() == new_token


async def test_a_kept_bot_whose_server_does_not_answer_is_closed_after_the_patience(
    arena: Server, start_fleet: StartFleet, tmp_path: Path
) -> None:
    path = tmp_path / "fleet.json"
    gone = f"ws://127.0.0.1:{free_port()}/ws"
    FleetState.open(path).remember(gone, BotSpec.of("connect4", 2).name, "token")

    fleet = await start_fleet(server=arena, state=FleetState.open(path), restore_patience_s=0.5)
    await wait_until(lambda: bool(fleet.bots()), 5, "the kept bot to be brought back")
    (bot,) = fleet.bots()
    await wait_until(lambda: bot.link.failures >= 1, 5, "a failed connection")
    await wait_until(lambda: not fleet.bots(), 5, "the bot to be closed")
    assert FleetState.load(path).token(gone, BotSpec.of("connect4", 2).name) == "token", "the token is kept"


# ---------------------------------------------------------------------- MQTT


@pytest.fixture
async def mqtt_cleanup(mqtt_url: str) -> AsyncIterator[list[str]]:
    """Instance ids whose retained status is cleared from the broker after the test."""
    instances: list[str] = []
    yield instances
    host, port = mqtt_url.removeprefix("mqtt://").split(":")
    async with aiomqtt.Client(host, int(port)) as client:
        for instance in instances:
            await client.publish(f"plyarena/v1/instances/{instance}", b"", qos=1, retain=True)


async def test_a_fleet_finds_lobbies_over_mqtt_and_seats_bots_on_a_server_it_was_never_told_of(
    mqtt_url: str,
    start_server: StartServer,
    connect: Connect,
    start_fleet: StartFleet,
    mqtt_cleanup: list[str],
) -> None:
    server = await start_server(mqtt_url=mqtt_url, instance_id=f"bots-mqtt-{os.getpid()}-{time.time_ns()}")
    mqtt_cleanup.append(server.config.instance_id)
    fleet = await start_fleet(mqtt=mqtt_url, max_games=4)
    assert not fleet.players

    alice: ArenaClient = await connect.player(server, "Alice")
    state = await alice.request("match.create", game="connect4", seat=0, bot={"level": 3})
    seated = await alice.expect(type_="seated", match_id=state["match_id"], seat=1, timeout=10)

    assert seated["player"]["name"] == BotSpec.of("connect4", 3).name
    assert server.ws_url in [url for url, _ in fleet.players]
    # The fleet's offer reached the server through the broker too.
    await wait_until(lambda: fleet.config.fleet_id in server.bot_catalog.offers, 10, "the offer over MQTT")
    listing = await api(server, "/api/bots")
    assert any(bot["player"] == BotSpec.of("connect4", 3).name for bot in listing["games"]["connect4"])
    await alice.request("resign", match_id=state["match_id"])


async def test_a_bot_declines_a_takeback_request(
    arena: Server, connect: Connect, start_fleet: StartFleet
) -> None:
    await start_fleet(server=arena, levels=parse_levels("connect4:2"))
    alice = await connect.player(arena, "Alice")
    state = await alice.request("match.create", game="connect4", seat=0, bot={"level": 2})
    match_id = state["match_id"]
    await alice.expect(type_="started", match_id=match_id, timeout=10)
    await alice.request("move", match_id=match_id, ply=0, move="4")
    await alice.expect(type_="moved", match_id=match_id, ply=1, timeout=10)
    offered = await alice.request("takeback.offer", match_id=match_id)
    assert offered["type"] == "takeback.offered", offered
    declined = await alice.expect(type_="takeback.declined", match_id=match_id, timeout=10)
    assert declined["seat"] == 1
    record = await api(arena, f"/api/matches/{match_id}")
    assert len(record["moves"]) == 2, "nothing was taken back"
