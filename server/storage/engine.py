"""Database URLs and engines, the same for the server and for Alembic's command line.

SQLite is the embedded default and PostgreSQL is what production uses; both are
reached through their asyncio drivers. A URL naming only the database
(``sqlite:///x.sqlite3``, ``postgresql://...``) gets its async driver added, so
operators can paste the URL they already have.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from server.storage.sqlite_writer import configure_sqlite_connection

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///plyarena.sqlite3"
DATABASE_URL_ENV = "PLYARENA_DB"

ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
}
SUPPORTED_DRIVERS = frozenset(ASYNC_DRIVERS.values())


def database_url(url: str | None = None) -> str:
    """The URL to use: the one given, else ``$PLYARENA_DB``, else the SQLite file in the working directory."""
    return url or os.environ.get(DATABASE_URL_ENV) or DEFAULT_DATABASE_URL


def async_url(url: str) -> URL:
    """Parse ``url`` and give it its asyncio driver, refusing databases we do not support."""
    try:
        parsed = make_url(url)
    except ArgumentError as error:
        raise ValueError(f"malformed database URL {safe_url(url)}: {error}") from None
    drivername = ASYNC_DRIVERS.get(parsed.drivername, parsed.drivername)
    if drivername not in SUPPORTED_DRIVERS:
        supported = ", ".join(sorted(SUPPORTED_DRIVERS))
        raise ValueError(f"unsupported database URL {safe_url(url)}: use one of {supported}")
    return parsed.set(drivername=drivername)


def safe_url(url: str) -> str:
    """``url`` as it may be shown or logged: with its password masked."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return repr(url)  # not a URL, so no password to find in it


def failure_reason(error: BaseException) -> str:
    """Why opening a database (or a socket) failed, in the driver's own words, without SQLAlchemy's
    wrapping (the statement, a link to its documentation)."""
    if isinstance(error, DBAPIError) and error.orig is not None:
        error = error.orig
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def create_engine(url: str, *, pooled: bool = True) -> AsyncEngine:
    """An async engine for ``url``, configured for how Ply Arena uses its database.

    SQLite runs in WAL mode (readers never wait for the writer), enforces foreign
    keys, waits for a busy database instead of failing at once, and syncs each
    commit to disk (``synchronous=FULL``): the store groups many moves into one
    commit, so a move acknowledged to a player survives even a power cut.
    PostgreSQL connections are pinged when taken from the pool, so a database
    restart costs one failed request instead of a pool of dead connections.
    """
    parsed = async_url(url)
    # Parameters stay out of logs and exception messages: they hold token hashes and players' text.
    options: dict[str, Any] = {"hide_parameters": True}
    if not pooled:
        options["poolclass"] = NullPool
    if parsed.get_backend_name() == "sqlite":
        engine = create_async_engine(parsed, **options)
        event.listen(engine.sync_engine, "connect", _on_connect)
        return engine
    if pooled:
        options |= {"pool_size": 10, "max_overflow": 20, "pool_pre_ping": True}
    return create_async_engine(parsed, **options)


def sqlite_file(engine: AsyncEngine) -> str | None:
    """The file of an SQLite database given by its path; ``None`` for others (and in-memory ones)."""
    path = engine.url.database
    if engine.dialect.name != "sqlite" or not path or path == ":memory:" or path.startswith("file:"):
        return None
    return path


def check_sqlite_file(engine: AsyncEngine) -> None:
    """Open an SQLite file once, directly, so that one that cannot be opened (a missing directory, a
    file that is not a database) fails here. Failing first in aiosqlite's thread, it would also print
    that thread's traceback once the event loop has gone. A new file is made readable by its owner only:
    it holds players' token hashes and private matches (SQLite gives its -wal and -shm files its mode)."""
    path = sqlite_file(engine)
    if path is not None:
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        with contextlib.closing(sqlite3.connect(path)) as connection:
            connection.execute("PRAGMA schema_version")  # reads the header: "file is not a database"


def _on_connect(dbapi_connection: Any, _record: object) -> None:
    configure_sqlite_connection(dbapi_connection)
