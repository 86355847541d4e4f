"""The migrations build exactly the schema the models describe, and run both ways from the command line."""

from __future__ import annotations

import os
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from pg_scratch import temporary_postgres_database
from sqlalchemy import Column, Integer, MetaData, insert, inspect, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from server.protocol import MAX_NAME_LENGTH, EngineInfo
from server.storage import Store
from server.storage.engine import create_engine
from server.storage.migrate import PROJECT_ROOT, upgrade_to_head
from server.storage.models import (
    Base,
    ChatLineRow,
    MatchRow,
    MoveRow,
    PlayerRow,
    RatingChangeRow,
    RatingRow,
    SeatRow,
)
from server.text import MAX_STACKED_MARKS, clean_name, clean_text
from server.tokens import hash_token

TABLES = {"players", "matches", "seats", "moves", "chat_lines", "instance_leases", "sessions", "ratings"} | {
    "rating_changes"
}


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'migrations.sqlite3'}"
        return
    with temporary_postgres_database(request.getfixturevalue("postgres_url"), "migrations") as url:
        yield url


def schema_differences(connection: Connection, metadata: MetaData) -> list:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return compare_metadata(context, metadata)


def table_names(connection: Connection) -> set[str]:
    return set(inspect(connection).get_table_names())


async def test_models_and_migrations_describe_the_same_schema(empty_database_url: str) -> None:
    engine = create_engine(empty_database_url, pooled=False)
    try:
        await upgrade_to_head(engine)
        async with engine.connect() as connection:
            assert await connection.run_sync(schema_differences, Base.metadata) == []

            # The comparison is not blind: a column the migrations lack is reported.
            drifted = MetaData(naming_convention=Base.metadata.naming_convention)
            for table in Base.metadata.sorted_tables:
                table.to_metadata(drifted)
            drifted.tables["moves"].append_column(Column("comment_count", Integer))
            differences = await connection.run_sync(schema_differences, drifted)
            assert [(kind, column.name) for kind, _, _, column in differences] == [
                ("add_column", "comment_count")
            ]
    finally:
        await engine.dispose()


async def test_upgrading_twice_changes_nothing(empty_database_url: str) -> None:
    engine = create_engine(empty_database_url, pooled=False)
    try:
        await upgrade_to_head(engine)
        await upgrade_to_head(engine)
        async with engine.connect() as connection:
            assert await connection.run_sync(table_names) == {*TABLES, "alembic_version"}
    finally:
        await engine.dispose()


def alembic(*arguments: str, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "alembic", *arguments],
        cwd=PROJECT_ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout + result.stderr


async def inspect_tables(url: str) -> set[str]:
    engine = create_engine(url, pooled=False)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(table_names)
    finally:
        await engine.dispose()


async def test_the_command_line_upgrades_and_downgrades(empty_database_url: str) -> None:
    output = alembic("-x", f"db={empty_database_url}", "upgrade", "head")
    assert "Running upgrade  -> 0001" in output and "Running upgrade 0001 -> 0002" in output
    assert "Running upgrade 0002 -> 0003" in output and "Running upgrade 0003 -> 0004" in output
    assert "Running upgrade 0004 -> 0005" in output and "Running upgrade 0005 -> 0006" in output
    assert "Running upgrade 0006 -> 0007" in output and "Running upgrade 0007 -> 0008" in output
    assert await inspect_tables(empty_database_url) == {*TABLES, "alembic_version"}
    assert "Running upgrade 0008 -> 0009" in output and "Running upgrade 0009 -> 0010" in output
    assert "0010 (head)" in alembic("-x", f"db={empty_database_url}", "current")

    alembic("downgrade", "base", env={"PLYARENA_DB": empty_database_url})
    assert await inspect_tables(empty_database_url) == {"alembic_version"}


