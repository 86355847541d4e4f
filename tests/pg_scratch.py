"""Throwaway PostgreSQL databases, so tests never leave rows in ``test`` nor see each other's.

Each database gets a unique name (process id and a random part), so test runs
on the same server at the same time do not collide; it is dropped, even with
open connections, when the block ends.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import asyncpg
from sqlalchemy.engine import make_url


@contextmanager
def temporary_postgres_database(server_url: str, label: str = "test") -> Iterator[str]:
    """Create an empty database on the server of ``server_url`` and yield its SQLAlchemy URL."""
    url = make_url(server_url)
    name = f"plyarena_{label}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin_dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
    _run(_execute(admin_dsn, f'CREATE DATABASE "{name}"'))
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        _run(_execute(admin_dsn, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _run(coroutine: object) -> None:
    """Run ``coroutine`` on its own loop in a worker thread: callers may be inside a running loop."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, coroutine).result()  # type: ignore[arg-type]


async def _execute(dsn: str, statement: str) -> None:
    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute(statement)
    finally:
        await connection.close()
