"""The event loop that long-running processes (the server, a fleet, the load generators) run on.

uvloop, a drop-in event loop built on libuv, does the loop's own work (polling, callbacks, socket
reads and writes) in C; asyncio's default loop does it in Python, and a loaded server spends a
good part of each move there (docs/performance.md). ``PLYARENA_EVENT_LOOP=asyncio`` selects the
default loop instead, to compare the two or to rule uvloop out when something misbehaves; it is
also the default where uvloop does not exist (Windows).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

EVENT_LOOP_VARIABLE = "PLYARENA_EVENT_LOOP"
EVENT_LOOPS = ("uvloop", "asyncio")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The chosen loop's constructor, ``None`` for asyncio's default; ``ValueError`` for another name."""
    default = "asyncio" if sys.platform == "win32" else "uvloop"
    chosen = os.environ.get(EVENT_LOOP_VARIABLE, default).strip().lower()
    if chosen == "asyncio":
        return None
    if chosen == "uvloop":
        import uvloop  # a dependency; imported here so that choosing asyncio never loads it

        return uvloop.new_event_loop
    raise ValueError(f"{EVENT_LOOP_VARIABLE}={chosen!r}: expected one of {', '.join(EVENT_LOOPS)}")


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the chosen event loop."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(main)
