"""Faults: the server killed mid-play, the broker gone and back, the database restarted or cut off.

- SIGKILL a real ``plyarena serve`` with twenty live matches between two bots
  (``bots.client``, which reconnect by themselves): after the restart no
  acknowledged move is lost and every match goes on with its clocks, the
  downtime charged to no one (SQLite and PostgreSQL).
- Stop a private Mosquitto under a server and a ``plyarena bots --mqtt`` fleet:
  WebSocket play and the lobby go on; once the broker is back, lobby entries
  flow over MQTT again and the fleet seats bots from them.
- Restart a private PostgreSQL under load (a fast shutdown, which ends every
  session, then a start on the same port), and cut the shared one off (a TCP
  relay in front of it, which breaks connections without a word): either way
  requests are refused ``unavailable`` and nothing is half-stored; service
  resumes after.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import secrets
import sys
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiomqtt
import pytest
from pg_scratch import temporary_postgres_database
from sqlalchemy import text
from sqlalchemy.engine import make_url
from support.client import ArenaClient, Message
from support.commits import Commit, intercept_commits
from support.fixtures import Connect
from support.fuzz_arena import api_get
from support.play import decisive_game, open_match, play_moves
from support.process import ServerProcess
from support.services import (
    PrivateMosquitto,
    PrivatePostgres,
    TcpProxy,
    postgres_binaries,
)
from support.waiting import wait_until

from bots.client import BotPlayer, BotSpec
from bots.link import Backoff
from bots.pool import ThinkRequest, ThinkResult
from games import get_game
from server.app import Server, running_server
from server.bus import MqttBus
from server.config import ServerConfig
from server.storage import DatabaseUnavailableError, Store
from server.storage.batches import Kind
from server.storage.engine import create_engine
from server.storage.writes import Write

FAST_BACKOFF = Backoff(initial_s=0.05, max_s=0.5)
LIVE_MATCHES = 20
LONG_GAMES = ("othello", "checkers")  # random play ends neither in a few moves
TIME_CONTROL, INCREMENT_MS = "5+2", 2000
DOWNTIME_S = 1.0
"""How long the killed server stays down before it is started again."""


class PacedPool:
    """Stands in for the bots' search pool: a random legal move (seeded by the request) after ``pace_s``.

    These tests are about the bots' reconnecting, resuming and resending, not about their search.
    """

    def __init__(self, pace_s: float) -> None:
        self.pace_s = pace_s

    async def think(self, request: ThinkRequest) -> ThinkResult:
        await asyncio.sleep(self.pace_s)
        position = get_game(request.game).replay(request.moves)
        move = position.format_move(random.Random(request.seed).choice(position.legal_moves()))
        return ThinkResult(
            move=move, score=0, depth=1, nodes=1, pv=(move,), think_ms=round(self.pace_s * 1000)
        )


# --------------------------------------------------------------------------- the server killed


async def test_sigkill_with_twenty_live_matches_loses_no_acknowledged_move_and_bots_play_on(
    arena_db_url: str, tmp_path: Path
) -> None:
    server = ServerProcess(arena_db_url, f"faults-{secrets.token_hex(3)}", tmp_path, "--grace", "30")
    await server.start()
    pool: Any = PacedPool(0.08)
    # Two games per bot connection keep each within its rate limit (a fleet spreads its games too).
    bots = [
        BotPlayer(server.ws_url, BotSpec.of("connect4", 1), pool, backoff=FAST_BACKOFF, seed=seed)
        for seed in range(LIVE_MATCHES)
    ]
    hosts, guests = bots[::2], bots[1::2]

    def moves(match_id: str) -> list[str]:
        """The moves the bots have seen acknowledged (broadcast only after their commit)."""
        seen = [bot.sessions[match_id].moves for bot in bots if match_id in bot.sessions]
        longest = max(seen, key=len, default=[])
        assert all(longest[: len(other)] == other for other in seen), seen
        return list(longest)

    def over(match_id: str) -> bool:
        return any(match_id in bot.results for bot in bots)

    try:
        async with contextlib.AsyncExitStack() as stack:
            for bot in bots:
                await stack.enter_async_context(bot)
            match_ids = []
            for index in range(LIVE_MATCHES):
                host, guest = hosts[index % len(hosts)], guests[index % len(guests)]
                game = LONG_GAMES[index % len(LONG_GAMES)]
                match_id = await host.create(game, time_control=TIME_CONTROL, seat=0, visibility="private")
                await guest.join(match_id)
                match_ids.append(match_id)
            await wait_until(
                lambda: all(len(moves(m)) >= 6 for m in match_ids), 30, "six moves in every match"
            )

            await server.kill()
            await wait_until(
                lambda: not any(bot.link.connected.is_set() for bot in bots), 10, "the bots to notice"
            )
            acknowledged = {match_id: moves(match_id) for match_id in match_ids}
            live_at_kill = [match_id for match_id in match_ids if not over(match_id)]
            await asyncio.sleep(DOWNTIME_S)
            restarted_at = datetime.now(UTC)
            await server.start()

            # Nobody touches the bots: they reconnect, catch up and play on by themselves.
            await wait_until(
                lambda: all(len(moves(m)) >= len(acknowledged[m]) + 3 or over(m) for m in match_ids),
                30,
                "three more moves in every match after the restart",
            )
            http_url = f"http://127.0.0.1:{server.port}"
            records = {m: (await api_get(http_url, f"/api/matches/{m}"))[1] for m in match_ids}
            assert all(bot.link.connections >= 2 for bot in bots), "every bot came back by itself"
    finally:
        await server.stop()

    assert len(live_at_kill) == LIVE_MATCHES
    assert "Traceback" not in "".join(server.output), "".join(server.output)
    for match_id, record in records.items():
        stored = [move["move"] for move in record["moves"]]
        assert stored[: len(acknowledged[match_id])] == acknowledged[match_id], f"{match_id}: a move was lost"
        assert [move["ply"] for move in record["moves"]] == list(range(len(stored)))
        assert record["status"] in ("live", "finished"), record
        if record["status"] == "finished":
            game = get_game(record["game"]).replay(stored)
            assert game.outcome() is not None and record["reason"] == game.outcome().reason, record
        assert_clocks_resumed(record, restarted_at)


def assert_clocks_resumed(record: dict[str, Any], restarted_at: datetime) -> None:
    """The first move after the restart was charged only the time since the restart, from the clock
    stored with the move before it."""
    moves = record["moves"]
    after = [
        index for index, move in enumerate(moves) if datetime.fromisoformat(move["played_at"]) > restarted_at
    ]
    assert after and after[0] > 0, f"{record['id']}: no move after the restart"
    previous, first = moves[after[0] - 1], moves[after[0]]
    mover = first["seat"]
    # Between the two moves lie the downtime, the restart and the thinking; only the thinking counts.
    gap = datetime.fromisoformat(first["played_at"]) - datetime.fromisoformat(previous["played_at"])
    charged_ms, downtime_ms = first["think_ms"], DOWNTIME_S * 1000
    assert charged_ms <= gap.total_seconds() * 1000 - downtime_ms + 50, f"{record['id']}: downtime charged"
    expected = previous["clocks_ms"][mover] - first["think_ms"] + INCREMENT_MS
    assert abs(first["clocks_ms"][mover] - expected) <= 1, (record["id"], previous, first)
    assert first["clocks_ms"][1 - mover] == previous["clocks_ms"][1 - mover]


# --------------------------------------------------------------------------- the broker restarted


@contextlib.asynccontextmanager
async def fleet_process(mqtt_url: str) -> AsyncIterator[list[str]]:
    """``plyarena bots --mqtt``: a fleet that knows of servers only through the broker; yields its output."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "plyarena", "bots", "--mqtt", mqtt_url, "--workers", "1",
        "--levels", "connect4:1", "--max-games", "4", "--idle-wait", "-1",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output: list[str] = []
    ready = asyncio.Event()

    async def read() -> None:
        assert process.stdout is not None
        async for line in process.stdout:
            output.append(line.decode(errors="replace"))
            if output[-1].startswith("Bot fleet "):
                ready.set()

    reading = asyncio.create_task(read())
    try:
        await asyncio.wait_for(ready.wait(), 60)
        yield output
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()
        await asyncio.gather(reading, return_exceptions=True)


