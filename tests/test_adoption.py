"""Instances sharing a PostgreSQL database: a dead instance's matches play on at another, and an owner that
lost its lease can commit nothing more (server/storage/leases.py)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from support.client import ArenaClient
from support.fixtures import Connect
from support.process import ServerProcess
from support.services import TcpProxy
from support.waiting import wait_until

from server.app import Server, running_server
from server.config import ServerConfig
from server.storage.leases import LEASE_S

HOST_OF = sqlalchemy.text("SELECT host FROM matches WHERE id = :id")
LEASE = 3.0
"""Short leases, so that a dead instance's matches are taken over within seconds."""


@contextlib.asynccontextmanager
async def instance(db_url: str, **options: Any) -> AsyncIterator[Server]:
    config = ServerConfig(port=0, db_url=db_url, grace_s=60.0, lease_s=LEASE, adoption_check_s=0.5, **options)
    async with running_server(config) as server:
        yield server


async def lapse_lease(db_url: str, instance_id: str) -> None:
    """What the database sees of an instance frozen or cut off for longer than its lease."""
    engine = create_async_engine(db_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                sqlalchemy.text(
                    "UPDATE instance_leases SET expires_at = now() - interval '1 second' WHERE instance = :i"
                ),
                {"i": instance_id},
            )
    finally:
        await engine.dispose()


async def host_of(db_url: str, match_id: str) -> str:
    engine = create_async_engine(db_url)
    try:
        async with engine.connect() as connection:
            return str(
                await connection.scalar(
                    sqlalchemy.text("SELECT host FROM matches WHERE id = :id"), {"id": match_id}
                )
            )
    finally:
        await engine.dispose()


async def one_move_played(connect: Connect, server: Server) -> tuple[ArenaClient, ArenaClient, str]:
    """Alice and Bob at ``server``, in a Connect Four match where Alice has played the centre."""
    alice = await connect.player(server, "Alice")
    bob = await connect.player(server, "Bob")
    match_id = (await alice.request("match.create", game="connect4", seat=0))["match_id"]
    await bob.request("match.join", match_id=match_id)
    assert (await alice.request("move", match_id=match_id, ply=0, move="4"))["type"] == "moved"
    return alice, bob, match_id


async def resume(connect: Connect, url: str, token: str, match_id: str) -> tuple[ArenaClient, dict[str, Any]]:
    """A player back at ``url`` with its token, following its match again."""
    client = await connect(url)
    await client.hello(token=token)
    state = await client.request("match.watch", match_id=match_id)
    assert state["type"] == "match.state", state
    return client, state


def test_the_default_lease_outlasts_an_idle_instances_renewals() -> None:
    from server.storage.claims import CLAIM_CHECK_S

    assert LEASE_S >= 1.5 * CLAIM_CHECK_S


async def test_an_owner_whose_lease_lapsed_commits_nothing_and_its_match_plays_on_elsewhere(
    arena_postgres_url: str, connect: Connect
) -> None:
    async with instance(arena_postgres_url) as first:
        alice, bob, match_id = await one_move_played(connect, first)
        await lapse_lease(arena_postgres_url, first.config.instance_id)
        async with instance(arena_postgres_url) as second:
            await wait_until(
                lambda: match_id in second.host.matches, 10, "the match taken over by the second instance"
            )
            assert await host_of(arena_postgres_url, match_id) == second.config.instance_id
            # The old owner still runs and still has its sockets, but its epoch moved on: fenced.
            late = await bob.request("move", match_id=match_id, ply=1, move="4")
            assert late["type"] == "error" and late["code"] == "unavailable", late
            assert first.store.claim_lost.is_set()
            # Both players come back at the new host with their tokens: nothing acknowledged is lost.
            alice_there, state = await resume(connect, second.ws_url, alice.token, match_id)
            bob_there, _ = await resume(connect, second.ws_url, bob.token, match_id)
            assert state["moves"] == ["4"] and state["status"] == "live"
            assert (await bob_there.request("move", match_id=match_id, ply=1, move="4"))["type"] == "moved"
            assert (await alice_there.expect(type_="moved", match_id=match_id, ply=1))["move"] == "4"
            # Asked of the old owner's id, the API names the new host.
            assert await host_of(arena_postgres_url, match_id) == second.config.instance_id


