"""Process settings for a server that holds thousands of connections.

- The open-file limit: one descriptor per connection, so thousands need more than the usual 1024.
- The cyclic garbage collector: a full collection visits every tracked object, and ten thousand
  connections with their matches are over a million of them, so each full collection stops the event
  loop for most of a second (measured: 0.4 to 1.1 s), and with Python's default thresholds one comes
  every few seconds under load. Every move waiting meanwhile is late by that much. We make full
  collections rare and leave the objects the server starts with out of every collection; young and
  middle collections run often and stay short, and reference counting frees everything else at once.
"""

from __future__ import annotations

import gc
import logging
import os
import resource

log = logging.getLogger(__name__)

OPEN_FILES_CEILING = 1 << 20
"""What we ask for when the hard limit is unlimited (Linux refuses an unlimited soft limit)."""


def raise_open_files_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit; return the soft limit in force.

    Needs no privilege: any process may raise its soft limit up to its hard one.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES_CEILING if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError) as error:
            log.warning("cannot raise the open-file limit from %d to %d: %s", soft, wanted, error)
            return soft
        return wanted
    return soft


GC_THRESHOLDS = (200, 2, 50_000)
"""Young collections every 200 net allocations of containers (default 700); a middle one every 2 of those
(default 10); a full one only after 50,000 middle ones (default 10).

The count that triggers a young collection goes up with each container made and down with each one
freed, old or young. In steady play nearly every object made takes the place of an old one that dies (a
connection's coroutines waiting for its next frame, a match's state after a move), so the count hardly
rises while the survivors pile up in the young generation: at 1,000 it held 20,000 to 63,000 objects
when collected, and each young or middle collection stood still for 25 to 40 ms. At 200, with 5,000
moves/s, there are some 330 young and 110 middle collections a second, of 0.02 and 0.09 ms (medians;
p99 0.8 and 3.6 ms); the round trip's p99 went from 173 and 174 ms to 37 and 26 ms, and the time in the
collector from 14 and 8% to 8 and 5%. A middle collection
visits every object that survived the young ones since the last, so it comes every 2 young ones, not 10.
A full one, of everything since startup (the rest is frozen), comes some 8 minutes apart at that pace.
See docs/performance.md."""


GC_THRESHOLDS_VARIABLE = "PLYARENA_GC_THRESHOLDS"


def parse_gc_thresholds(text: str) -> tuple[int, int, int]:
    """Three positive integers, ``5000,10,1000``: the thresholds of ``gc.set_threshold``."""
    try:
        first, second, third = (int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"expected three integers like 5000,10,1000, not {text!r}") from None
    if min(first, second, third) < 1:
        raise ValueError(f"GC thresholds must be positive, not {text!r}")
    return first, second, third


def gc_thresholds() -> tuple[int, int, int]:
    """``$PLYARENA_GC_THRESHOLDS`` if set (to compare settings, or tune a deployment), else the default."""
    text = os.environ.get(GC_THRESHOLDS_VARIABLE, "").strip()
    try:
        return parse_gc_thresholds(text) if text else GC_THRESHOLDS
    except ValueError as error:
        raise ValueError(f"{GC_THRESHOLDS_VARIABLE}: {error}") from None


def tune_garbage_collector(thresholds: tuple[int, int, int] | None = None) -> None:
    """Freeze what exists now (modules, configuration, restored matches) and make full collections rare.

    Call once, after the server has started. Frozen objects are still freed by reference counting; only
    cycles among them are never collected, which startup state does not form.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*(thresholds or gc_thresholds()))
