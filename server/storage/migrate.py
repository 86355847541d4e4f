"""Running Alembic from inside the server.

The schema exists only through the revisions in ``migrations/``; the server
upgrades its database to the newest one when it opens it, on the connection it
already holds, so no second event loop or engine is involved.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

PROJECT_ROOT = Path(__file__).resolve().parents[2]
MIGRATIONS_DIR = PROJECT_ROOT / "migrations"

# Server instances that share one PostgreSQL take this lock, so only one of them migrates at a time.
MIGRATION_LOCK_KEY = int.from_bytes(b"plyarena", "big") >> 1  # a positive 64-bit key


def alembic_config() -> Config:
    """An Alembic configuration for our migrations that leaves the caller's logging alone."""
    if not (MIGRATIONS_DIR / "env.py").is_file():
        raise FileNotFoundError(f"Alembic migrations not found in {MIGRATIONS_DIR}")
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


async def upgrade_to_head(engine: AsyncEngine) -> None:
    """Bring the database behind ``engine`` to the newest revision (in one transaction on PostgreSQL)."""
    config = alembic_config()
    async with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            await connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
        await connection.run_sync(_upgrade, config)


def _upgrade(connection: Connection, config: Config) -> None:
    config.attributes["connection"] = connection
    command.upgrade(config, "head")