async def test_an_owner_cut_off_from_the_database_refuses_moves_and_is_fenced_when_it_is_back(
    arena_postgres_url: str, connect: Connect
) -> None:
    """A partition: the owner's clients stay connected, its database does not; another instance takes
    the match over, and the owner, reconnected, finds its epoch moved on."""
    target = make_url(arena_postgres_url)
    proxy = TcpProxy(target.host or "127.0.0.1", target.port or 5432)
    await proxy.start()
    through_proxy = target.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    try:
        async with instance(through_proxy) as cut_off:
            _, bob, match_id = await one_move_played(connect, cut_off)
            await proxy.cut()
            refused = await bob.request("move", match_id=match_id, ply=1, move="3")
            assert refused["type"] == "error" and refused["code"] == "unavailable", refused
            async with instance(arena_postgres_url) as survivor:
                await wait_until(
                    lambda: match_id in survivor.host.matches, LEASE + 10, "the match taken over"
                )
                await proxy.start()  # the owner reaches the database again, and its epoch is gone
                late = await bob.request("move", match_id=match_id, ply=1, move="3")
                assert late["type"] == "error" and late["code"] == "unavailable", late
                await wait_until(cut_off.store.claim_lost.is_set, 10, "the old owner fenced off")
                bob_there, state = await resume(connect, survivor.ws_url, bob.token, match_id)
                assert state["moves"] == ["4"]
                played = await bob_there.request("move", match_id=match_id, ply=1, move="3")
                assert played["type"] == "moved", played
    finally:
        await proxy.close()


@pytest.mark.slow
async def test_a_killed_instances_matches_are_taken_over_within_its_lease_and_finish(
    arena_postgres_url: str, connect: Connect, tmp_path: Path
) -> None:
    doomed = ServerProcess(arena_postgres_url, "doomed", tmp_path, "--lease", str(LEASE))
    await doomed.start()
    try:
        matches = []
        for number in range(3):
            alice = await connect.player(doomed.ws_url, f"Alice{number}")
            bob = await connect.player(doomed.ws_url, f"Bob{number}")
            match_id = (await alice.request("match.create", game="tictactoe", seat=0))["match_id"]
            await bob.request("match.join", match_id=match_id)
            assert (await alice.request("move", match_id=match_id, ply=0, move="b2"))["type"] == "moved"
            matches.append((match_id, alice.token, bob.token))
        async with instance(arena_postgres_url) as survivor:
            await doomed.kill()
            await wait_until(
                lambda: all(match_id in survivor.host.matches for match_id, _, _ in matches),
                LEASE + 10,
                "every match of the killed instance taken over",
            )
            for match_id, alice_token, bob_token in matches:
                alice, state = await resume(connect, survivor.ws_url, alice_token, match_id)
                bob, _ = await resume(connect, survivor.ws_url, bob_token, match_id)
                assert state["moves"] == ["b2"]
                for ply, (player, move) in enumerate(
                    [(bob, "a1"), (alice, "a2"), (bob, "c3"), (alice, "c2")], start=1
                ):
                    assert (await player.request("move", match_id=match_id, ply=ply, move=move))[
                        "type"
                    ] == "moved"
                ended = await alice.expect(type_="ended", match_id=match_id)
                assert ended["winner"] == 0
    finally:
        await doomed.kill()
    # The killed instance, back under its id, takes back none of them.
    returning = ServerProcess(arena_postgres_url, "doomed", tmp_path, "--lease", str(LEASE))
    await returning.start()
    try:
        for match_id, _, _ in matches:
            assert await host_of(arena_postgres_url, match_id) != "doomed"
    finally:
        await returning.stop()
