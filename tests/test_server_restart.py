"""A server killed with SIGKILL in the middle of several matches comes back with every acknowledged move,
its clocks, its players and its chat. Runs the server as a real process, on SQLite and on PostgreSQL.
Only one server at a time runs as an instance on a database, and a killed one leaves its claim behind."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
import secrets
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from pg_scratch import temporary_postgres_database
from sqlalchemy import text
from support.client import ArenaClient
from support.fixtures import Connect
from support.play import decisive_game, play_moves
from support.process import ServerProcess

from games import get_game
from server.app import running_server
from server.config import ServerConfig
from server.errors import ServerStartError
from server.storage import InstanceTakenError, StorageError, Store, claims
from server.storage.engine import create_engine

MATCHES = {  # game -> (time control, moves to play before the crash)
    "tictactoe": ("untimed", ["a1", "a2", "b1"]),  # then X's b2 is in flight, and O's c1 wins
    "connect4": ("5+0", ["4", "4", "3", "5"]),
    "othello": ("untimed", list(decisive_game("othello")[:6])),
    "checkers": ("10+2", ["11-15", "23-19", "8-11"]),
}


async def test_sigkill_mid_play_loses_no_acknowledged_move_and_play_goes_on(
    arena_db_url: str, connect: Connect, tmp_path: Path
) -> None:
    server = ServerProcess(arena_db_url, f"restart-{secrets.token_hex(3)}", tmp_path, "--grace", "30")
    await server.start()
    try:
        alice = await connect.player(server.ws_url, "Alice")
        bob = await connect.player(server.ws_url, "Bob")
        carol = await connect.player(server.ws_url, "Carol")
        waiting = (await carol.request("match.create", game="connect4", seat=0))["match_id"]

        match_ids: dict[str, str] = {}
        for game, (time_control, _) in MATCHES.items():
            state = await alice.request("match.create", game=game, seat=0, time_control=time_control)
            match_ids[game] = state["match_id"]
            await bob.request("match.join", match_id=state["match_id"])
        acknowledged: dict[str, list[dict]] = {}
        for game, (_, moves) in MATCHES.items():
            acknowledged[game] = await play_moves(game, (alice, bob), match_ids[game], moves)

        # One more move in every match is on its way when the server dies: it may or may not be stored.
        in_flight = {}
        for game, (_, moves) in MATCHES.items():
            position = get_game(game).replay(moves)
            mover = (alice, bob)[position.turn]
            in_flight[game] = "b2" if game == "tictactoe" else position.format_move(position.legal_moves()[0])
            await mover.send(
                {"type": "move", "match_id": match_ids[game], "ply": len(moves), "move": in_flight[game]}
            )
        await server.kill()
    except BaseException:
        await server.kill()
        raise

    await server.start()
    try:
        alice_again, bob_again, carol_again = await reconnect(connect, server, alice, bob, carol)
        welcome = carol_again.received[0]
        assert welcome["matches"] == [waiting]
        open_state = await carol_again.request("match.watch", match_id=waiting)
        assert open_state["status"] == "open" and open_state["you"] == 0

        for game, (time_control, moves) in MATCHES.items():
            match_id = match_ids[game]
            state = await alice_again.request("match.watch", match_id=match_id)
            assert state["type"] == "match.state" and state["status"] == "live"
            played = state["moves"]
            assert played[: len(moves)] == moves, f"{game}: an acknowledged move was lost"
            assert played in (moves, [*moves, in_flight[game]]), f"{game}: {played}"
            if time_control != "untimed":
                # Clocks resume from the last stored move: the downtime is charged to no one.
                last = acknowledged[game][-1]
                if len(played) == len(moves):
                    assert state["clocks_ms"][1 - state["turn"]] == last["clocks_ms"][1 - state["turn"]]
                    assert 0 <= last["clocks_ms"][state["turn"]] - state["clocks_ms"][state["turn"]] < 2_000
            await bob_again.request("match.watch", match_id=match_id)

        # Play goes on: tic-tac-toe to its end, a move in each of the others.
        for game in MATCHES:
            record_moves = (await alice_again.request("match.watch", match_id=match_ids[game]))["moves"]
            if game == "tictactoe":
                rest = ["a1", "a2", "b1", "b2", "c1"][len(record_moves) :]
                await play_moves(
                    game, (alice_again, bob_again), match_ids[game], rest, played=tuple(record_moves)
                )
                ended = await bob_again.expect(type_="ended", match_id=match_ids[game])
                assert ended["winner"] == 0 and ended["reason"] == "three in a row"
            else:
                position = get_game(game).replay(record_moves)
                move = position.format_move(position.legal_moves()[-1])
                await play_moves(
                    game, (alice_again, bob_again), match_ids[game], [move], played=tuple(record_moves)
                )
    finally:
        await server.stop()


async def test_the_chat_of_a_match_outlives_a_sigkill(
    arena_db_url: str, connect: Connect, tmp_path: Path
) -> None:
    """Every line a player heard is back in ``match.state`` after a restart, with the number its event had,
    and a line said afterwards is numbered after them (the browser keeps lines by number)."""
    server = ServerProcess(arena_db_url, f"chat-{secrets.token_hex(3)}", tmp_path, "--grace", "30")
    await server.start()
    try:
        alice = await connect.player(server.ws_url, "Alice")
        bob = await connect.player(server.ws_url, "Bob")
        match_id = (await alice.request("match.create", game="connect4", seat=0))["match_id"]
        await bob.request("match.join", match_id=match_id)
        await play_moves("connect4", (alice, bob), match_id, ["4"])
        heard = []
        for speaker, text in ((alice, "good luck"), (bob, "you too"), (alice, "élève 😀")):
            said = await speaker.request("chat", match_id=match_id, text=text)
            heard.append({key: value for key, value in said.items() if key != "id"})
        before = await bob.request("match.watch", match_id=match_id)
        assert before["chat"] == heard
        await server.kill()
    except BaseException:
        await server.kill()
        raise

    await server.start()
    try:
        alice_again, bob_again = await reconnect(connect, server, alice, bob)
        state = await bob_again.request("match.watch", match_id=match_id)
        assert state["log"] != before["log"] and state["moves"] == ["4"]
        assert state["chat"] == heard, "the chat is as it was before the restart"
        await alice_again.request("match.watch", match_id=match_id)
        said = await alice_again.request("chat", match_id=match_id, text="still here")
        assert said["seq"] > heard[-1]["seq"]
        assert (await bob_again.expect(type_="chat", text="still here"))["seq"] == said["seq"]
    finally:
        await server.stop()


async def reconnect(connect: Connect, server: ServerProcess, *clients: ArenaClient) -> list[ArenaClient]:
    """Each client comes back on a new connection with its token, as a client does after a restart."""
    again = []
    for client in clients:
        await asyncio.wait_for(client.websocket.wait_closed(), 5)
        fresh = await connect(server.ws_url)
        welcome = await fresh.hello(token=client.token)
        assert welcome["player"]["id"] == client.player_id
        again.append(fresh)
    return again


async def test_a_second_server_under_the_same_instance_id_is_refused(arena_db_url: str) -> None:
    """Two would restore, host and announce the same matches; the first one's claim ends with it."""
    config = ServerConfig(port=0, db_url=arena_db_url, instance_id=f"claimed-{secrets.token_hex(3)}")
    async with running_server(config):
        with pytest.raises(
            ServerStartError, match=re.escape(f"another server runs as instance '{config.instance_id}'")
        ):
            async with running_server(config):
                pass
        async with running_server(replace(config, instance_id=f"{config.instance_id}-b")):
            pass  # another id is another claim
    async with running_server(config):
        pass  # released with the first server


