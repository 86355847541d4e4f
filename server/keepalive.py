"""HTTP keep-alive on the WebSocket port: which requests may leave their connection open for another,
and where one request's head ends in the byte stream.

websockets' sans-I/O ``ServerProtocol`` reads one request (the opening handshake) and, for any answer
but the upgrade, ends the stream. A kept-alive connection (:class:`server.connection.Connection`) sends
such an answer itself (``Response.serialize``) and starts a fresh ``ServerProtocol`` for the next
request, through public API only. A request on this port never has a body (websockets refuses one), so a
request ends where its head does, at its first blank line: bytes past it belong to the next request, and
wait until the fresh protocol is there to read them.
"""

from __future__ import annotations

from websockets.http11 import Request

KEEPALIVE_TIMEOUT_S = 10.0
"""How long a kept-alive connection may wait, from an answer, for its next request to be answered."""
MAX_REQUESTS = 100
"""Requests one connection may make; the last is answered with ``Connection: close``."""
HEAD_END = b"\r\n\r\n"


def wants_keep_alive(request: Request) -> bool:
    """Whether ``request`` leaves its connection open after a plain answer: HTTP/1.1 (whose default that
    is) unless it says ``Connection: close``; never an upgrade, refused or not (its client expects the
    connection to be a WebSocket's or to end)."""
    if request.protocol != "HTTP/1.1" or "Upgrade" in request.headers:
        return False
    options = {
        option.strip().lower() for option in ",".join(request.headers.get_all("Connection")).split(",")
    }
    return not options & {"close", "upgrade"}


def head_end(tail: bytes, data: bytes) -> int | None:
    """Where in ``data`` a request's head ends (the index just past its blank line), if it does there;
    ``tail`` is the head's last bytes read before ``data`` (up to 3), for a blank line cut in two."""
    found = (tail + data).find(HEAD_END)
    if found < 0:
        return None
    return found + len(HEAD_END) - len(tail)


def next_tail(tail: bytes, data: bytes) -> bytes:
    """The last bytes of a head read so far (``tail`` then ``data``), as :func:`head_end` takes them."""
    return (tail + data)[-(len(HEAD_END) - 1) :]
