"""The browser client's files over a real socket: read once at start and served from memory, with a
strong ETag answered 304, ``Cache-Control: no-cache``, and gzip for a client that takes it (``Vary``)."""

from __future__ import annotations

import gzip
from pathlib import Path

from support.fixtures import StartServer
from test_server_http import http_get

from server.app import Server
from server.config import WEB_CLIENT_DIR
from server.http_headers import CONTENT_SECURITY_POLICY

GZIP = {"Accept-Encoding": "gzip, deflate, br"}


async def test_a_file_is_gzipped_for_a_client_that_takes_it_and_plain_for_one_that_does_not(
    arena: Server,
) -> None:
    on_disk = (WEB_CLIENT_DIR / "app.js").read_bytes()
    status, headers, body = await http_get(arena, "/app.js", GZIP)
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert gzip.decompress(body) == on_disk and len(body) < len(on_disk)
    assert headers["content-length"] == str(len(body))
    assert headers["content-type"] == "text/javascript; charset=utf-8"
    assert (headers["cache-control"], headers["vary"]) == ("no-cache", "Accept-Encoding")
    assert headers["x-content-type-options"] == "nosniff"
    for refusing in ({}, {"Accept-Encoding": "identity"}, {"Accept-Encoding": "gzip;q=0, *"}):
        status, plain, body = await http_get(arena, "/app.js", refusing)
        assert status == 200 and body == on_disk and "content-encoding" not in plain, refusing
        assert plain["vary"] == "Accept-Encoding" and plain["cache-control"] == "no-cache"
        # Two encodings are two representations: each has its own strong validator.
        assert plain["etag"] != headers["etag"] and not plain["etag"].startswith("W/")


async def test_a_current_copy_is_answered_304_without_a_body(arena: Server) -> None:
    for path in ("/app.js", "/style.css", "/favicon.svg", "/boards/connect4.js", "/"):
        status, headers, body = await http_get(arena, path, GZIP)
        assert status == 200 and body, path
        etag = headers["etag"]
        for tags in (etag, f"W/{etag}", f'"stale", {etag}', "*"):
            status, again, body = await http_get(arena, path, {**GZIP, "If-None-Match": tags})
            assert (status, body) == (304, b""), (path, tags)
            assert again["etag"] == etag and again["cache-control"] == "no-cache", path
            assert "content-length" not in again
        status, _, body = await http_get(arena, path, {**GZIP, "If-None-Match": '"stale"'})
        assert status == 200 and body, path
        # The validator of the gzip form does not vouch for the plain one.
        status, _, body = await http_get(arena, path, {"If-None-Match": etag})
        assert status == 200 and body, path


async def test_the_app_pages_share_the_index_validator_and_keep_their_policy(arena: Server) -> None:
    _, index, _ = await http_get(arena, "/", GZIP)
    for path in ("/match/abc", "/replay/abc", "/finished"):
        status, headers, _ = await http_get(arena, path, {**GZIP, "If-None-Match": index["etag"]})
        assert status == 304 and headers["etag"] == index["etag"], path
        assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    # A dead link is answered with the app and a 404, which no cache keeps.
    status, headers, body = await http_get(arena, "/nope", {"Accept": "text/html", "If-None-Match": "*"})
    assert status == 404 and body and headers["cache-control"] == "no-store" and "etag" not in headers
    status, headers, _ = await http_get(arena, "/nope.js", {"If-None-Match": "*"})
    assert status == 404 and headers["content-type"] == "application/json"


async def test_files_are_read_once_at_start_not_per_request(
    start_server: StartServer, tmp_path: Path
) -> None:
    client = tmp_path / "web"
    (client / "boards").mkdir(parents=True)
    (client / "index.html").write_text("<!doctype html><title>first</title>")
    (client / "boards" / "a.js").write_text("export const a = 1;\n")
    outside = tmp_path / "secret.txt"
    outside.write_text("not for the web")
    (client / "leak.txt").symlink_to(outside)
    server = await start_server(static_dir=client)
    # Changed and removed on disk: the server answers what it read at start, without opening a file.
    (client / "boards" / "a.js").write_text("export const a = 2;\n")
    (client / "index.html").unlink()
    status, _, body = await http_get(server, "/boards/a.js")
    assert (status, body) == (200, b"export const a = 1;\n")
    status, _, body = await http_get(server, "/match/x")
    assert (status, body) == (200, b"<!doctype html><title>first</title>")
    assert (await http_get(server, "/leak.txt"))[0] == 404, "a link out of the directory is not followed"
    assert (await http_get(server, "/../secret.txt"))[0] == 404
