"""Group commit applies a batch kind by kind: a handful of statements, however many writes it holds."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import event, insert
from sqlalchemy.dialects.sqlite import aiosqlite
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

from server.storage import ConflictError, EngineInfo, MatchFinish, MoveRecord, StorageError, Store, writes
from server.storage.batches import (
    MOVE_COLUMNS,
    Kind,
    Part,
    _move_values,
    _Positional,
    batch_rows,
    move_row,
)
from server.storage.models import MoveRow
from server.storage.sinks import SqlAlchemySink, SqliteProcessSink
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
    sink = target._sink  # SQLite's batches go around SQLAlchemy, to the writer process
    batches = sink.batches if isinstance(sink, SqliteProcessSink) else None
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
            store.commit(writes.player_seen(alice.id, at(5))),
            store.create_match(match_record("m1", alice, status="open")),
            store.commit(writes.new_seat("m1", seat_of(1, bob), at(1))),
            store.start_match("m1", at(1)),
            store.commit(writes.new_move(move("m1", 0))),
            store.commit(writes.new_move(move("m1", 1), MatchFinish("finished", 1, "four in a row", at(3)))),
            store.create_match(match_record("m2", carol, bob)),
            *(store.commit(writes.new_move(move("m2", ply))) for ply in range(4)),
            store.commit(writes.match_finish("m2", MatchFinish("aborted", None, "aborted by seat 0", at(4)))),
            store.commit(writes.new_chat(chat("m1", 1))),
            store.commit(writes.new_chat(chat("m2", 1))),
        )

    assert store.stats.transactions - before == 1
    inserts_and_updates = [kind for kind in statements if kind in ("INSERT", "UPDATE")]
    updates_one_by_one = 0 if store._engine.dialect.supports_sane_multi_rowcount else 1
    # player, last seen, match, seat, start, move, result, chat line; results one by one where rows
    # cannot be counted
    assert len(inserts_and_updates) == 8 + updates_one_by_one, statements
    m1, m2 = await store.get_match("m1"), await store.get_match("m2")
    assert m1 is not None and m2 is not None
    assert (m1.status, m1.winner, m1.started_at, [m.ply for m in m1.moves]) == ("finished", 1, at(1), [0, 1])
    assert [seat.player_id for seat in m1.seats] == [alice.id, bob.id]
    assert (m2.status, [m.ply for m in m2.moves]) == ("aborted", [0, 1, 2, 3])


async def test_an_update_that_changes_no_row_fails_alone_in_a_batch(store: Store) -> None:
    alice, bob = await new_player(store, "alice"), await new_player(store, "bob")
    await asyncio.gather(*(store.create_match(match_record(f"m{i}", alice, bob)) for i in range(5)))
    await store.commit(writes.match_finish("m0", MatchFinish("finished", 0, "seat 1 resigned", at(1))))

    results = await asyncio.gather(
        *(store.commit(writes.new_move(move(f"m{i}", 0))) for i in range(1, 5)),
        store.commit(writes.match_finish("m0", MatchFinish("finished", 1, "seat 0 resigned", at(2)))),
        store.start_match("m1", at(2)),  # live already
        *(store.commit(writes.new_move(move(f"m{i}", 1))) for i in range(1, 5)),
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
        target.commit(writes.player_seen(alice.id, at(7.25))),
        target.commit(writes.player_seen(bob.id, at(8))),
        target.create_match(match_record("m1", alice, status="open", options=options)),
        target.commit(writes.new_seat("m1", seat_of(1, bob), at(1.25))),
        target.start_match("m1", at(1.5)),
        target.commit(writes.new_move(move("m1", 0, clocks_ms=(299_000, 300_000)))),
        target.commit(
            writes.new_move(
                move("m1", 1, engine=EngineInfo(-3, 9, 2**40, ("c", "d"), source="searched", time_ms=2**40)),
                MatchFinish("finished", 1, "four in a row", at(3.000001)),
            )
        ),
        target.create_match(match_record("m2", bob, alice, rematch_of="m1", started_at=at(4))),
        target.commit(writes.new_move(move("m2", 0, engine=EngineInfo(score=5, pv=("e",), source="book")))),
        target.commit(writes.match_finish("m2", MatchFinish("aborted", None, "aborted by seat 0", at(5)))),
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
    assert isinstance(fast._sink, SqliteProcessSink)
    assert isinstance(through_sqlalchemy._sink, SqliteProcessSink)
    await through_sqlalchemy._sink.close()
    through_sqlalchemy._sink = SqlAlchemySink(through_sqlalchemy._claim, through_sqlalchemy._ledger)
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


SQLITE = aiosqlite.dialect()  # (the store's own dialect for an SQLite file)
ints = st.integers(-(2**63), 2**63 - 1)
moves = st.builds(
    MoveRecord,
    match_id=st.text(max_size=64),
    ply=st.integers(0, 2**31 - 1),
    seat=st.sampled_from((0, 1)),
    notation=st.text(max_size=64),
    think_ms=st.integers(0, 2**31 - 1),
    played_at=st.datetimes(timezones=st.timezones()).filter(lambda value: value.utcoffset() is not None),
    clocks_ms=st.none() | st.tuples(ints, ints),
    engine=st.none()
    | st.builds(
        EngineInfo,
        score=st.none() | ints,
        depth=st.none() | ints,
        nodes=st.none() | ints,
        pv=st.lists(st.text(max_size=8), max_size=4).map(tuple),
        source=st.none() | st.sampled_from(("book", "solved", "searched")),
        time_ms=st.none() | ints,
    ),
)


def sqlalchemy_values(params: dict[str, Any]) -> list[Any]:
    """What SQLAlchemy binds for ``insert(MoveRow)`` with ``params`` on SQLite: its compiled parameters,
    each through the bind processor of its type, in the statement's order."""
    compiled = insert(MoveRow).compile(dialect=SQLITE)
    bound = compiled.construct_params(params)
    processors = compiled._bind_processors
    names = compiled.positiontup or ()
    return [processors[name](bound[name]) if name in processors else bound[name] for name in names]


