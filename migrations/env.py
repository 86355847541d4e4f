"""Alembic's environment for Ply Arena, on the asyncio drivers.

Two ways in:

- the ``alembic`` command line, which resolves the database URL (``-x db=URL``,
  then ``$PLYARENA_DB``, then ``sqlalchemy.url`` in alembic.ini, then the SQLite
  default) and opens its own engine;
- the server's :meth:`server.storage.Store.open`, which hands over a connection it
  already holds in ``config.attributes["connection"]``, so migrations run inside
  the server's event loop and under its lock.
"""

from __future__ import annotations

import asyncio
import os
from logging.config import fileConfig

from alembic import context
from sqlalchemy.engine import Connection

from server.storage.engine import DATABASE_URL_ENV, check_sqlite_file, create_engine, database_url
from server.storage.models import Base

config = context.config
target_metadata = Base.metadata

# Only the command line configures logging: a running server keeps its own.
if config.config_file_name is not None and "connection" not in config.attributes:
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def resolved_url() -> str:
    """``-x db=URL``, then ``$PLYARENA_DB``, then alembic.ini's ``sqlalchemy.url``, then the default."""
    given = context.get_x_argument(as_dictionary=True).get("db") or os.environ.get(DATABASE_URL_ENV)
    return database_url(given or config.get_main_option("sqlalchemy.url"))


def configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things; batch mode rebuilds tables when a later revision needs it.
        render_as_batch=connection.dialect.name == "sqlite",
    )


def run_migrations(connection: Connection) -> None:
    configure(connection)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    """Print the SQL instead of running it (``alembic upgrade head --sql``)."""
    context.configure(
        url=resolved_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


async def run_migrations_online() -> None:
    engine = create_engine(resolved_url(), pooled=False)
    check_sqlite_file(engine)
    try:
        async with engine.connect() as connection:
            await connection.run_sync(run_migrations)
            await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
elif (shared_connection := config.attributes.get("connection")) is not None:
    run_migrations(shared_connection)
else:
    asyncio.run(run_migrations_online())
