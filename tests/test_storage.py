"""The store on SQLite and PostgreSQL: every method, paging, group commit, refusals that store nothing."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pg_scratch import temporary_postgres_database
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from server.storage import (
    MAX_LIST_LIMIT,
    ChatRecord,
    ConflictError,
    DatabaseUnavailableError,
    DuplicateMoveError,
    EngineInfo,
    Histogram,
    MatchFinish,
    MatchRecord,
    MoveRecord,
    NotFoundError,
    PlayerRecord,
    SeatRecord,
    SeatTakenError,
    StorageError,
    Store,
    StoreClosedError,
    WriteStats,
)
from server.storage.classify import is_unavailable
from server.storage.engine import create_engine
from server.storage.migrate import upgrade_to_head
from server.storage.writes import match_finish, new_chat, new_move, new_seat, player_seen

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SQL_LOOKING = "Robert'); DROP TABLE players; -- \" %s %(name)s ? :name $1 \\ 😀"


@pytest.fixture(scope="session")
def postgres_store_url(postgres_url: str) -> Iterator[str]:
    with temporary_postgres_database(postgres_url, "storage") as url:
        yield url


async def emptied(postgres_url: str) -> str:
    """The session's PostgreSQL database, migrated and with every table empty."""
    engine = create_engine(postgres_url, pooled=False)
    try:
        await upgrade_to_head(engine)
        async with engine.begin() as connection:
            tables = "rating_changes, ratings, chat_lines, moves, seats, matches, sessions, players"
            await connection.execute(text(f"TRUNCATE {tables}"))
    finally:
        await engine.dispose()
    return postgres_url