async def test_the_environment_variable_outranks_alembic_ini(empty_database_url: str, tmp_path: Path) -> None:
    """As alembic.ini and docs/storage.md say: ``$PLYARENA_DB`` before the ini file's ``sqlalchemy.url``."""
    ini_database = tmp_path / "from-ini.sqlite3"
    ini = (PROJECT_ROOT / "alembic.ini").read_text()
    ini = ini.replace("%(here)s/migrations", str(PROJECT_ROOT / "migrations"))
    ini = ini.replace("[alembic]\n", f"[alembic]\nsqlalchemy.url = sqlite+aiosqlite:///{ini_database}\n", 1)
    (tmp_path / "alembic.ini").write_text(ini)
    alembic("-c", str(tmp_path / "alembic.ini"), "upgrade", "head", env={"PLYARENA_DB": empty_database_url})
    assert await inspect_tables(empty_database_url) == {*TABLES, "alembic_version"}
    assert not ini_database.exists()


STORED_BEFORE_THE_NAME_RULES = {
    # player id: (name as stored, name after the migration)
    "a1" * 16: ("Ada", "Ada"),
    "b2" * 16: ("Cafe\u0301 \u202eevil", "Caf\u00e9 evil"),  # decomposed accent; a right-to-left override
    "c3" * 16: ("\u200b\u3164\u200d", "player c3c3c3"),  # nothing that shows
    "d4" * 16: ("x" * 40, "x" * 32),  # longer than the protocol allows
    "e5" * 16: ("Robert'); DROP TABLE players;--", "Robert'); DROP TABLE players;--"),
}


async def test_names_stored_before_the_name_rules_are_mended(empty_database_url: str) -> None:
    alembic("-x", f"db={empty_database_url}", "upgrade", "0001")
    engine = create_engine(empty_database_url, pooled=False)
    now = datetime.now(UTC)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                insert(PlayerRow),
                [
                    {
                        "id": player_id,
                        "name": stored,
                        "token_hash": f"hash-{player_id}",
                        "is_bot": False,
                        "created_at": now,
                        "last_seen_at": now,
                    }
                    for player_id, (stored, _) in STORED_BEFORE_THE_NAME_RULES.items()
                ],
            )
        await upgrade_to_head(engine)
        async with engine.connect() as connection:
            rows = await connection.execute(select(PlayerRow.id, PlayerRow.name, PlayerRow.token_hash))
            stored = {player_id: (name, token_hash) for player_id, name, token_hash in rows}
    finally:
        await engine.dispose()
    assert stored == {
        player_id: (mended, f"hash-{player_id}")
        for player_id, (_, mended) in STORED_BEFORE_THE_NAME_RULES.items()
    }
    for name, _ in stored.values():
        assert clean_name(name, MAX_NAME_LENGTH) == name  # each passes today's rules


async def test_of_several_rematches_stored_of_one_match_the_first_keeps_the_link(
    empty_database_url: str,
) -> None:
    """Before revision 0004 a server that had forgotten a finished match could start it a second
    rematch; the upgrade leaves one rematch a match, and the database refuses another from then on."""
    alembic("-x", f"db={empty_database_url}", "upgrade", "0003")
    engine = create_engine(empty_database_url, pooled=False)
    start = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)

    def match(match_id: str, minute: int, rematch_of: str | None) -> dict[str, Any]:
        return {
            "id": match_id,
            "game": "tictactoe",
            "options": {},
            "status": "finished",
            "host": "arena",
            "created_at": start + timedelta(minutes=minute),
            "rematch_of": rematch_of,
        }

    try:
        async with engine.begin() as connection:
            for row in (
                match("first", 0, None),
                match("second", 5, "first"),
                match("second-again", 9, "first"),  # the one the bug made
                match("third", 9, "second"),
            ):
                await connection.execute(insert(MatchRow), [row])
        await upgrade_to_head(engine)
        async with engine.connect() as connection:
            links = dict((await connection.execute(select(MatchRow.id, MatchRow.rematch_of))).all())
        assert links == {"first": None, "second": "first", "second-again": None, "third": "second"}
        with pytest.raises(IntegrityError):
            async with engine.begin() as connection:
                await connection.execute(insert(MatchRow), [match("fourth", 12, "first")])
    finally:
        await engine.dispose()


ZALGO = "Z" + "\u0301\u0300\u0302\u0303\u0308\u0327\u0328" * 3 + "oe"
"""21 marks on the Z: as stored before the limit, 4 of them kept by the mending."""
MENDED_ZALGO = unicodedata.normalize("NFC", unicodedata.normalize("NFD", ZALGO)[:5] + "oe")
"""The Z and the first 4 of its marks in canonical order (NFD sorts the marks below before those above)."""