async def cut_off_every_other_connection(url: str) -> None:
    """What a PostgreSQL restart or failover does to a server's connections, and to its claim."""
    admin = create_engine(url, pooled=False)
    async with admin.connect() as connection:
        await connection.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
    await admin.dispose()


async def test_a_postgresql_claim_lost_with_its_connection_is_taken_again_at_once(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(claims, "CLAIM_CHECK_S", 0.1)
    with temporary_postgres_database(postgres_url, "claim") as url:
        async with await Store.open(url) as first:
            await first.claim_instance("cut-off")
            await cut_off_every_other_connection(url)
            # The idle writer finds its connection gone, and takes the claim again on a new one.
            for _ in range(100):
                if await advisory_locks_held(url) == 1:
                    break
                await asyncio.sleep(0.05)
            async with await Store.open(url) as second:
                with pytest.raises(InstanceTakenError):
                    await second.claim_instance("cut-off")
            assert not first.claim_lost.is_set()
            assert (await first.create_player("Still here", "a" * 64)).name == "Still here"


async def test_a_postgresql_writer_connection_let_go_or_orphaned_does_not_lose_the_claim(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its own sessions never stand in the claim's way: one let go after an error ends (it does not go
    back to the pool, lock and all), and one the database still holds after a network cut hid its close
    is ended when the claim is taken again."""
    monkeypatch.setattr(claims, "CLAIM_CHECK_S", 3600.0)
    with temporary_postgres_database(postgres_url, "claim") as url:
        async with await Store.open(url) as store:
            await store.claim_instance("own")
            await store.player_by_token_hash("0" * 64)  # (a read: the pool holds an idle connection)
            await store._claim.drop_connection()  # as after a lock or statement timeout
            assert (await store.create_player("After a timeout", "a" * 64)).name == "After a timeout"
            orphan, store._claim._connection = (
                store._claim._connection,
                None,
            )  # as after a network cut: the session
            assert orphan is not None  # lives on, holding the lock
            assert (await store.create_player("After a cut", "b" * 64)).name == "After a cut"
            assert not store.claim_lost.is_set() and await advisory_locks_held(url) == 1
            with contextlib.suppress(Exception):  # (its session was ended: only this end is left)
                await orphan.close()


async def advisory_locks_held(url: str) -> int:
    admin = create_engine(url, pooled=False)
    async with admin.connect() as connection:
        held = await connection.scalar(
            text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )
        )
    await admin.dispose()
    return int(held or 0)


async def test_a_postgresql_claim_taken_by_another_server_meanwhile_stops_every_write(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two servers must never both write as one instance: the cut-off one refuses every write, and says
    its claim is lost, so that its server stops."""
    monkeypatch.setattr(claims, "CLAIM_CHECK_S", 3600.0)  # (no idle check: the second is first)
    with temporary_postgres_database(postgres_url, "claim") as url:
        async with await Store.open(url) as first:
            await first.claim_instance("taken")
            await cut_off_every_other_connection(url)
            async with await Store.open(url) as second:
                await second.claim_instance("taken")
                for attempt in range(2):
                    with pytest.raises(StorageError, match="another server"):
                        await first.create_player(f"Cut off {attempt}", f"{attempt}" * 64)
                assert first.claim_lost.is_set()
                assert await second.player_by_token_hash("0" * 64) is None
                assert (await second.create_player("Taken over", "b" * 64)).name == "Taken over"


def instance_lock_file(database: Path, instance_id: str) -> Path:
    """Where a server claims ``instance_id`` on an SQLite file: a lock file beside it."""
    digest = hashlib.sha256(instance_id.encode()).hexdigest()[:16]
    return database.resolve().with_name(f"{database.name}.instance-{digest}.lock")


CLAIM_AND_SLEEP = """
import asyncio, sys
from server.storage import Store

async def main():
    store = await Store.open(sys.argv[1])
    await store.claim_instance(sys.argv[2])
    print("claimed", flush=True)
    await asyncio.sleep(3600)

asyncio.run(main())
"""


async def test_a_killed_server_leaves_its_sqlite_instance_claim_to_the_next(tmp_path: Path) -> None:
    """The kernel drops the lock with the process, as PostgreSQL drops the advisory lock with the
    connection: no stale claim after a SIGKILL. The lock file stays (deleting it would race)."""
    database = tmp_path / "arena.sqlite3"
    url, instance = f"sqlite+aiosqlite:///{database}", "killed"
    lock = instance_lock_file(database, instance)
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CLAIM_AND_SLEEP, url, instance,
        cwd=tmp_path, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    try:
        assert holder.stdout is not None
        line = await asyncio.wait_for(holder.stdout.readline(), 60)
        assert line == b"claimed\n", line + await holder.stdout.read()
        async with await Store.open(url) as store:
            with pytest.raises(InstanceTakenError, match=re.escape(str(lock))):
                await store.claim_instance(instance)  # the live process holds it
        holder.kill()
        assert await asyncio.wait_for(holder.wait(), 30) == -9
    finally:
        if holder.returncode is None:
            holder.kill()
            await holder.wait()
    async with await Store.open(url) as store:
        await store.claim_instance(instance)  # the dead process's claim went with it
    assert lock.is_file()


async def test_a_server_that_cannot_take_its_sqlite_lock_file_says_which_and_why(tmp_path: Path) -> None:
    database = tmp_path / "arena.sqlite3"
    lock = instance_lock_file(database, "blocked")
    lock.mkdir()  # (running as root, a read-only directory would not stop the open)
    config = ServerConfig(port=0, db_url=f"sqlite+aiosqlite:///{database}", instance_id="blocked")
    expected = f"cannot claim instance 'blocked': cannot open its lock file {lock}: Is a directory"
    with pytest.raises(ServerStartError, match=f"^{re.escape(expected)}$"):
        async with running_server(config):
            pass


async def test_in_memory_sqlite_stores_claim_nothing() -> None:
    """No other server can reach an in-memory database, so there is nothing to claim or refuse."""
    async with await Store.open("sqlite+aiosqlite:///:memory:") as first:
        await first.claim_instance("memory")
        async with await Store.open("sqlite+aiosqlite:///:memory:") as second:
            await second.claim_instance("memory")


async def test_plyarena_serve_twice_under_one_instance_id_on_one_sqlite_file_refuses_the_second(
    tmp_path: Path,
) -> None:
    """Two ports, one file, one ``--instance-id``: the second exits at start, saying why in one line."""
    database = tmp_path / "arena.sqlite3"
    url, instance = f"sqlite+aiosqlite:///{database}", f"twice-{secrets.token_hex(3)}"
    first = ServerProcess(url, instance, tmp_path)
    await first.start()
    try:
        second = ServerProcess(url, instance, tmp_path)
        assert second.port != first.port
        process = await asyncio.create_subprocess_exec(
            sys.executable, *second.args,
            cwd=tmp_path, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        try:
            output, _ = await asyncio.wait_for(process.communicate(), 60)
        finally:
            if process.returncode is None:  # it serves, or hangs: not left behind
                process.kill()
                await process.wait()
        assert process.returncode == 1, output
        assert output.decode().splitlines()[-1] == (
            f"plyarena serve: error: another server runs as instance {instance!r} on the database file "
            f"{database} (it holds {instance_lock_file(database, instance)}): give each server its own "
            "--instance-id"
        )
        assert first.process is not None and first.process.returncode is None, "the first one serves on"
    finally:
        await first.stop()