async def lobby_entries(mqtt_url: str, instance: str, until: Callable[[dict[str, bytes]], bool]) -> None:
    """Follow this instance's retained lobby topics on the broker until ``until(entries)`` holds."""
    host, port = mqtt_url.removeprefix("mqtt://").split(":")
    entries: dict[str, bytes] = {}
    async with aiomqtt.Client(host, int(port), identifier=f"faults-watcher-{secrets.token_hex(3)}") as client:
        await client.subscribe(f"plyarena/v1/lobby/{instance}/+")
        async for message in client.messages:
            entries[str(message.topic).rsplit("/", 1)[1]] = bytes(message.payload)  # type: ignore[arg-type]
            if until(entries):
                return


async def bot_answers(player: ArenaClient, match_id: str) -> None:
    """``player`` (seat 0) makes its first legal move and the bot in seat 1 answers."""
    state = await player.request("match.watch", match_id=match_id)
    assert state["turn"] == 0, state
    ply = len(state["moves"])
    moved = await player.request("move", match_id=match_id, ply=ply, move=state["legal"][0])
    assert moved["type"] == "moved", moved
    await player.expect(type_="moved", match_id=match_id, ply=ply + 1, timeout=20)
    player.take_unread()


async def test_the_server_and_a_fleet_outlive_a_broker_restart(
    private_broker: PrivateMosquitto, connect: Connect, tmp_path: Path
) -> None:
    instance = f"faults-mqtt-{secrets.token_hex(3)}"
    config = ServerConfig(port=0, db_url=f"sqlite+aiosqlite:///{tmp_path / 'mqtt.sqlite3'}",
                          mqtt_url=private_broker.url, instance_id=instance, grace_s=30)  # fmt: skip
    async with running_server(config) as server, fleet_process(private_broker.url) as fleet_output:
        alice = await connect.player(server, "Alice")
        with_bot = (await alice.request("match.create", game="connect4", seat=0, bot={"level": 1}))[
            "match_id"
        ]
        seated = await alice.expect(type_="seated", match_id=with_bot, timeout=20)
        assert seated["player"]["bot"], "the fleet found the match over MQTT"
        await bot_answers(alice, with_bot)

        await private_broker.stop()
        # Without a broker: the lobby, WebSocket play, the bot already seated, the API all go on.
        bob, carol = await connect.player(server, "Bob"), await connect.player(server, "Carol")
        lobby = await bob.request("lobby.subscribe")
        assert with_bot in [entry["match_id"] for entry in lobby["matches"]]
        match_id = (await open_match(carol, bob, "tictactoe"))["match_id"]
        assert await bob.expect(type_="lobby.update", where=lambda m: m["entry"]["match_id"] == match_id)
        await play_moves("tictactoe", (carol, bob), match_id, list(decisive_game("tictactoe")))
        await bot_answers(alice, with_bot)
        assert (await api_get(server.http_url, "/healthz"))[1]["status"] == "ok"

        await private_broker.start()  # the same port, and empty: the broker lost every retained entry
        dave = await connect.player(server, "Dave")
        wanted = (await dave.request("match.create", game="connect4", seat=0, bot={"level": 1}))["match_id"]
        # The entry reaches the broker again (the server reconnects), and the fleet (which reconnects
        # too) seats a bot from it.
        await asyncio.wait_for(
            lobby_entries(private_broker.url, instance, lambda entries: wanted in entries), 30
        )
        seated = await dave.expect(type_="seated", match_id=wanted, timeout=30)
        assert seated["player"]["bot"]
        await bot_answers(dave, wanted)
        assert isinstance(server.bus, MqttBus) and server.bus.stats.connections == 2, "it reconnected once"
    assert not [line for line in fleet_output if "Traceback" in line], "".join(fleet_output)


