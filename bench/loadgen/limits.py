"""A load-generator process's limits: its open files (one per connection it holds) and its CPU priority."""

from __future__ import annotations

import contextlib
import os
import resource
from pathlib import Path

OPEN_FILES_CEILING = 1 << 20
"""What we ask for when the hard limit is unlimited (Linux refuses an unlimited soft limit)."""


def raise_open_files_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit; return the soft limit in force.

    The same as ``server.limits`` on the server's side; the load generator reaches the
    server only over the wire, so it keeps its own copy of these few lines.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES_CEILING if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):
            return soft
        return wanted
    return soft


AUTOGROUP = Path("/proc/self/autogroup")
"""Linux's scheduling group of this process's session, and its niceness (``autogroup-N nice K``)."""


def lower_priority(niceness: int) -> None:
    """Make this process and its session ``niceness`` steps nicer: it then takes the cores that the
    server it measures leaves free, as a client on a machine of its own would take none of the server's.

    A process's own niceness weighs it only against the other processes of its session where the
    kernel groups sessions (``sched_autogroup_enabled``): the session's autogroup is what competes
    with the server's, so it is made nicer too (docs/performance.md, "Measuring on a shared machine").
    """
    if niceness <= 0:
        return
    os.nice(niceness)
    with contextlib.suppress(OSError):  # (no autogroups on this kernel, or not Linux)
        AUTOGROUP.write_text(f"{niceness}\n")
