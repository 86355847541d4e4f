"""Group commit applies a batch kind by kind: a handful of statements, however many writes it holds."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from test_storage import (
    at,
    chat,
    database_url,
    match_record,
    move,
    new_player,
    postgres_store_url,
    seat_of,
    store,
)

from server.storage import ConflictError, EngineInfo, MatchFinish, Store
from server.storage.sqlite_writer import (
    SQLITE_WAL_AUTOCHECKPOINT_PAGES,
    Answered,
    Batch,
    configure_sqlite_connection,
)

__all__ = ["database_url", "postgres_store_url", "store"]  # fixtures shared with test_storage


@contextmanager
def counted_statements(target: Store) -> Iterator[list[str]]:
    """Every statement the store sends to the database meanwhile (an executemany counts once)."""
    statements: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        statements.append(statement.split(None, 1)[0].upper())

    engine = target._engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    batches = target._sqlite  # SQLite's batches go around SQLAlchemy, to the writer process
    if batches is not None:
        writer = batches._writer
        send = writer.send

        def counting_send(batch: Batch, answered: Answered) -> None:  # one executemany per entry
            statements.extend(batches.statements[index][0].split(None, 1)[0].upper() for index, _ in batch)
            send(batch, answered)

        writer.send = counting_send  # type: ignore[method-assign]
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", count)
        if batches is not None:
            del writer.send


async def test_a_batch_of_every_kind_of_write_takes_one_statement_per_kind(store: Store) -> None:
    alice, bob, carol = [await new_player(store, name) for name in ("alice", "bob", "carol")]
    before = store.stats.transactions
    with counted_statements(store) as statements:
        # The other writes are queued as they are called; a new player's only once its coroutine runs,
        # which a task does at the loop's next turn, before the writer it wakes takes its batch.
        dave = asyncio.ensure_future(store.create_player("dave", "hash-of-dave"))
        await asyncio.sleep(0)
        await asyncio.gather(
            dave,
            store.touch_player(alice.id, at(5)),
            store.create_match(match_record("m1", alice, status="open")),
            store.take_seat("m1", seat_of(1, bob)),
            store.start_match("m1", at(1)),
            store.append_move(move("m1", 0)),
            store.append_move(move("m1", 1), MatchFinish("finished", 1, "four in a row", at(3))),
            store.create_match(match_record("m2", carol, bob)),
            *(store.append_move(move("m2", ply)) for ply in range(4)),
            store.finish_match("m2", MatchFinish("aborted", None, "aborted by seat 0", at(4))),
            store.append_chat(chat("m1", 1)),
            store.append_chat(chat("m2", 1)),
        )

    assert store.stats.transactions - before == 1
    writes = [kind for kind in statements if kind in ("INSERT", "UPDATE")]
    updates_one_by_one = 0 if store._engine.dialect.supports_sane_multi_rowcount else 1
    # player, last seen, match, seat, start, move, result, chat line; results one by one where rows
    # cannot be counted
    assert len(writes) == 8 + updates_one_by_one, statements
    m1, m2 = await store.get_match("m1"), await store.get_match("m2")
    assert m1 is not None and m2 is not None
    assert (m1.status, m1.winner, m1.started_at, [m.ply for m in m1.moves]) == ("finished", 1, at(1), [0, 1])
    assert [seat.player_id for seat in m1.seats] == [alice.id, bob.id]
    assert (m2.status, [m.ply for m in m2.moves]) == ("aborted", [0, 1, 2, 3])


async def test_an_update_that_changes_no_row_fails_alone_in_a_batch(store: Store) -> None:
    alice, bob = await new_player(store, "alice"), await new_player(store, "bob")
    await asyncio.gather(*(store.create_match(match_record(f"m{i}", alice, bob)) for i in range(5)))
    await store.finish_match("m0", MatchFinish("finished", 0, "seat 1 resigned", at(1)))

    results = await asyncio.gather(
        *(store.append_move(move(f"m{i}", 0)) for i in range(1, 5)),
        store.finish_match("m0", MatchFinish("finished", 1, "seat 0 resigned", at(2))),
        store.start_match("m1", at(2)),  # live already
        *(store.append_move(move(f"m{i}", 1)) for i in range(1, 5)),
        return_exceptions=True,
    )

    assert [type(result) for result in results if result is not None] == [ConflictError, ConflictError]
    assert store.stats.split_batches >= 1
    finished = await store.get_match("m0")
    assert finished is not None and finished.winner == 0
    for i in range(1, 5):
        stored = await store.get_match(f"m{i}")
        assert stored is not None and [m.ply for m in stored.moves] == [0, 1]


async def write_a_bit_of_everything(target: Store) -> None:
    """The same writes, values and all, on any store: every kind of row, with timestamps, JSON and NULLs."""
    alice, bob = await new_player(target, "alice"), await new_player(target, "bob", is_bot=True)
    options = {"time_control": "5+3", "visibility": "public", "bot": {"level": 3}}
    await asyncio.gather(
        target.touch_player(alice.id, at(7.25)),
        target.touch_player(bob.id, at(8)),
        target.create_match(match_record("m1", alice, status="open", options=options)),
        target.take_seat("m1", seat_of(1, bob)),
        target.start_match("m1", at(1.5)),
        target.append_move(move("m1", 0, clocks_ms=(299_000, 300_000))),
        target.append_move(
            move("m1", 1, engine=EngineInfo(score=-3, depth=9, nodes=2**40, pv=("c", "d"))),
            MatchFinish("finished", 1, "four in a row", at(3.000001)),
        ),
        target.create_match(match_record("m2", bob, alice, rematch_of="m1", started_at=at(4))),
        target.append_move(move("m2", 0, engine=EngineInfo(score=None, depth=1, nodes=None, pv=()))),
        target.finish_match("m2", MatchFinish("aborted", None, "aborted by seat 0", at(5))),
    )


PLAYERS = "SELECT name, token_hash, is_bot, last_seen_at FROM players"
SEATS = "SELECT match_id, seat, player_id FROM seats"


def stored_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row as SQLite holds it, player ids and the times the store takes itself left out."""
    with sqlite3.connect(path) as connection:
        names = dict(connection.execute("SELECT id, name FROM players"))
        return {
            "players": sorted(
                connection.execute("SELECT name, token_hash, is_bot, last_seen_at FROM players")
            ),
            "matches": sorted(connection.execute("SELECT * FROM matches")),
            "seats": sorted(
                (match_id, seat, names[player_id])
                for match_id, seat, player_id in connection.execute(
                    "SELECT match_id, seat, player_id FROM seats"
                )
            ),
            "moves": sorted(connection.execute("SELECT * FROM moves")),
        }


