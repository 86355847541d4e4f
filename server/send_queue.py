"""How much a socket's kernel still holds for its peer: the part of a slow reader's backlog that the
transport's own buffer does not count (see server/connection.py)."""

from __future__ import annotations

import asyncio
import struct
import sys

if sys.platform == "linux":
    import fcntl
    import termios

    UNSENT_QUERY: int | None = termios.TIOCOUTQ
    """The ``ioctl`` that tells the bytes of a TCP socket's send queue (``SIOCOUTQ``)."""
else:  # (elsewhere the kernel's part is bounded by the send buffer alone)
    UNSENT_QUERY = None


def unsent_bytes(transport: asyncio.Transport) -> int:
    """The bytes the kernel still holds for the peer (not sent yet, or not acknowledged); 0 where it
    cannot tell (not Linux, not a TCP socket)."""
    sock = transport.get_extra_info("socket")
    if UNSENT_QUERY is None or sock is None:
        return 0
    try:
        answer = fcntl.ioctl(sock.fileno(), UNSENT_QUERY, b"\0\0\0\0")
    except OSError:
        return 0
    return int(struct.unpack("i", answer)[0])
