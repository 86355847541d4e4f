"""Group commit applies a batch kind by kind: a handful of statements, however many writes it holds."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event
from test_storage import at, database_url, match_record, move, new_player, postgres_store_url, seat_of, store

from server.storage import ConflictError, MatchFinish, Store

__all__ = ["database_url", "postgres_store_url", "store"]  # fixtures shared with test_storage


@contextmanager
def counted_statements(target: Store) -> Iterator[list[str]]:
    """Every statement the store sends to the database meanwhile (an executemany counts once)."""
    statements: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        statements.append(statement.split(None, 1)[0].upper())

    engine = target._engine.sync_engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", count)


async def test_a_batch_of_every_kind_of_write_takes_one_statement_per_kind(store: Store) -> None:
    alice, bob, carol = [await new_player(store, name) for name in ("alice", "bob", "carol")]
    before = store.stats.transactions
    with counted_statements(store) as statements:
        await asyncio.gather(
            store.create_player("dave", "hash-of-dave"),
            store.touch_player(alice.id, at(5)),
            store.create_match(match_record("m1", alice, status="open")),
            store.take_seat("m1", seat_of(1, bob)),
            store.start_match("m1", at(1)),
            store.append_move(move("m1", 0)),
            store.append_move(move("m1", 1), MatchFinish("finished", 1, "four in a row", at(3))),
            store.create_match(match_record("m2", carol, bob)),
            *(store.append_move(move("m2", ply)) for ply in range(4)),
            store.finish_match("m2", MatchFinish("aborted", None, "aborted by seat 0", at(4))),
        )

    assert store.stats.transactions - before == 1
    writes = [kind for kind in statements if kind in ("INSERT", "UPDATE")]
    updates_one_by_one = 0 if store._engine.dialect.supports_sane_multi_rowcount else 1
    # player, last seen, match, seat, start, move, result; results one by one where rows cannot be counted
    assert len(writes) == 7 + updates_one_by_one, statements
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