# --------------------------------------------------------------------------- the database cut off


@dataclass
class Load:
    """One match played as fast as answers come, by two clients making random legal moves; a refused
    move is sent again until it is acknowledged."""

    match_id: str
    game: str
    seats: tuple[ArenaClient, ArenaClient]
    seed: int
    acknowledged: list[str] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)

    async def run(self, stop: asyncio.Event) -> None:
        rng = random.Random(self.seed)
        position = get_game(self.game).start()
        while not stop.is_set() and position.outcome() is None:
            move = position.format_move(rng.choice(position.legal_moves()))
            while True:
                mover = self.seats[position.turn]
                reply = await mover.request(
                    "move", match_id=self.match_id, ply=len(self.acknowledged), move=move
                )
                if reply["type"] == "moved":
                    break
                self.refusals[reply["code"]] += 1
                assert reply["code"] == "unavailable", f"{self.match_id}: {reply}"
                await asyncio.sleep(0.05)
            self.acknowledged.append(reply["move"])
            position = position.play(position.parse_move(move))
            await asyncio.sleep(0.01)
            for client in self.seats:
                client.take_unread()


@pytest.fixture
async def private_postgres() -> AsyncIterator[PrivatePostgres]:
    cluster = PrivatePostgres(postgres_binaries())
    try:
        await cluster.start()
        yield cluster
    finally:
        await cluster.close()


