"""The lock that orders everything in one match (see :mod:`server.live`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from types import TracebackType


class MatchLock:
    """A first-come, first-served lock, taken without a coroutine when it is free.

    asyncio's lock takes a free lock in a coroutine of its own, and hands a released one to nobody in
    particular: the first waiter is only woken, and whoever asks before it wakes takes the lock first.
    Here :meth:`try_acquire` takes a free lock at once, with no coroutine; and :meth:`release` hands
    the lock straight to the first waiter, which holds it from then on, so the lock is held for as
    long as anyone holds it or is about to, and nobody overtakes a waiter.
    """

    __slots__ = ("_held", "_waiters")

    def __init__(self) -> None:
        self._held = False
        self._waiters: deque[asyncio.Future[None]] | None = None
        """Those waiting, first come first; made for the first (most matches never have one)."""

    def locked(self) -> bool:
        """Whether someone holds the lock, or it was handed to a waiter that has not woken yet."""
        return self._held

    @property
    def waiting(self) -> int:
        """How many wait for the lock."""
        waiters = self._waiters
        return 0 if waiters is None else sum(not waiter.done() for waiter in waiters)

    def try_acquire(self) -> bool:
        """Take the lock if it is free; ``False`` if someone holds it (or waits, for then it is held)."""
        if self._held:
            return False
        self._held = True
        return True

    async def acquire(self) -> None:
        """Take the lock, once those who came first have had it."""
        if not self._held:
            self._held = True
            return
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = deque()
        waiter = asyncio.get_running_loop().create_future()
        waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.cancelled():  # (stopped waiting: out of the line, unless a release passed it over)
                with contextlib.suppress(ValueError):
                    waiters.remove(waiter)
            else:  # (handed the lock as it was cancelled: the next one has it)
                self.release()
            raise
        finally:
            if not waiters and self._waiters is waiters:
                self._waiters = None

    def release(self) -> None:
        """Hand the lock to the first waiter still waiting, or free it."""
        if not self._held:
            raise RuntimeError("release of a match lock that is not held")
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._held = False

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()
