"""The open-file limit of a load-generator process: one descriptor per connection it holds."""

from __future__ import annotations

import resource

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