async def test_names_and_chat_stored_before_the_limit_on_stacked_marks_are_mended(
    empty_database_url: str,
) -> None:
    alembic("-x", f"db={empty_database_url}", "upgrade", "0004")
    engine = create_engine(empty_database_url, pooled=False)
    now = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    decomposed = "Vie\u0302\u0323t"  # within the limit, not NFC: kept exactly as stored
    players = {"zalgo": ZALGO, "plain": "Alice", "vietnamese": decomposed}
    lines = {1: ("Alice", ZALGO + " hello"), 2: (ZALGO, "gg"), 3: ("Alice", decomposed)}
    try:
        async with engine.begin() as connection:
            await connection.execute(
                insert(PlayerRow),
                [
                    {"id": player_id, "name": name, "token_hash": f"hash-{player_id}", "is_bot": False,
                     "created_at": now, "last_seen_at": now}
                    for player_id, name in players.items()
                ],
            )  # fmt: skip
            await connection.execute(
                insert(MatchRow),
                [{"id": "m", "game": "tictactoe", "options": {}, "status": "finished", "host": "arena",
                  "created_at": now}],
            )  # fmt: skip
            await connection.execute(
                insert(ChatLineRow),
                [{"match_id": "m", "seq": seq, "seat": 0, "name": name, "text": text, "said_at": now}
                 for seq, (name, text) in lines.items()],
            )  # fmt: skip
        await upgrade_to_head(engine)
        async with engine.connect() as connection:
            names = dict((await connection.execute(select(PlayerRow.id, PlayerRow.name))).all())
            said = {
                seq: (name, text)
                for seq, name, text in await connection.execute(
                    select(ChatLineRow.seq, ChatLineRow.name, ChatLineRow.text)
                )
            }
    finally:
        await engine.dispose()
    assert names == {"zalgo": MENDED_ZALGO, "plain": "Alice", "vietnamese": decomposed}
    assert said == {1: ("Alice", MENDED_ZALGO + " hello"), 2: (MENDED_ZALGO, "gg"), 3: ("Alice", decomposed)}
    assert clean_name(names["zalgo"], MAX_NAME_LENGTH) == MENDED_ZALGO  # each passes today's rules
    assert clean_text(said[1][1], "chat", 200) == said[1][1]
    assert MAX_STACKED_MARKS == 4  # (what MENDED_ZALGO keeps)


SPEAKER = "f6" * 16
"""The player in seat 1 of the match below, whose name and the line said under it show nothing."""
STORED_BEFORE_THE_INVISIBLE_CHARACTERS = {
    # player id: (name as stored, name after the migration)
    "a1" * 16: ("alice\u034f", "alice"),  # looked like alice: now is alice (names need not be unique)
    "b2" * 16: ("ali\ufe0fce", "alice"),
    "c3" * 16: ("bob\u180b \u17b4x", "bob x"),
    "d4" * 16: ("Vie\u0302\u0323t \u2764", "Vie\u0302\u0323t \u2764"),  # within the rules: kept, not even NFC
    # The blank kept two stacks of 4 acutes apart: once it is dropped, one stack of 4 is left.
    "e5" * 16: ("e\u0301\u0301\u0301\u0301\u2800\u0301\u0301\u0301\u0301", "\u00e9\u0301\u0301\u0301"),
    SPEAKER: ("\u2800\U000e0100", "player f6f6f6"),  # nothing that shows
}