async def test_sqlite_batches_store_exactly_what_sqlalchemy_stores(tmp_path: Path) -> None:
    """SQLite's batches bypass SQLAlchemy's execution but not its conversions: the stored text is the same."""
    fast = await Store.open(f"sqlite+aiosqlite:///{tmp_path}/fast.sqlite3")
    through_sqlalchemy = await Store.open(f"sqlite+aiosqlite:///{tmp_path}/sqlalchemy.sqlite3")
    assert fast._sqlite is not None and through_sqlalchemy._sqlite is not None
    await through_sqlalchemy._sqlite.close()
    through_sqlalchemy._sqlite = None
    try:
        for target in (fast, through_sqlalchemy):
            await write_a_bit_of_everything(target)
    finally:
        await fast.close()
        await through_sqlalchemy.close()

    fast_rows = stored_rows(tmp_path / "fast.sqlite3")
    assert fast_rows == stored_rows(tmp_path / "sqlalchemy.sqlite3")
    assert len(fast_rows["moves"]) == 3 and len(fast_rows["matches"]) == 2


def test_sqlite_connections_commit_durably_with_short_checkpoints(tmp_path: Path) -> None:
    """What every SQLite connection of the store is set to, the writer process's included: WAL, an
    fsync at every commit, and the WAL copied into the database every quarter of SQLite's default
    pages (by the commits of the connections that write rarely: the writer's own checkpoints run on
    a thread of their own, see test_sqlite_writer)."""
    connection = sqlite3.connect(tmp_path / "settings.sqlite3")
    try:
        configure_sqlite_connection(connection)
        settings = {
            pragma: connection.execute(f"PRAGMA {pragma}").fetchone()[0]
            for pragma in ("journal_mode", "synchronous", "wal_autocheckpoint", "foreign_keys")
        }
    finally:
        connection.close()
    assert settings == {
        "journal_mode": "wal",
        "synchronous": 2,  # FULL
        "wal_autocheckpoint": SQLITE_WAL_AUTOCHECKPOINT_PAGES,
        "foreign_keys": 1,
    }