async def test_requests_fail_cleanly_while_postgresql_restarts_and_service_resumes(
    private_postgres: PrivatePostgres, connect: Connect
) -> None:
    database = private_postgres
    config = ServerConfig(port=0, db_url=database.url, instance_id=f"faults-pg-down-{secrets.token_hex(3)}")
    async with running_server(config) as server:
        loads, players = await outage_under_load(server, connect, database.stop, database.start)
        await server.store.close()
    await assert_stored_exactly(database.url, loads, players=len(players) + 1, matches=len(loads) + 1)


async def test_requests_fail_cleanly_while_postgresql_is_cut_off_and_service_resumes(
    postgres_url: str, connect: Connect
) -> None:
    with temporary_postgres_database(postgres_url, "faults") as direct_url:
        target = make_url(direct_url)
        proxy = TcpProxy(target.host or "127.0.0.1", target.port or 5432)
        await proxy.start()
        proxied = target.set(port=proxy.port).render_as_string(hide_password=False)
        config = ServerConfig(port=0, db_url=proxied, instance_id=f"faults-pg-{secrets.token_hex(3)}")
        try:
            async with running_server(config) as server:
                loads, players = await outage_under_load(server, connect, proxy.cut, proxy.start)
                await server.store.close()
        finally:
            await proxy.close()
        await assert_stored_exactly(direct_url, loads, players=len(players) + 1, matches=len(loads) + 1)


async def outage_under_load(
    server: Server,
    connect: Connect,
    go_down: Callable[[], Awaitable[None]],
    come_back: Callable[[], Awaitable[None]],
) -> tuple[list[Load], list[ArenaClient]]:
    """Six matches play on while the database goes down and comes back: while it is down, every move is
    refused ``unavailable`` and what needs the database is refused; after, the matches move on and new
    players and matches are stored. Returns the loads and their players (plus one newcomer stored)."""
    loads, players = await start_load(server, connect)
    stop = asyncio.Event()
    running = [asyncio.create_task(load.run(stop)) for load in loads]
    try:
        await wait_until(lambda: all(len(load.acknowledged) >= 4 for load in loads), 20, "moves")

        await go_down()
        await wait_until(lambda: all(load.refusals["unavailable"] >= 3 for load in loads), 20, "refusals")
        await during_the_outage(server, connect, players[0])

        await come_back()
        resumed_at = {load.match_id: len(load.acknowledged) for load in loads}
        await wait_until(
            lambda: all(len(load.acknowledged) >= resumed_at[load.match_id] + 4 for load in loads),
            20,
            "moves after the database came back",
        )
        newcomer = await connect(server)
        assert (await newcomer.hello("After"))["type"] == "welcome"
        assert (await newcomer.request("match.create", game="othello"))["type"] == "match.state"
        assert (await api_get(server.http_url, "/healthz"))[0] == 200
    except BaseException as waiting:
        # A load that failed (a wrong answer) stalls the waits above: raise its failure, which says more
        # than a timeout, and leave no task behind to report it in some later test.
        stop.set()
        results = await asyncio.gather(*running, return_exceptions=True)
        failed = next((result for result in results if isinstance(result, Exception)), None)
        if failed is not None:
            raise failed from waiting
        raise
    stop.set()
    await asyncio.gather(*running)
    return loads, players


async def start_load(server: Server, connect: Connect) -> tuple[list[Load], list[ArenaClient]]:
    players, loads = [], []
    for index, game in enumerate(("checkers", "othello", "checkers", "othello", "connect4", "checkers")):
        first, second = (
            await connect.player(server, f"Load {index}a"),
            await connect.player(server, f"Load {index}b"),
        )
        players += [first, second]
        match_id = (await open_match(first, second, game))["match_id"]
        loads.append(Load(match_id, game, (first, second), seed=index))
    return loads, players


