"""The open-file limit: one descriptor per connection, so a server for thousands needs more than 1024."""

from __future__ import annotations

import logging
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
