"""The migrations build exactly the schema the models describe, and run both ways from the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from pg_scratch import temporary_postgres_database
from sqlalchemy import Column, Integer, MetaData, inspect
from sqlalchemy.engine import Connection

from server.storage.engine import create_engine
from server.storage.migrate import PROJECT_ROOT, upgrade_to_head
from server.storage.models import Base

TABLES = {"players", "matches", "seats", "moves"}


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
    assert "Running upgrade  -> 0001" in output
    assert await inspect_tables(empty_database_url) == {*TABLES, "alembic_version"}
    assert "0001 (head)" in alembic("-x", f"db={empty_database_url}", "current")

    alembic("downgrade", "base", env={"PLYARENA_DB": empty_database_url})
    assert await inspect_tables(empty_database_url) == {"alembic_version"}
