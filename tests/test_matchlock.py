"""The match lock (server/matchlock.py): taken at once when free, handed to waiters first come first
served, and never lost to a waiter that gives up."""

from __future__ import annotations

import asyncio

import pytest

from server.matchlock import MatchLock


async def test_a_free_lock_is_taken_at_once_and_a_held_one_is_not() -> None:
    lock = MatchLock()
    assert not lock.locked() and lock.try_acquire() and lock.locked()
    assert not lock.try_acquire(), "held"
    lock.release()
    assert not lock.locked() and lock.try_acquire()


async def test_releasing_a_lock_not_held_is_an_error() -> None:
    with pytest.raises(RuntimeError, match="not held"):
        MatchLock().release()


async def test_waiters_get_the_lock_in_the_order_they_came_and_nobody_overtakes_them() -> None:
    lock = MatchLock()
    order: list[int] = []

    async def take(index: int) -> None:
        await lock.acquire()
        order.append(index)
        await asyncio.sleep(0)
        lock.release()

    assert lock.try_acquire()
    waiters = [asyncio.create_task(take(index)) for index in range(4)]
    await asyncio.sleep(0)
    assert lock.waiting == 4
    lock.release()
    assert lock.locked() and not lock.try_acquire(), "handed to the first waiter: not free to take"
    await asyncio.gather(*waiters)
    assert order == [0, 1, 2, 3]
    assert not lock.locked() and lock.waiting == 0


async def test_a_waiter_that_gives_up_leaves_the_line() -> None:
    lock = MatchLock()
    assert lock.try_acquire()
    gives_up = asyncio.create_task(lock.acquire())
    stays = asyncio.create_task(lock.acquire())
    await asyncio.sleep(0)
    gives_up.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gives_up
    assert lock.waiting == 1
    lock.release()
    await stays
    assert lock.locked()
    lock.release()
    assert not lock.locked()


async def test_a_waiter_cancelled_once_the_lock_was_handed_to_it_hands_it_on() -> None:
    lock = MatchLock()
    assert lock.try_acquire()
    handed = asyncio.create_task(lock.acquire())
    next_one = asyncio.create_task(lock.acquire())
    await asyncio.sleep(0)
    lock.release()  # (to ``handed``, which has not woken yet)
    handed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await handed
    await next_one
    assert lock.locked()
    lock.release()
    assert not lock.locked()


async def test_a_waiter_cancelled_before_the_release_that_passes_it_over_is_skipped() -> None:
    lock = MatchLock()
    assert lock.try_acquire()
    gives_up = asyncio.create_task(lock.acquire())
    await asyncio.sleep(0)
    gives_up.cancel()  # (its future is cancelled now; the task learns of it on its next step)
    lock.release()  # (passes over it: free)
    assert not lock.locked()
    with pytest.raises(asyncio.CancelledError):
        await gives_up
    assert not lock.locked() and lock.waiting == 0


async def test_async_with_takes_and_lets_go() -> None:
    lock = MatchLock()
    async with lock:
        assert lock.locked()
    assert not lock.locked()
    with pytest.raises(ValueError):
        async with lock:
            raise ValueError
    assert not lock.locked()