@given(moves)
def test_a_moves_values_for_sqlite_are_what_sqlalchemy_binds_for_its_parameters(move: MoveRecord) -> None:
    """A move's values come straight from its record (no parameters by name), exactly as SQLAlchemy
    would bind :func:`move_row`'s parameters, timestamps and JSON included."""
    (part,) = writes.new_move(move)
    assert part.source is move and part.params == move_row(move)
    values = _Positional.compile(Kind.NEW_MOVE, SQLITE).values(move)
    assert values == sqlalchemy_values(move_row(move))
    assert [type(value) for value in values] == [type(value) for value in sqlalchemy_values(move_row(move))]


def test_a_moves_values_are_refused_for_a_statement_they_do_not_match() -> None:
    """A changed model (another column, another conversion) stops the store rather than misplace a value."""
    positional = _Positional.compile(Kind.NEW_MOVE, SQLITE)
    assert positional.values is not None
    with pytest.raises(RuntimeError, match="not the columns and conversions"):
        _move_values((*MOVE_COLUMNS, "extra"), (), {})
    with pytest.raises(RuntimeError, match="not the columns and conversions"):
        _move_values(MOVE_COLUMNS, (), {})


def test_bad_moves_are_refused_with_what_is_wrong() -> None:
    good = move("m1", 3)
    for fields, message in (
        ({"ply": -1}, "move -1 of match 'm1': ply must not be negative"),
        ({"seat": 2}, "move 3 of match 'm1': seat must be 0 or 1, not 2"),
        ({"think_ms": -5}, "move 3 of match 'm1': think_ms must not be negative, not -5"),
        ({"clocks_ms": (1,)}, "move 3 of match 'm1': clocks_ms must hold two clocks, not (1,)"),
    ):
        with pytest.raises(ValueError) as refused:
            writes.new_move(msgspec.structs.replace(good, **fields))
        assert str(refused.value) == message


async def test_a_move_that_cannot_be_converted_fails_alone_in_a_batch(store: Store) -> None:
    """A naive timestamp fails a move's conversion: its batch is retried one write at a time, and only
    that move is refused, with the timestamp's own error."""
    alice, bob = await new_player(store, "alice"), await new_player(store, "bob")
    await store.create_match(match_record("m1", alice, bob))
    naive = move("m1", 1, played_at=datetime(2026, 1, 1))

    results = await asyncio.gather(
        store.commit(writes.new_move(move("m1", 0))),
        store.commit(writes.new_move(naive)),
        return_exceptions=True,
    )

    assert results[0] is None and isinstance(results[1], StorageError), results
    assert str(results[1]).startswith("move 1 of match 'm1' not stored: ") and "no time zone" in str(
        results[1]
    )
    stored = await store.get_match("m1")
    assert stored is not None and [m.ply for m in stored.moves] == [0]
    assert (store.stats.moves, store.stats.failed_writes) == (1, 1)


@given(st.lists(st.lists(st.sampled_from(Kind), min_size=1, max_size=3), max_size=30))
def test_a_batch_sorts_its_writes_parts_by_kind_keeping_their_order(kinds: list[list[Kind]]) -> None:
    writes = [
        tuple(Part(kind, {"write": index, "part": at}) for at, kind in enumerate(write))
        for index, write in enumerate(kinds)
    ]
    every_part = [part for write in writes for part in write]
    by_kind = [(kind, [part for part in every_part if part.kind == kind]) for kind in Kind]
    assert batch_rows(writes) == [(kind, parts) for kind, parts in by_kind if parts]
