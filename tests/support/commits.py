"""Standing in for the store's commits in tests: held, failed, or lost after they were stored.

Every write goes through :meth:`Store.commit`, so a test that makes a commit fail patches that alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from server.storage import Store
from server.storage.writes import Write

Commit = Callable[..., Awaitable[None]]
"""The store's own :meth:`Store.commit`: ``commit(store, *rows)``."""
Intercept = Callable[[Store, tuple[Write, ...], Commit], Awaitable[None] | None]
"""Given a commit's store, its rows and the store's own ``commit``: what stands for the commit (an
awaitable that fails, or waits, then commits), or ``None`` to let it through."""


def intercept_commits(monkeypatch: pytest.MonkeyPatch, intercept: Intercept) -> None:
    """Route every commit through ``intercept`` (until ``monkeypatch`` undoes it)."""
    commit = Store.commit

    def intercepted(store: Store, *rows: Write) -> Awaitable[None]:
        standing = intercept(store, rows, commit)
        return commit(store, *rows) if standing is None else asyncio.ensure_future(standing)

    monkeypatch.setattr(Store, "commit", intercepted)