async def during_the_outage(server: Server, connect: Connect, player: ArenaClient) -> None:
    """Whatever needs the database is refused ``unavailable``; what the server holds in memory is served."""
    newcomer = await connect(server)
    assert (await newcomer.request("hello", name="During"))["code"] == "unavailable"
    assert (await newcomer.request("hello", token=player.token))["code"] == "unavailable"
    assert (await player.request("match.create", game="othello"))["code"] == "unavailable"
    status, body = await api_get(server.http_url, "/healthz")
    assert (status, body["status"]) == (503, "unavailable")
    status, body = await api_get(server.http_url, "/api/matches")
    assert (status, body["error"]["code"]) == (503, "unavailable")
    assert (await player.request("lobby.subscribe"))["type"] == "lobby.snapshot"


async def assert_stored_exactly(url: str, loads: list[Load], *, players: int, matches: int) -> None:
    """Every acknowledged move is stored, and nothing else: no refused move, player or match."""
    database = create_engine(url, pooled=False)
    try:
        async with database.connect() as connection:
            assert await connection.scalar(text("SELECT count(*) FROM players")) == players
            assert await connection.scalar(text("SELECT count(*) FROM matches")) == matches
            for load in loads:
                rows = await connection.execute(
                    text("SELECT ply, notation FROM moves WHERE match_id = :id ORDER BY ply"),
                    {"id": load.match_id},
                )
                stored = [(ply, notation) for ply, notation in rows]
                assert stored == list(enumerate(load.acknowledged)), load.match_id
    finally:
        await database.dispose()


# --------------------------------------------------------------------------- a lost answer


def fail_the_next_commit_of(
    monkeypatch: pytest.MonkeyPatch, kind: Kind, *, committed: bool
) -> list[dict[str, Any]]:
    """Make the next commit that writes a row of ``kind`` (``NEW_MOVE``, ``MATCH_FINISH``...) fail as if
    the connection to the database dropped: before COMMIT (nothing stored), or, ``committed``, during
    it (all stored, the answer lost). Other commits, and later ones, go through. Returns the parameters
    of that commit's rows of ``kind``."""
    failed: list[dict[str, Any]] = []

    def fail_once(store: Store, rows: tuple[Write, ...], commit: Commit) -> Awaitable[None] | None:
        parts = [part for write in rows for part in write]
        if failed or not any(part.kind == kind for part in parts):
            return None
        failed.extend(part.params for part in parts if part.kind == kind)

        async def fail() -> None:
            if committed:
                await commit(store, *rows)
            raise DatabaseUnavailableError("connection lost" + (" during COMMIT" if committed else ""))

        return fail()

    intercept_commits(monkeypatch, fail_once)
    return failed


def lose_the_next_commit_answer(monkeypatch: pytest.MonkeyPatch, kind: Kind) -> list[dict[str, Any]]:
    """Make the next commit that writes a row of ``kind`` commit, then fail as if the connection to the
    database dropped during COMMIT. Returns the parameters of that commit's rows of ``kind``."""
    return fail_the_next_commit_of(monkeypatch, kind, committed=True)


async def test_a_move_whose_commit_answer_was_lost_is_acknowledged_when_sent_again(
    arena: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database commits, then the connection drops before it says so: the player is told
    ``unavailable`` and sends the move again, which must be acknowledged, not refused as stale."""
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    lost = lose_the_next_commit_answer(monkeypatch, Kind.NEW_MOVE)
    refused: Message = await alice.request("move", match_id=match_id, ply=0, move="b2")
    assert refused["code"] == "unavailable"
    moved = await alice.request("move", match_id=match_id, ply=0, move="b2")
    assert (moved["type"], moved["ply"]) == ("moved", 0), moved
    await play_moves("tictactoe", (alice, bob), match_id, ["a1", "c3"], played=("b2",))
    record = await arena.store.get_match(match_id)
    assert record is not None and [move.notation for move in record.moves] == ["b2", "a1", "c3"]
    assert [row["ply"] for row in lost] == [0]


async def test_a_takeback_whose_commit_answer_was_lost_is_played_as_stored(
    arena: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The moves were deleted, then the answer lost: before anything else happens in the match, the
    server finds them gone and announces the takeback, so no later move is stored after a gap."""
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "connect4"))["match_id"]
    await play_moves("connect4", (alice, bob), match_id, ["4", "4"])
    await bob.request("takeback.offer", match_id=match_id)
    lost = lose_the_next_commit_answer(monkeypatch, Kind.TAKE_BACK)
    refused: Message = await alice.request("takeback.accept", match_id=match_id)
    assert refused["code"] == "unavailable"
    state = await alice.request("match.watch", match_id=match_id)
    assert (state["moves"], state["turn"]) == (["4"], 1), "the takeback, as stored"
    assert (await bob.expect(type_="takeback.accepted", match_id=match_id))["ply"] == 1
    await play_moves("connect4", (alice, bob), match_id, ["3", "5"], played=("4",))
    record = await arena.store.get_match(match_id)
    assert record is not None and [move.notation for move in record.moves] == ["4", "3", "5"]
    assert lost == [{"p_match_id": match_id, "p_from_ply": 1}]


