"""The browser client's files, read into memory once when the server starts, and served from there.

Each file is read, hashed and gzip-compressed once, so a request never touches the disk nor compresses
anything on the event loop. The client is plain ES modules imported by fixed names (no build step to give
them content-hashed names), so every file is sent with ``Cache-Control: no-cache`` and a strong ``ETag``
of its content: a browser keeps its copy and asks each time whether it is still good, and an unchanged
file is answered ``304 Not Modified`` with no body. Editing the client on disk takes a server restart.
"""

from __future__ import annotations

import gzip
import hashlib
import http
import mimetypes
import re
from dataclasses import dataclass
from pathlib import Path

from websockets.datastructures import Headers
from websockets.http11 import Response

from server.http_headers import add_security_headers

CACHE_CONTROL = "no-cache"
"""Keep a copy, but ask whether it is still good before using it (the ETag makes that a 304)."""
VARY = "Accept-Encoding"
"""The answer depends on whether the client takes gzip: a cache must keep the two apart."""

_CODING = re.compile(r"\s*([A-Za-z0-9*\-]+)\s*(?:;\s*q\s*=\s*([0-9.]+))?")


@dataclass(frozen=True, slots=True)
class StaticFile:
    """One file as it is served: its bytes, and its gzip form when that is smaller, each with its own
    strong validator (two encodings of a file are two representations, RFC 9110 section 8.8.3)."""

    body: bytes
    content_type: str
    etag: str
    gzipped: bytes | None
    gzip_etag: str


def read_file(path: Path) -> StaticFile:
    """``path``'s bytes, type, validators and gzip form, all worked out now for every later request."""
    body = path.read_bytes()
    content_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if content_type.startswith("text/") or content_type.endswith("javascript"):
        content_type += "; charset=utf-8"
    digest = hashlib.sha256(body).hexdigest()[:32]
    compressed = gzip.compress(body, compresslevel=9, mtime=0)
    gzipped = compressed if len(compressed) < len(body) else None
    return StaticFile(body, content_type, f'"{digest}"', gzipped, f'"{digest}-gz"')


def read_directory(directory: Path) -> dict[str, StaticFile]:
    """Every file under ``directory`` (only those really under it: no link out of it), by its path
    relative to it with ``/`` between parts, as a request names it."""
    root = directory.resolve()
    files: dict[str, StaticFile] = {}
    if not root.is_dir():
        return files
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.resolve().is_relative_to(root):
            files[path.relative_to(root).as_posix()] = read_file(path)
    return files


def accepts_gzip(headers: Headers) -> bool:
    """Whether the request's ``Accept-Encoding`` takes gzip (by name or ``*``, with a ``q`` above 0)."""
    accepted = False
    for part in ",".join(headers.get_all("Accept-Encoding")).split(","):
        match = _CODING.fullmatch(part.strip()) if part.strip() else None
        if match is None:
            continue
        name, quality = match.group(1).lower(), match.group(2)
        try:
            weight = 1.0 if quality is None else float(quality)
        except ValueError:
            weight = 0.0
        if name == "gzip":
            return weight > 0
        if name == "*":
            accepted = weight > 0
    return accepted


def matches_etag(headers: Headers, etag: str) -> bool:
    """Whether ``If-None-Match`` names ``etag`` (or ``*``); compared weakly, as that header is."""
    for value in ",".join(headers.get_all("If-None-Match")).split(","):
        tag = value.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False


class StaticFiles:
    """The files of one directory, served from memory with validators, caching and gzip."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.files = read_directory(directory)

    def get(self, relative: str) -> StaticFile | None:
        return self.files.get(relative)

    def response(
        self, file: StaticFile, request_headers: Headers, status: http.HTTPStatus = http.HTTPStatus.OK
    ) -> Response:
        """``file`` as the request asks for it: gzipped if it takes gzip, ``304`` if its copy is current.
        Any status but 200 (an app page sent as a 404) is answered in full and kept by no cache."""
        zipped = file.gzipped is not None and accepts_gzip(request_headers)
        body, etag = (file.gzipped, file.gzip_etag) if zipped and file.gzipped else (file.body, file.etag)
        headers = Headers([("Content-Type", file.content_type)])
        if status is not http.HTTPStatus.OK:
            headers["Cache-Control"] = "no-store"
        else:
            headers["Cache-Control"] = CACHE_CONTROL
            headers["ETag"] = etag
            if matches_etag(request_headers, etag):
                status, body = http.HTTPStatus.NOT_MODIFIED, b""
        if file.gzipped is not None:
            headers["Vary"] = VARY
        if zipped:
            headers["Content-Encoding"] = "gzip"
        if status is not http.HTTPStatus.NOT_MODIFIED:
            headers["Content-Length"] = str(len(body))
        add_security_headers(headers)
        return Response(status.value, status.phrase, headers, body)