async def test_names_chat_and_pvs_stored_before_the_rules_on_invisible_characters_are_mended(
    empty_database_url: str,
) -> None:
    """Before revision 0006 a name could hold what does not show (``alice\\u034f`` looked like ``alice``), a
    line could show nothing, and a pv could be any text; the upgrade mends what today's rules refuse and
    leaves the rest byte for byte."""
    alembic("-x", f"db={empty_database_url}", "upgrade", "0005")
    engine = create_engine(empty_database_url, pooled=False)
    now = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
    lines = {
        1: ("alice\u034f", "hi \u2800"),  # the name is mended, the line shows something: kept
        2: ("\u2800\U000e0100", "gg"),  # said under a name that shows nothing
        3: ("Vie\u0302\u0323t \u2764", "\u2800 \ufe0f\u034f"),  # shows nothing: deleted
        4: ("Vie\u0302\u0323t \u2764", "\u2764\ufe0f\u200d\U0001f525"),  # an emoji sequence: kept as stored
    }
    pvs = {
        0: ["4", "4", "3"],  # notation: kept
        1: ["4", "\u202eevil.com\u202c", "3"],  # cut before the first entry that is not a move
        2: ["visit http://x.io"],  # nothing left: null
        3: None,  # a person's move
    }
    try:
        async with engine.begin() as connection:
            await connection.execute(
                insert(PlayerRow),
                [{"id": player_id, "name": stored, "token_hash": f"hash-{player_id}", "is_bot": False,
                  "created_at": now, "last_seen_at": now}
                 for player_id, (stored, _) in STORED_BEFORE_THE_INVISIBLE_CHARACTERS.items()],
            )  # fmt: skip
            await connection.execute(
                insert(MatchRow),
                [{"id": "m", "game": "connect4", "options": {}, "status": "finished", "host": "arena",
                  "created_at": now}],
            )  # fmt: skip
            await connection.execute(
                insert(SeatRow),
                [{"match_id": "m", "seat": seat, "player_id": player_id, "joined_at": now}
                 for seat, player_id in enumerate(("a1" * 16, SPEAKER))],
            )  # fmt: skip
            await connection.execute(
                insert(ChatLineRow),
                [{"match_id": "m", "seq": seq, "seat": 1 if seq == 2 else 0, "name": name, "text": text,
                  "said_at": now}
                 for seq, (name, text) in lines.items()],
            )  # fmt: skip
            await connection.execute(
                insert(MoveRow),
                [{"match_id": "m", "ply": ply, "seat": ply % 2, "notation": "4", "think_ms": 0,
                  "played_at": now, "score": None if pv is None else 0, "pv": pv}
                 for ply, pv in pvs.items()],
            )  # fmt: skip
        await upgrade_to_head(engine)
        async with engine.connect() as connection:
            names = dict((await connection.execute(select(PlayerRow.id, PlayerRow.name))).all())
            said = {
                seq: (name, text)
                for seq, name, text in await connection.execute(
                    select(ChatLineRow.seq, ChatLineRow.name, ChatLineRow.text)
                )
            }
            stored_pvs = dict((await connection.execute(select(MoveRow.ply, MoveRow.pv))).all())
    finally:
        await engine.dispose()
    assert names == {
        player_id: mended for player_id, (_, mended) in STORED_BEFORE_THE_INVISIBLE_CHARACTERS.items()
    }
    assert said == {
        1: ("alice", "hi \u2800"),
        2: ("player f6f6f6", "gg"),
        4: ("Vie\u0302\u0323t \u2764", "\u2764\ufe0f\u200d\U0001f525"),
    }
    assert stored_pvs == {0: ["4", "4", "3"], 1: ["4"], 2: None, 3: None}
    for name in [*names.values(), *(name for name, _ in said.values())]:  # each passes today's rules
        assert clean_name(name, MAX_NAME_LENGTH) == unicodedata.normalize("NFC", name)
    for _, text in said.values():
        assert clean_text(text, "chat", 200) == text
    for pv in stored_pvs.values():
        assert msgspec.convert({"pv": pv or []}, EngineInfo).pv == (pv or [])


