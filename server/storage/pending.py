"""A write waiting for its commit, and the ledger that tells its caller how the commit ended and counts it."""

from __future__ import annotations

import asyncio
import logging
from operator import attrgetter

import msgspec

from server.storage.batches import Kind, Part
from server.storage.classify import storage_error, write_name
from server.storage.errors import StorageError
from server.storage.stats import WriteStats

log = logging.getLogger(__name__)


class PendingWrite(msgspec.Struct, eq=False):
    """One caller's write, queued for the writer task: its rows and the future its caller awaits.

    Nothing else is kept, since thousands may wait at once: what a failed write needs (its name, its
    precise error) comes from its first row. A struct, whose ``__init__`` is in C: every write makes one.
    """

    parts: tuple[Part, ...]
    future: asyncio.Future[None]
    queued_at: float

    @property
    def what(self) -> str:
        """Names the write in error messages, e.g. "move 12 of match 'k3x9'"."""
        return write_name(self.parts[0])

    @property
    def given_up(self) -> bool:
        """Whether its caller stopped waiting before it was written (its future cancelled)."""
        return self.future.cancelled()

    def settle(self, error: StorageError | None) -> None:
        """Resolve the caller's future, the commit being over: stored if ``error`` is ``None``."""
        future = self.future
        if not future.done():
            if error is None:
                future.set_result(None)
            else:
                future.set_exception(error)


PARTS = attrgetter("parts")
"""A :class:`PendingWrite`'s rows (for :func:`~server.storage.batches.batch_rows`, in C)."""


class Ledger:
    """Settles the writes whose commit is over, and counts them in the store's :class:`WriteStats`: the one
    place where either happens, whichever sink committed them."""

    def __init__(self, stats: WriteStats) -> None:
        self.stats = stats
        self.loop = asyncio.get_running_loop()
        """Looked up once: on Python 3.11 each lookup is a ``getpid`` system call, and each write needs it."""

    def now(self) -> float:
        return self.loop.time()

    def stored(self, writes: list[PendingWrite], started: float) -> None:
        """``writes`` were committed in one transaction, begun at ``started``."""
        committed = self.loop.time()
        stats = self.stats
        stats.transactions += 1
        stats.writes += len(writes)
        stats.batch_size.observe(len(writes))
        stats.transaction_seconds.observe(committed - started)
        stats.commit_seconds.observe_all([committed - write.queued_at for write in writes])
        moves, new_move = 0, Kind.NEW_MOVE  # (looked up once: see writes._NEW_MOVE)
        for write in writes:
            if write.parts[0].kind == new_move:
                moves += 1
            write.settle(None)
        stats.moves += moves

    def refused(self, write: PendingWrite, error: Exception) -> None:
        """``write`` failed with ``error``: nothing of it is stored."""
        self.stats.failed_writes += 1
        write.settle(storage_error(write.parts[0], error))

    def retrying(self, batch: list[PendingWrite], why: str) -> None:
        """``batch`` failed as a whole, for ``why``, and is about to be retried one write at a time."""
        if len(batch) > 1:
            log.info("a batch of %d writes failed (%s); retrying one by one", len(batch), why)
            self.stats.split_batches += 1
