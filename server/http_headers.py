"""The security headers every HTTP answer carries: those of the HTTP front and those websockets makes
itself (a refused upgrade, a request line or headers too long: 414, 431)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from websockets.datastructures import Headers


def content_security_policy(peer_urls: Iterable[str] = ()) -> str:
    """What a page of ours may load and who may frame it: only this server's own files, its WebSocket and
    those of the other instances in ``peer_urls`` (each as its scheme, host and port, and only if that is
    all plain), no inline script, and no framing (the match page has resign and abort buttons to trick a
    click onto)."""
    sources = ["'self'"]
    for url in peer_urls:
        parts = urlsplit(url)
        if parts.scheme in ("ws", "wss") and PLAIN_HOST.fullmatch(parts.netloc):
            sources.append(f"{parts.scheme}://{parts.netloc}")
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src {' '.join(sorted(set(sources)))}; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


PLAIN_HOST = re.compile(r"[A-Za-z0-9.\-]+(:[0-9]{1,5})?|\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?")
"""A host and port as a policy may name them: nothing that could end a source or a directive."""
CONTENT_SECURITY_POLICY = content_security_policy()

SECURITY_HEADERS = (
    ("Cache-Control", "no-store"),
    ("X-Content-Type-Options", "nosniff"),
    ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
)


def add_security_headers(headers: Headers) -> None:
    """Give ``headers`` each security header it does not have yet (those it has, say a page's own policy,
    stay as they are)."""
    for name, value in SECURITY_HEADERS:
        if name not in headers:
            headers[name] = value