async def test_matches_stored_before_ratings_become_casual_and_ratings_start_empty(
    empty_database_url: str,
) -> None:
    """Revision 0010 upgrades a database with players, matches and moves: every match stored before is
    casual, and the new tables take ratings and their changes."""
    alembic("-x", f"db={empty_database_url}", "upgrade", "0008")
    engine = create_engine(empty_database_url, pooled=False)
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    try:
        async with engine.begin() as connection:
            await connection.execute(
                insert(PlayerRow),
                [{"id": player_id, "name": player_id, "token_hash": f"hash-{player_id}", "is_bot": False,
                  "created_at": now, "last_seen_at": now} for player_id in ("p0", "p1")],
            )  # fmt: skip
            await connection.execute(
                insert(MatchRow),
                [{"id": "m", "game": "connect4", "options": {"time_control": "untimed"}, "status": "finished",
                  "winner": 0, "reason": "four in a row", "host": "arena", "created_at": now}],
            )  # fmt: skip
            await connection.execute(
                insert(SeatRow),
                [{"match_id": "m", "seat": seat, "player_id": f"p{seat}", "joined_at": now}
                 for seat in (0, 1)],
            )  # fmt: skip
            await connection.execute(
                insert(MoveRow),
                [{"match_id": "m", "ply": 0, "seat": 0, "notation": "4", "think_ms": 0, "played_at": now}],
            )
        await upgrade_to_head(engine)
        async with engine.begin() as connection:
            assert (await connection.execute(select(MatchRow.id, MatchRow.rated))).all() == [("m", False)]
            await connection.execute(
                insert(RatingRow),
                [{"player_id": "p0", "game": "connect4", "rating": 1662.3, "deviation": 290.3,
                  "volatility": 0.06, "games": 1, "updated_at": now}],
            )  # fmt: skip
            await connection.execute(
                insert(RatingChangeRow),
                [{"match_id": "m", "player_id": "p0", "game": "connect4", "rating_before": 1500,
                  "deviation_before": 350, "rating_after": 1662.3, "deviation_after": 290.3, "at": now}],
            )  # fmt: skip
            with pytest.raises(IntegrityError):  # a match rates each of its players once
                async with connection.begin_nested():
                    await connection.execute(
                        insert(RatingChangeRow),
                        [{"match_id": "m", "player_id": "p0", "game": "connect4", "rating_before": 1,
                          "deviation_before": 1, "rating_after": 1, "deviation_after": 1, "at": now}],
                    )  # fmt: skip
            moves = (await connection.execute(select(MoveRow.match_id, MoveRow.notation))).all()
        assert moves == [("m", "4")]
    finally:
        await engine.dispose()


async def test_players_and_their_tokens_stored_before_accounts_are_kept(empty_database_url: str) -> None:
    """Revision 0009 adds claimed names and sessions to a database with players and games: every player is
    a guest after it, under the same name, and their token still finds them."""
    alembic("-x", f"db={empty_database_url}", "upgrade", "0008")
    engine = create_engine(empty_database_url, pooled=False)
    now = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    players = {"a1" * 16: "Ada", "b2" * 16: "ada"}  # guests' names may repeat, in any case
    try:
        async with engine.begin() as connection:
            await connection.execute(
                insert(PlayerRow),
                [{"id": player_id, "name": name, "token_hash": hash_token(f"token-{player_id}"),
                  "is_bot": False, "created_at": now, "last_seen_at": now}
                 for player_id, name in players.items()],
            )  # fmt: skip
            await connection.execute(
                insert(MatchRow),
                [{"id": "m", "game": "connect4", "options": {}, "status": "finished", "host": "arena",
                  "created_at": now}],
            )  # fmt: skip
            await connection.execute(
                insert(SeatRow),
                [{"match_id": "m", "seat": seat, "player_id": player_id, "joined_at": now}
                 for seat, player_id in enumerate(players)],
            )  # fmt: skip
        await upgrade_to_head(engine)
        async with engine.connect() as connection:
            rows = (await connection.execute(select(PlayerRow.id, PlayerRow.name, PlayerRow.name_key))).all()
            seats = (
                (await connection.execute(select(SeatRow.player_id).order_by(SeatRow.seat))).scalars().all()
            )
    finally:
        await engine.dispose()
    assert sorted(rows) == sorted((player_id, name, None) for player_id, name in players.items())
    assert seats == list(players)
    async with await Store.open(empty_database_url, migrate=False) as store:
        for player_id, name in players.items():
            owner = await store.token_owner(hash_token(f"token-{player_id}"))
            assert owner is not None
            assert (owner[0].id, owner[0].name, owner[0].claimed, owner[1]) == (player_id, name, False, False)