@pytest.fixture(params=["sqlite", "postgresql"])
async def database_url(request: pytest.FixtureRequest, tmp_path) -> str:
    """An empty database: a new SQLite file, or the session's PostgreSQL database emptied."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'store.sqlite3'}"
    return await emptied(request.getfixturevalue("postgres_store_url"))


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Store]:
    store = await Store.open(database_url)
    yield store
    await store.close()


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


async def new_player(store: Store, name: str, *, is_bot: bool = False) -> PlayerRecord:
    return await store.create_player(name, f"hash-of-{name}", is_bot=is_bot)


def seat_of(seat: int, player: PlayerRecord) -> SeatRecord:
    return SeatRecord(seat=seat, player_id=player.id, player_name=player.name, is_bot=player.is_bot)


def match_record(match_id: str, *players: PlayerRecord, **fields: object) -> MatchRecord:
    values: dict = {"game": "connect4", "options": {}, "status": "live", "host": "alpha", "created_at": T0}
    values |= fields
    seats = tuple(seat_of(seat, player) for seat, player in enumerate(players))
    return MatchRecord(id=match_id, seats=seats, **values)


def move(match_id: str, ply: int, notation: str = "d", **fields: object) -> MoveRecord:
    values: dict = {"seat": ply % 2, "think_ms": 250, "played_at": at(ply)}
    values |= fields
    return MoveRecord(match_id=match_id, ply=ply, notation=notation, **values)


async def test_players_are_found_by_token_hash_only(store: Store) -> None:
    ada = await store.create_player("ada", "hash-a")
    bot = await store.create_player("level 3", "hash-b", is_bot=True)

    assert await store.player_by_token_hash("hash-a") == ada
    assert await store.player_by_token_hash("hash-b") == bot
    assert bot.is_bot and not ada.is_bot
    assert ada.id != bot.id
    assert ada.created_at.tzinfo is not None
    assert await store.player_by_token_hash("hash-c") is None


async def test_a_token_hash_belongs_to_one_player(store: Store) -> None:
    await store.create_player("ada", "hash-a")
    with pytest.raises(ConflictError, match="token hash"):
        await store.create_player("eve", "hash-a")
    assert (await store.player_by_token_hash("hash-a")).name == "ada"


async def test_a_last_seen_time_needs_a_known_player(store: Store) -> None:
    ada = await new_player(store, "ada")
    await store.commit(player_seen(ada.id, at(60)))
    with pytest.raises(NotFoundError, match="nobody"):
        await store.commit(player_seen("nobody", at(60)))


async def test_a_match_is_stored_with_its_seats_options_and_times(store: Store) -> None:
    ada, bot = await new_player(store, "ada"), await new_player(store, "bot", is_bot=True)
    options = {"time_control": {"minutes": 5, "increment": 3}, "public": True, "bot": {"level": 4}}
    created = match_record("m1", ada, bot, status="open", options=options, created_at=at(0.123456))
    await store.create_match(created)

    stored = await store.get_match("m1")
    assert stored == created
    assert stored.created_at == at(0.123456) and stored.created_at.tzinfo is not None
    assert stored.seats == (seat_of(0, ada), seat_of(1, bot))
    assert await store.get_match("m2") is None


async def test_a_match_id_is_used_once(store: Store) -> None:
    await store.create_match(match_record("m1", game="othello"))
    with pytest.raises(ConflictError, match="'m1' is already used"):
        await store.create_match(match_record("m1", game="draughts"))
    assert (await store.get_match("m1")).game == "othello"


async def test_create_match_refuses_bad_records_before_writing(store: Store) -> None:
    with pytest.raises(ValueError, match="'paused'"):
        await store.create_match(match_record("m1", status="paused"))
    with pytest.raises(ValueError, match="append them"):
        await store.create_match(match_record("m1", moves=(move("m1", 0),)))
    with pytest.raises(StorageError, match="no time zone"):
        await store.create_match(match_record("m1", created_at=datetime(2026, 1, 1)))
    assert await store.get_match("m1") is None


async def test_a_seat_is_taken_once(store: Store) -> None:
    ada, bob, eve = [await new_player(store, name) for name in ("ada", "bob", "eve")]
    await store.create_match(match_record("m1", ada, status="open"))

    await store.commit(new_seat("m1", seat_of(1, bob), at(1)))
    with pytest.raises(SeatTakenError, match="seat 1"):
        await store.commit(new_seat("m1", seat_of(1, eve), at(2)))
    with pytest.raises(NotFoundError):
        await store.commit(new_seat("m2", seat_of(0, eve), at(2)))
    with pytest.raises(ValueError, match="no seat 2"):
        await store.commit(new_seat("m1", seat_of(2, eve), at(2)))
    assert (await store.get_match("m1")).seats == (seat_of(0, ada), seat_of(1, bob))


async def test_start_match_turns_an_open_match_live_once(store: Store) -> None:
    await store.create_match(match_record("m1", status="open"))
    await store.start_match("m1", at(5))

    started = await store.get_match("m1")
    assert (started.status, started.started_at) == ("live", at(5))
    with pytest.raises(ConflictError, match="it is live, not open"):
        await store.start_match("m1", at(6))
    with pytest.raises(NotFoundError, match="'m2'"):
        await store.start_match("m2", at(6))


async def test_moves_come_back_in_ply_order_with_clocks_and_engine_info(store: Store) -> None:
    await store.create_match(match_record("m1"))
    moves = [
        move("m1", 0, "d1", clocks_ms=(299_750, 300_000)),
        move(
            "m1",
            1,
            "e1",
            clocks_ms=(299_750, 298_000),
            engine=EngineInfo(17, 9, 123_456_789_012, ("e1", "d2"), "searched", 2**40),
        ),
        move("m1", 2, "d2", clocks_ms=(296_000, 298_000), engine=EngineInfo(score=-3)),
        move("m1", 3, "d3", engine=EngineInfo(score=999_990, pv=("d3",), source="book", time_ms=0)),
        move("m1", 4, "d4", engine=EngineInfo(-999_971, None, 1_200_000, ("d4",), "solved", 85)),
    ]
    await asyncio.gather(*(store.commit(new_move(m)) for m in reversed(moves)))

    stored = await store.get_match("m1")
    assert stored.moves == tuple(moves)
    assert all(m.played_at.tzinfo is not None for m in stored.moves)


async def test_the_last_move_and_the_result_commit_together(store: Store) -> None:
    await store.create_match(match_record("m1"))
    await store.commit(new_move(move("m1", 0)))
    await store.commit(new_move(move("m1", 1), MatchFinish("finished", 1, "four in a row", at(1))))

    stored = await store.get_match("m1")
    assert (stored.status, stored.winner, stored.reason, stored.finished_at) == (
        "finished",
        1,
        "four in a row",
        at(1),
    )
    assert len(stored.moves) == 2


async def test_a_duplicate_ply_is_refused_and_changes_nothing(store: Store) -> None:
    await store.create_match(match_record("m1"))
    await store.commit(new_move(move("m1", 0, "d1", think_ms=100)))

    with pytest.raises(DuplicateMoveError, match="ply 0") as refused:
        await store.commit(
            new_move(move("m1", 0, "a1", think_ms=999), MatchFinish("finished", 0, "resign", at(9)))
        )
    assert (refused.value.match_id, refused.value.ply) == ("m1", 0)

    stored = await store.get_match("m1")
    assert stored.moves == (move("m1", 0, "d1", think_ms=100),)
    assert (stored.status, stored.winner, stored.finished_at) == ("live", None, None)


async def test_a_move_for_an_unknown_match_is_refused(store: Store) -> None:
    with pytest.raises(NotFoundError, match="move 0 of match 'ghost'"):
        await store.commit(new_move(move("ghost", 0)))


async def test_bad_moves_are_refused_before_writing(store: Store) -> None:
    with pytest.raises(ValueError, match="seat must be 0 or 1"):
        await store.commit(new_move(move("m1", 0, seat=2)))
    with pytest.raises(ValueError, match="ply must not be negative"):
        await store.commit(new_move(move("m1", -1)))
    with pytest.raises(ValueError, match="cannot finish as 'live'"):
        await store.commit(new_move(move("m1", 0), MatchFinish("live", None, "?", at(0))))


async def test_a_result_is_recorded_once(store: Store) -> None:
    await store.create_match(match_record("m1", status="open"))
    await store.commit(
        match_finish("m1", MatchFinish("aborted", None, "aborted before the first move", at(3)))
    )

    stored = await store.get_match("m1")
    assert (stored.status, stored.winner, stored.reason) == ("aborted", None, "aborted before the first move")
    with pytest.raises(ConflictError, match="it is aborted"):
        await store.commit(match_finish("m1", MatchFinish("finished", 0, "flag", at(4))))
    with pytest.raises(ConflictError, match="it is aborted"):
        await store.commit(new_move(move("m1", 0), MatchFinish("finished", 0, "three in a row", at(4))))
    assert (await store.get_match("m1")).moves == ()
    with pytest.raises(NotFoundError):
        await store.commit(match_finish("m2", MatchFinish("finished", 0, "flag", at(4))))


async def test_unfinished_matches_are_what_a_restarted_instance_restores(database_url: str) -> None:
    store = await Store.open(database_url)
    ada, bob = await new_player(store, "ada"), await new_player(store, "bob")
    await store.create_match(match_record("open-a", ada, status="open", created_at=at(1)))
    await store.create_match(match_record("live-a", ada, bob, created_at=at(2)))
    await store.create_match(match_record("done-a", ada, bob, created_at=at(3)))
    await store.create_match(match_record("live-b", ada, bob, host="beta", created_at=at(4)))
    for ply in range(5):
        await store.commit(new_move(move("live-a", ply, f"c{ply}", clocks_ms=(60_000 - ply, 60_000))))
    await store.commit(new_move(move("done-a", 0), MatchFinish("finished", 0, "resignation", at(9))))
    await store.close()

    restarted = await Store.open(database_url)
    try:
        restored = await restarted.unfinished_matches("alpha")
        assert [match.id for match in restored] == ["open-a", "live-a"]
        live = restored[1]
        assert [m.ply for m in live.moves] == [0, 1, 2, 3, 4]
        assert live.moves[-1].clocks_ms == (59_996, 60_000)
        assert live.seats == (seat_of(0, ada), seat_of(1, bob))
        assert [match.id for match in await restarted.unfinished_matches("beta")] == ["live-b"]
        assert await restarted.unfinished_matches("gamma") == []
        adopted = await restarted.unfinished_matches("alpha", only={"live-a", "done-a", "live-b"})
        assert [match.id for match in adopted] == ["live-a"]  # (the ids taken over: unfinished, of alpha)
    finally:
        await restarted.close()


def chat(match_id: str, seq: int, text: str = "good luck") -> ChatRecord:
    return ChatRecord(
        match_id=match_id, seq=seq, seat=seq % 2, name=f"seat {seq % 2}", text=text, said_at=at(seq)
    )


async def test_a_restored_match_gets_its_last_chat_lines_oldest_first(database_url: str) -> None:
    store = await Store.open(database_url)
    ada, bob = await new_player(store, "ada"), await new_player(store, "bob")
    for match_id, status in (("talky", "live"), ("quiet", "live"), ("few", "open"), ("done", "finished")):
        await store.create_match(match_record(match_id, ada, bob, status=status))
    await asyncio.gather(*(store.commit(new_chat(chat("talky", seq, f"line {seq}"))) for seq in range(1, 13)))
    await store.commit(new_chat(chat("few", 3, "its answer is lost")))
    await store.commit(new_chat(chat("done", 1)))
    await store.commit(new_chat(chat("few", 3, SQL_LOOKING)))  # (a lost commit answer's line is replaced)
    with pytest.raises(NotFoundError, match="chat line 1 of match 'nowhere'"):
        await store.commit(new_chat(chat("nowhere", 1)))
    with pytest.raises(ValueError, match="seq must be positive"):
        await store.commit(new_chat(chat("few", 0)))
    await store.close()

    restarted = await Store.open(database_url)
    try:
        restored = {match.id: match for match in await restarted.unfinished_matches("alpha", last_chat=5)}
        assert set(restored) == {"talky", "quiet", "few"}
        assert [(line.seq, line.text) for line in restored["talky"].chat] == [
            (seq, f"line {seq}") for seq in range(8, 13)
        ]
        assert restored["talky"].chat[-1] == chat("talky", 12, "line 12")
        assert [restored[match_id].chat_count for match_id in ("talky", "quiet", "few")] == [12, 0, 1]
        assert restored["quiet"].chat == ()
        assert [line.text for line in restored["few"].chat] == [SQL_LOOKING]
        assert all(match.chat == () for match in await restarted.unfinished_matches("alpha"))
        only_few = await restarted.unfinished_matches("alpha", last_chat=5, only=["few"])
        assert [(match.id, match.chat_count) for match in only_few] == [("few", 1)]
        finished = await restarted.get_match("done")
        assert finished is not None and finished.chat == ()  # records of played matches leave chat out
    finally:
        await restarted.close()


async def test_list_matches_pages_newest_first_with_filters(store: Store) -> None:
    ada, bob, eve = [await new_player(store, name) for name in ("ada", "bob", "eve")]
    specs = [  # id, game, status, players, created (two share a time: the id breaks the tie)
        ("m0", "connect4", "finished", (ada, bob), at(0)),
        ("m1", "othello", "live", (ada, eve), at(1)),
        ("m2", "connect4", "open", (eve,), at(2)),
        ("m3a", "draughts", "live", (bob, eve), at(3)),
        ("m3b", "connect4", "live", (ada, bob), at(3)),
        ("m4", "connect4", "aborted", (bob,), at(4)),
        ("m5", "othello", "finished", (eve, ada), at(5)),
    ]
    for match_id, game, status, players, created in specs:
        await store.create_match(
            match_record(match_id, *players, game=game, status=status, created_at=created)
        )
    await store.commit(new_move(move("m1", 0)))

    newest_first = ["m5", "m4", "m3b", "m3a", "m2", "m1", "m0"]
    pages, before = [], None
    while page := await store.list_matches(limit=3, before=before):
        pages.append([match.id for match in page])
        before = page[-1].id
    assert pages == [newest_first[0:3], newest_first[3:6], newest_first[6:]]

    every = await store.list_matches()
    assert [match.id for match in every] == newest_first
    assert all(match.moves == () for match in every)
    assert every[0].seats == (seat_of(0, eve), seat_of(1, ada))

    async def ids(**filters: object) -> list[str]:
        return [match.id for match in await store.list_matches(**filters)]

    assert await ids(game="connect4") == ["m4", "m3b", "m2", "m0"]
    assert await ids(status="live") == ["m3b", "m3a", "m1"]
    assert await ids(player_id=ada.id) == ["m5", "m3b", "m1", "m0"]
    assert await ids(game="connect4", status="live", player_id=bob.id) == ["m3b"]
    assert await ids(game="connect4", limit=2, before="m3b") == ["m2", "m0"]
    assert await ids(game="chess") == []
    assert await ids(before="no-such-match") == []
    with pytest.raises(ValueError, match="limit must be at least 1, not 0"):
        await store.list_matches(limit=0)
    assert len(await store.list_matches(limit=MAX_LIST_LIMIT * 10)) == len(specs)


async def test_concurrent_moves_of_many_matches_share_commits(store: Store) -> None:
    matches, plies = 50, 10
    await asyncio.gather(*(store.create_match(match_record(f"m{i}")) for i in range(matches)))
    before = store.stats.transactions

    await asyncio.gather(
        *(store.commit(new_move(move(f"m{i}", ply))) for ply in range(plies) for i in range(matches))
    )

    transactions = store.stats.transactions - before
    assert store.stats.moves == matches * plies
    assert transactions * 10 <= matches * plies  # at least ten moves per commit on average
    assert store.stats.batch_size.count == store.stats.transactions
    assert store.stats.commit_seconds.count == store.stats.writes
    stored = await asyncio.gather(*(store.get_match(f"m{i}") for i in range(matches)))
    assert all([m.ply for m in match.moves] == list(range(plies)) for match in stored)


async def test_a_faulty_write_in_a_batch_fails_alone(store: Store) -> None:
    await asyncio.gather(*(store.create_match(match_record(f"m{i}")) for i in range(20)))
    await store.commit(new_move(move("m0", 0, "first")))
    moves = [move(f"m{i}", ply) for i in range(1, 20) for ply in range(3)]
    moves.insert(10, move("m0", 0, "again"))  # a duplicate ply in the middle
    moves.insert(30, move("ghost", 0))  # an unknown match

    results = await asyncio.gather(*(store.commit(new_move(m)) for m in moves), return_exceptions=True)

    failures = {m.match_id: type(r) for m, r in zip(moves, results, strict=True) if r is not None}
    assert failures == {"m0": DuplicateMoveError, "ghost": NotFoundError}
    assert store.stats.split_batches >= 1
    assert store.stats.failed_writes == 2
    assert (await store.get_match("m0")).moves == (move("m0", 0, "first"),)
    for i in range(1, 20):
        assert [m.ply for m in (await store.get_match(f"m{i}")).moves] == [0, 1, 2]


async def test_sql_looking_text_is_stored_as_text(store: Store) -> None:
    player = await store.create_player(SQL_LOOKING, SQL_LOOKING)
    options = {"note": SQL_LOOKING, SQL_LOOKING: [SQL_LOOKING]}
    await store.create_match(match_record(SQL_LOOKING[:64], player, game=SQL_LOOKING[:32], options=options))
    await store.commit(
        new_move(
            move(SQL_LOOKING[:64], 0, SQL_LOOKING[:64], engine=EngineInfo(pv=(SQL_LOOKING,))),
            MatchFinish("finished", None, SQL_LOOKING, at(1)),
        )
    )

    assert (await store.player_by_token_hash(SQL_LOOKING)).name == SQL_LOOKING
    stored = await store.get_match(SQL_LOOKING[:64])
    assert stored.options == options
    assert stored.game == SQL_LOOKING[:32]
    assert stored.reason == SQL_LOOKING
    assert stored.seats[0].player_name == SQL_LOOKING
    assert stored.moves[0].notation == SQL_LOOKING[:64]
    assert stored.moves[0].engine.pv == (SQL_LOOKING,)
    assert [m.id for m in await store.list_matches(player_id=player.id)] == [SQL_LOOKING[:64]]


async def test_commit_resolves_its_future_once_committed_or_refused(store: Store) -> None:
    """:meth:`Store.commit` returns a future, not a coroutine: not yet resolved when it returns, then
    resolved once the write is stored, or failed with the error of the write refused."""
    await store.create_match(match_record("m1"))
    stored = store.commit(new_move(move("m1", 0, "d1")))
    refused = store.commit(new_move(move("m1", 0, "a1")))
    assert isinstance(stored, asyncio.Future) and isinstance(refused, asyncio.Future)
    assert not stored.done() and not refused.done(), "resolved from the commit's answer, not from the call"
    told = await asyncio.wait_for(asyncio.gather(stored, refused, return_exceptions=True), 10)

    assert told[0] is None
    assert isinstance(told[1], DuplicateMoveError) and (told[1].match_id, told[1].ply) == ("m1", 0)
    assert [played.notation for played in (await store.get_match("m1")).moves] == ["d1"]


async def test_commit_on_a_closed_store_fails_its_future_with_the_refusal(database_url: str) -> None:
    store = await Store.open(database_url)
    await store.close()
    refused = store.commit(new_move(move("m1", 0)))
    assert isinstance(refused, asyncio.Future) and refused.done()
    assert isinstance(refused.exception(), StoreClosedError)


async def test_close_commits_queued_writes_then_refuses_new_ones(database_url: str) -> None:
    store = await Store.open(database_url)
    await store.create_match(match_record("m1"))
    pending = [store.commit(new_move(move("m1", ply))) for ply in range(20)]  # queued as they are called
    await store.close()

    assert all(write.done() and write.exception() is None for write in pending)
    with pytest.raises(StoreClosedError):
        await store.commit(new_move(move("m1", 20)))
    reopened = await Store.open(database_url)
    try:
        assert len((await reopened.get_match("m1")).moves) == 20
    finally:
        await reopened.close()


async def test_ping_answers_while_the_database_is_up(store: Store) -> None:
    await store.ping()
    assert store.stats == WriteStats()  # (a read: it writes nothing)


def test_histogram_buckets_are_cumulative() -> None:
    histogram = Histogram((0.01, 0.1, 1.0))
    for value in (0.005, 0.01, 0.05, 0.5, 3.0):
        histogram.observe(value)
    assert histogram.cumulative() == [(0.01, 2), (0.1, 3), (1.0, 4), (float("inf"), 5)]
    assert (histogram.count, histogram.sum) == (5, pytest.approx(3.565))


@given(st.lists(st.floats(min_value=0, max_value=10), max_size=50), st.floats(min_value=0, max_value=10))
def test_a_histogram_observes_many_as_it_observes_each(values: list[float], before: float) -> None:
    """``observe_all`` (a batch's commit waits) counts and sums what ``observe``, one by one, does."""
    one_by_one, all_at_once = Histogram((0.01, 0.1, 1.0)), Histogram((0.01, 0.1, 1.0))
    for histogram in (one_by_one, all_at_once):
        histogram.observe(before)
    for value in values:
        one_by_one.observe(value)
    all_at_once.observe_all(values)
    assert all_at_once.cumulative() == one_by_one.cumulative()
    assert (all_at_once.count, all_at_once.sum) == (one_by_one.count, pytest.approx(one_by_one.sum))


async def test_writes_and_reads_fail_cleanly_while_the_database_is_unreachable() -> None:
    store = await Store.open("postgresql+asyncpg://postgres@127.0.0.1:1/nowhere", migrate=False)
    try:
        results = await asyncio.gather(
            *(store.commit(new_move(move(f"m{i}", 0))) for i in range(10)), return_exceptions=True
        )
        assert all(isinstance(result, DatabaseUnavailableError) for result in results), results
        assert store.stats.failed_writes == 10 and store.stats.transactions == 0
        await assert_reads_fail_as_unavailable(store)
    finally:
        await store.close()


async def assert_reads_fail_as_unavailable(store: Store) -> None:
    """A read, and the health check's ping, each refused ``unavailable``, the read naming its match."""
    with pytest.raises(DatabaseUnavailableError, match="match 'm1'"):
        await store.get_match("m1")
    with pytest.raises(DatabaseUnavailableError):
        await store.ping()


POSTGRES_NEGOTIATION_CODES = (80877103, 80877104)
"""The SSL and GSS encryption requests a client may send before its startup message."""


async def answer_starting_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Answer a PostgreSQL client as a server still starting up does: refuse encryption, then send the
    error ``57P03`` ("the database system is starting up") and hang up."""
    try:
        while True:
            length = int.from_bytes(await reader.readexactly(4), "big")
            body = await reader.readexactly(length - 4)
            if int.from_bytes(body[:4], "big") not in POSTGRES_NEGOTIATION_CODES:
                break  # the startup message
            writer.write(b"N")
        fields = b"SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0"
        writer.write(b"E" + (len(fields) + 4).to_bytes(4, "big") + fields)
        await writer.drain()
    except asyncio.IncompleteReadError:
        pass
    finally:
        writer.close()


async def test_writes_and_reads_fail_cleanly_while_postgresql_is_starting_up() -> None:
    """A restarted PostgreSQL takes connections before it takes sessions: that answer means unavailable
    too, not an internal error."""
    server = await asyncio.start_server(answer_starting_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    store = await Store.open(f"postgresql+asyncpg://postgres@127.0.0.1:{port}/test", migrate=False)
    try:
        with pytest.raises(DatabaseUnavailableError, match="starting up"):
            await store.commit(new_move(move("m1", 0)))
        await assert_reads_fail_as_unavailable(store)
    finally:
        await store.close()
        server.close()


async def test_service_resumes_after_postgresql_drops_every_connection(postgres_store_url: str) -> None:
    store = await Store.open(await emptied(postgres_store_url))
    try:
        await store.create_match(match_record("m1"))
        await store.commit(new_move(move("m1", 0)))
        assert (await store.get_match("m1")).moves  # the pool now holds live connections

        admin = create_engine(postgres_store_url, pooled=False)
        async with admin.connect() as connection:  # what a PostgreSQL restart does to our pool
            await connection.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
            )
        await admin.dispose()

        await store.commit(new_move(move("m1", 1)))
        assert [m.ply for m in (await store.get_match("m1")).moves] == [0, 1]
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("sqlstate", "unavailable"),
    [
        ("08006", True),  # connection failure
        ("25006", True),  # a read-only transaction: a standby, mid-failover
        ("40001", True),  # serialization failure
        ("40P01", True),  # deadlock
        ("53100", True),  # disk full
        ("53300", True),  # too many connections
        ("55000", True),  # "database is not currently accepting connections"
        ("55P03", True),  # lock not available
        ("57014", True),  # statement timeout
        ("57P01", True),  # admin shutdown
        ("58030", True),  # I/O error
        ("23505", False),  # a duplicate: about the data written
        ("22001", False),  # a value too long
        ("42P01", False),  # no such table: a bug, not an outage
    ],
)
def test_an_error_is_the_database_unavailable_by_its_sqlstate(sqlstate: str, unavailable: bool) -> None:
    """ "Not stored, try again" for what is about reaching the database, not about the data written."""

    class DriverError(Exception):
        pass

    driver_error = DriverError("refused")
    driver_error.sqlstate = sqlstate  # type: ignore[attr-defined]
    assert is_unavailable(DBAPIError("SELECT 1", {}, driver_error)) is unavailable


async def test_a_new_sqlite_file_and_its_wal_and_shm_are_for_their_owner_only(tmp_path: Path) -> None:
    """They hold token hashes and private matches: 0600, whatever the umask would have allowed."""
    path = tmp_path / "private.sqlite3"
    previous = os.umask(0o022)
    try:
        async with await Store.open(f"sqlite+aiosqlite:///{path}") as store:
            await new_player(store, "Alice")
            files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
            modes = {file.name: stat.S_IMODE(file.stat().st_mode) for file in files}
    finally:
        os.umask(previous)
    assert modes == {file.name: 0o600 for file in files}