async def agree_a_rematch_and_reach_the_win(
    alice: ArenaClient, bob: ArenaClient, match_id: str
) -> tuple[int, str]:
    """Agree a rematch during a game of tic-tac-toe, then play up to Alice's winning move: its ply and
    notation."""
    await bob.request("rematch.offer", match_id=match_id)
    assert (await alice.request("rematch.offer", match_id=match_id))["type"] == "rematch.agreed"
    *moves, last = decisive_game("tictactoe")
    assert len(moves) % 2 == 0, "the first player, Alice, wins"
    await play_moves("tictactoe", (alice, bob), match_id, moves)
    return len(moves), last


async def agree_a_rematch_and_win(alice: ArenaClient, bob: ArenaClient, match_id: str) -> Message:
    """Agree a rematch during a game of tic-tac-toe, then play the winning move (Alice's): its reply."""
    ply, last = await agree_a_rematch_and_reach_the_win(alice, bob, match_id)
    return await alice.request("move", match_id=match_id, ply=ply, move=last)


async def test_a_games_end_and_its_agreed_rematch_are_stored_together_or_not_at_all(
    arena: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The winning move's commit fails: neither the move, the result nor the rematch is stored, the move
    is refused and nothing is announced. Sent again, it ends the game and starts the rematch."""
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    ply, last = await agree_a_rematch_and_reach_the_win(alice, bob, match_id)
    failed = fail_the_next_commit_of(monkeypatch, Kind.NEW_MATCH, committed=False)
    await bob.settle()
    bob.take_unread()
    refused = await alice.request("move", match_id=match_id, ply=ply, move=last)
    assert refused["code"] == "unavailable", refused
    assert [m for m in await bob.settle() if m.get("type") in ("moved", "ended", "rematch.started")] == []
    (rematch_row,) = failed
    assert await arena.store.get_match(rematch_row["id"]) is None
    record = await arena.store.get_match(match_id)
    assert record is not None and (record.status, len(record.moves)) == ("live", ply)

    moved = await alice.request("move", match_id=match_id, ply=ply, move=last)
    assert (moved["type"], moved["ply"]) == ("moved", ply), moved
    started = await bob.expect(type_="rematch.started", match_id=match_id)
    assert started["new_match_id"] == rematch_row["id"]
    record = await arena.store.get_match(match_id)
    assert record is not None and (record.status, record.winner, len(record.moves)) == (
        "finished",
        0,
        ply + 1,
    )
    rematch = await arena.store.get_match(started["new_match_id"])
    assert rematch is not None and (rematch.status, rematch.rematch_of) == ("live", match_id)
    assert arena.host.counts()["live_matches"] == 1


async def test_a_seat_and_the_start_it_brings_are_stored_together_or_not_at_all(
    arena: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob's join fills the match and starts it; that commit fails: neither the seat nor the start is
    stored (a seat stored alone would refuse his next join as ``seat_taken`` and strand the match)."""
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    match_id = (await alice.request("match.create", game="connect4", seat=0))["match_id"]
    fail_the_next_commit_of(monkeypatch, Kind.MATCH_START, committed=False)
    refused = await bob.request("match.join", match_id=match_id)
    assert refused["code"] == "unavailable", refused
    record = await arena.store.get_match(match_id)
    assert record is not None and record.status == "open" and [seat.seat for seat in record.seats] == [0]
    joined = await bob.request("match.join", match_id=match_id)
    assert (joined["type"], joined["status"], joined["you"]) == ("match.state", "live", 1), joined
    record = await arena.store.get_match(match_id)
    assert record is not None and record.status == "live" and [seat.seat for seat in record.seats] == [0, 1]


async def test_a_resignation_whose_commit_answer_was_lost_starts_the_rematch_stored_with_it(
    arena: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bob resigns a game whose rematch was agreed; the result and the rematch commit, the answer is
    lost. Once the store is asked, the game ends as stored and the rematch stored with it starts."""
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await bob.request("rematch.offer", match_id=match_id)
    assert (await alice.request("rematch.offer", match_id=match_id))["type"] == "rematch.agreed"
    lost = lose_the_next_commit_answer(monkeypatch, Kind.NEW_MATCH)
    assert (await bob.request("resign", match_id=match_id))["code"] == "unavailable"
    again = await bob.request("resign", match_id=match_id)  # the store is asked first: it is over
    assert (again["type"], again["code"]) == ("error", "match_over"), again
    started = await alice.expect(type_="rematch.started", match_id=match_id)
    assert [row["id"] for row in lost] == [started["new_match_id"]]
    state = await alice.expect(type_="match.state", match_id=started["new_match_id"])
    assert (state["status"], state["you"]) == ("live", 1)
    assert arena.host.counts()["live_matches"] == 1


async def test_a_winning_move_whose_commit_answer_was_lost_still_starts_the_agreed_rematch(
    arena: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The winning move commits with the rematch, its answer is lost, and Alice sends it again: the move
    is played as stored, and the rematch stored with it starts (and is not stored twice)."""
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    ply, last = await agree_a_rematch_and_reach_the_win(alice, bob, match_id)
    lost = lose_the_next_commit_answer(monkeypatch, Kind.NEW_MOVE)
    refused = await alice.request("move", match_id=match_id, ply=ply, move=last)
    assert refused["code"] == "unavailable", refused
    moved = await alice.request("move", match_id=match_id, ply=ply, move=last)
    assert (moved["type"], moved["ply"]) == ("moved", ply), moved
    assert [row["ply"] for row in lost] == [ply]
    started = await bob.expect(type_="rematch.started", match_id=match_id)
    state = await bob.expect(type_="match.state", match_id=started["new_match_id"])
    assert (state["status"], state["you"]) == ("live", 0)
    record = await arena.store.get_match(started["new_match_id"])
    assert record is not None and record.rematch_of == match_id and record.status == "live"
    assert arena.host.counts()["live_matches"] == 1


async def test_a_different_move_after_a_lost_commit_answer_is_refused_and_the_match_goes_on(
    arena: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database commits Alice's b2, then the answer is lost and she is told ``unavailable``; she
    sends a1 for the same ply instead. b2 is what was stored, so b2 is what was played: everyone is
    told so, a1 is refused, and the match goes on (it used to refuse every move until a restart)."""
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe", time_control="5+0"))["match_id"]
    lost = lose_the_next_commit_answer(monkeypatch, Kind.NEW_MOVE)
    refused = await alice.request("move", match_id=match_id, ply=0, move="b2")
    assert refused["code"] == "unavailable"
    instead = await alice.request("move", match_id=match_id, ply=0, move="a1")
    assert (instead["type"], instead["code"]) == ("error", "not_your_turn"), instead
    # Both players learn what was stored, in sequence, with the clocks stored with it.
    stored = await arena.store.get_match(match_id)
    assert stored is not None and [move.notation for move in stored.moves] == ["b2"]
    for client in (alice, bob):
        moved = await client.expect(type_="moved", match_id=match_id, ply=0)
        assert (moved["move"], moved["seat"]) == ("b2", 0), moved
        assert moved["clocks_ms"] == list(stored.moves[0].clocks_ms or ()), moved
        assert moved["think_ms"] == stored.moves[0].think_ms
    await play_moves("tictactoe", (alice, bob), match_id, ["a1", "c3"], played=("b2",))
    for client in (alice, bob):
        state = await client.request("match.watch", match_id=match_id)
        assert state["moves"] == ["b2", "a1", "c3"] and state["turn"] == 1, state
        seqs = [
            message["seq"]
            for message in client.received
            if message.get("match_id") == match_id
            and "seq" in message
            and message["type"] not in ("match.state", "match.catchup")
        ]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), f"a gap or a repeat: {seqs}"
    record = await arena.store.get_match(match_id)
    assert record is not None and [move.notation for move in record.moves] == ["b2", "a1", "c3"]
    assert [row["ply"] for row in lost] == [0]


async def test_a_player_who_resumes_after_a_lost_commit_answer_catches_up_on_the_stored_move(
    arena: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Told ``unavailable`` for a move that was stored all the same, Alice drops and comes back: the
    catch-up she asks for holds the move, so she never sends another for that ply."""
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    joined = await open_match(alice, bob, "connect4")
    match_id, log_id, seq = joined["match_id"], joined["log"], joined["seq"]
    lose_the_next_commit_answer(monkeypatch, Kind.NEW_MOVE)
    assert (await alice.request("move", match_id=match_id, ply=0, move="4"))["code"] == "unavailable"
    await alice.close()
    alice_again = await connect.player(arena, token=alice.token)
    catchup = await alice_again.request("match.watch", match_id=match_id, log=log_id, since=seq)
    assert catchup["type"] == "match.catchup", catchup
    moved = [event for event in catchup["events"] if event["type"] == "moved"]
    assert [(event["ply"], event["move"]) for event in moved] == [(0, "4")], catchup
    assert (await bob.expect(type_="moved", match_id=match_id, ply=0))["move"] == "4"
    await play_moves("connect4", (alice_again, bob), match_id, ["4", "3"], played=("4",))
    record = await arena.store.get_match(match_id)
    assert record is not None and [move.notation for move in record.moves] == ["4", "4", "3"]


async def test_a_resignation_whose_commit_answer_was_lost_ends_the_match_as_stored(
    arena: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database stores Alice's resignation, then the answer is lost and she is told ``unavailable``.
    The match must not stay live here while the store says it is over: before Bob's next move is
    judged, everyone hears it ended as stored, and Bob's move and Alice's second resignation are
    refused ``match_over`` (the store would refuse any result now)."""
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe", time_control="5+0"))["match_id"]
    await play_moves("tictactoe", (alice, bob), match_id, ["b2"])
    lose_the_next_commit_answer(monkeypatch, Kind.MATCH_FINISH)
    assert (await alice.request("resign", match_id=match_id))["code"] == "unavailable"
    refused = await bob.request("move", match_id=match_id, ply=1, move="a1")
    assert (refused["type"], refused["code"]) == ("error", "match_over"), refused
    for client in (alice, bob):
        ended = await client.expect(type_="ended", match_id=match_id)
        assert (ended["status"], ended["winner"], ended["reason"]) == ("finished", 1, "seat 0 resigned")
    again = await alice.request("resign", match_id=match_id)
    assert (again["type"], again["code"]) == ("error", "match_over"), again
    record = await arena.store.get_match(match_id)
    assert record is not None and (record.status, record.winner) == ("finished", 1)
    assert [move.notation for move in record.moves] == ["b2"]


async def test_a_chat_line_that_cannot_be_stored_is_refused_and_heard_by_no_one(
    arena: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a move: a line is said only once stored, so a restarted server shows every line anyone heard."""
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]

    def unreachable(store: Store, rows: tuple[Write, ...], commit: Commit) -> Awaitable[None] | None:
        if all(part.kind != Kind.NEW_CHAT for write in rows for part in write):
            return None
        refused: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        refused.set_exception(DatabaseUnavailableError("the database is unreachable"))
        return refused

    intercept_commits(monkeypatch, unreachable)
    refused = await alice.request("chat", match_id=match_id, text="can you hear me?")
    assert (refused["type"], refused["code"]) == ("error", "unavailable"), refused
    assert [m for m in await bob.settle() if m.get("type") == "chat"] == []
    assert [m for m in alice.take_unread() if m.get("type") == "chat"] == []

    monkeypatch.undo()
    said = await alice.request("chat", match_id=match_id, text="and now?")
    assert (await bob.expect(type_="chat", match_id=match_id))["seq"] == said["seq"]
    state = await bob.request("match.watch", match_id=match_id)
    assert [line["text"] for line in state["chat"]] == ["and now?"]


async def test_a_chat_line_whose_commit_answer_was_lost_can_be_said_again(
    arena: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store holds the line its player was told was refused: the next line, said with the same
    ``seq``, takes its place, so what is stored is what was heard."""
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    lose_the_next_commit_answer(monkeypatch, Kind.NEW_CHAT)
    assert (await alice.request("chat", match_id=match_id, text="hello?"))["code"] == "unavailable"
    said = await alice.request("chat", match_id=match_id, text="hello again")
    assert said["type"] == "chat", said
    assert (await bob.expect(type_="chat", match_id=match_id))["text"] == "hello again"
    restored = await arena.store.unfinished_matches(arena.config.instance_id, last_chat=5)
    (record,) = [match for match in restored if match.id == match_id]
    assert [(line.seq, line.text) for line in record.chat] == [(said["seq"], "hello again")]
