"""Standing in for the store's commits in tests: held, failed, or lost after they were stored.

The server commits in two ways, :meth:`Store.commit` (a future, awaited by the host's coroutines) and
:meth:`Store.commit_then` (a callback, for moves decided in callbacks); a test that makes a commit fail
must catch it whichever way it comes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from server.storage import StorageError, Store
from server.storage.writes import Write

Commit = Callable[..., Awaitable[None]]
"""The store's own :meth:`Store.commit`: ``commit(store, *rows)``."""
Intercept = Callable[[Store, tuple[Write, ...], Commit], Awaitable[None] | None]
"""Given a commit's store, its rows and the store's own ``commit``: what stands for the commit (an
awaitable that fails, or waits, then commits), or ``None`` to let it through."""


def intercept_commits(monkeypatch: pytest.MonkeyPatch, intercept: Intercept) -> None:
    """Route every commit, whichever way it comes, through ``intercept`` (until ``monkeypatch`` undoes it)."""
    commit, commit_then = Store.commit, Store.commit_then

    def intercepted(store: Store, *rows: Write) -> Awaitable[None]:
        standing = intercept(store, rows, commit)
        return commit(store, *rows) if standing is None else asyncio.ensure_future(standing)

    def intercepted_then(store: Store, then: Callable[[StorageError | None], None], *rows: Write) -> None:
        standing = intercept(store, rows, commit)
        if standing is None:
            commit_then(store, then, *rows)
            return

        def settled(done: asyncio.Future[None]) -> None:
            error = done.exception()
            assert error is None or isinstance(error, StorageError), error
            then(error)

        asyncio.ensure_future(standing).add_done_callback(settled)

    monkeypatch.setattr(Store, "commit", intercepted)
    monkeypatch.setattr(Store, "commit_then", intercepted_then)
