"""Several HTTP requests on one kept-alive connection (raw sockets), each through every guard a first
request passes, and bounded: an idle timeout, a most of requests, the server's close."""

from __future__ import annotations

import asyncio
import gzip
from urllib.parse import urlsplit

from test_connection import Reader, _quota, listening
from test_http_guards import UPGRADE

from server.app import Server
from server.config import WEB_CLIENT_DIR

Answer = tuple[int, dict[str, str], bytes]


async def read_answer(reader: asyncio.StreamReader, *, head_only: bool = False) -> Answer:
    """One response from the stream: status, headers (lower-cased names) and its Content-Length's body."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    status_line, *lines = head.decode().rstrip("\r\n").split("\r\n")
    headers = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in lines)}
    status = int(status_line.split()[1])
    length = 0 if head_only or status in (101, 304) else int(headers.get("content-length", "0"))
    return status, headers, await asyncio.wait_for(reader.readexactly(length), 10)


def request(path: str, host: str, *headers: str, method: str = "GET") -> bytes:
    return "".join(
        [f"{method} {path} HTTP/1.1\r\nHost: {host}\r\n", *(f"{h}\r\n" for h in headers), "\r\n"]
    ).encode()


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), 10) == b""
    except ConnectionError:
        return True


async def test_several_requests_are_answered_on_one_connection(arena: Server) -> None:
    host = urlsplit(arena.http_url).netloc
    reader, writer = await asyncio.open_connection("127.0.0.1", arena.port)
    answers = []
    for path, method in (("/", "GET"), ("/app.js", "HEAD"), ("/api/games", "GET"), ("/healthz", "GET")):
        writer.write(request(path, host, "Accept-Encoding: gzip", method=method))
        answers.append(await read_answer(reader, head_only=method == "HEAD"))
        assert answers[-1][1]["connection"] == "keep-alive", path
    assert [status for status, _, _ in answers] == [200, 200, 200, 200]
    assert (
        b"<html" in gzip.decompress(answers[0][2])
        and b'"games"' in answers[2][2]
        and b'"ok"' in answers[3][2]
    )
    # A 304 has no body, and the connection reads on past it.
    writer.write(request("/", host, "Accept-Encoding: gzip", f"If-None-Match: {answers[0][1]['etag']}"))
    assert (await read_answer(reader))[0] == 304
    # Two requests sent at once are answered in turn, and one that says "close" is the last.
    writer.write(request("/style.css", host) + request("/healthz", host, "Connection: close"))
    first, last = await read_answer(reader), await read_answer(reader)
    assert (first[0], first[1]["connection"]) == (200, "keep-alive") and first[2] == (
        WEB_CLIENT_DIR / "style.css"
    ).read_bytes()
    assert (last[0], last[1]["connection"]) == (200, "close")
    assert await closed_by_server(reader)
    writer.close()


async def test_each_request_on_a_kept_connection_passes_the_guards_and_may_upgrade(arena: Server) -> None:
    host = urlsplit(arena.http_url).netloc
    reader, writer = await asyncio.open_connection("127.0.0.1", arena.port)
    writer.write(request("/api/games", host))
    assert (await read_answer(reader))[0] == 200
    writer.write(request("/api/games", "evil.example"))  # (DNS rebinding, on the second request)
    status, headers, body = await read_answer(reader)
    assert status == 421 and b"evil.example" in body and headers["x-frame-options"] == "DENY"
    writer.write(request("/" + "x" * 9000, host))  # (refused by websockets itself: the connection ends)
    status, headers, _ = await read_answer(reader)
    assert status == 414 and headers["x-content-type-options"] == "nosniff"
    assert await closed_by_server(reader)
    writer.close()
    # A WebSocket opened by the third request of a connection.
    reader, writer = await asyncio.open_connection("127.0.0.1", arena.port)
    writer.write(request("/healthz", host) + request("/favicon.svg", host))
    assert [(await read_answer(reader))[0] for _ in range(2)] == [200, 200]
    writer.write(request("/ws", host, *(f"{name}: {value}" for name, value in UPGRADE.items())))
    assert (await read_answer(reader))[0] == 101
    writer.write(bytes([0x88, 0x80, 0, 0, 0, 0]))  # (a masked close frame, empty)
    assert (await reader.readexactly(2))[0] == 0x88, "the server answers the close as a WebSocket"
    writer.close()


async def test_an_upgrade_refused_or_an_http_1_0_request_closes_the_connection(arena: Server) -> None:
    host = urlsplit(arena.http_url).netloc
    for raw in (
        request("/ws", host, *(f"{n}: {v}" for n, v in {**UPGRADE, "Sec-WebSocket-Version": "7"}.items())),
        b"GET /healthz HTTP/1.0\r\n\r\n",
    ):
        reader, writer = await asyncio.open_connection("127.0.0.1", arena.port)
        writer.write(raw)
        status, headers, _ = await read_answer(reader)
        assert status in (200, 400) and headers["connection"].lower() == "close"
        assert await closed_by_server(reader)
        writer.close()


async def test_a_kept_connection_is_bounded_by_requests_idle_time_and_the_servers_close() -> None:
    reader = Reader()
    async with listening(reader, max_requests=2, keepalive_timeout=0.2) as (listener, port):
        stream, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request("/plain", "127.0.0.1") * 3)
        assert (await read_answer(stream))[1]["connection"] == "keep-alive"
        assert (await read_answer(stream))[1]["connection"] == "close"
        assert await closed_by_server(stream), "two requests at most: the third is not read"
        writer.close()
        stream, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request("/plain", "127.0.0.1"))
        assert (await read_answer(stream))[0] == 200
        assert await closed_by_server(stream), "idle past the keep-alive timeout"
        writer.close()
    async with listening(reader) as (listener, port):
        stream, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request("/plain", "127.0.0.1"))
        assert (await read_answer(stream))[0] == 200
        listener.close()
        assert await closed_by_server(stream), "an idle kept connection is closed with the server"
        writer.close()


async def test_an_idle_kept_connection_counts_as_a_socket_waiting_for_its_request() -> None:
    reader = Reader()
    async with listening(reader, quota=_quota(max_connections=1)) as (listener, port):
        stream, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request("/plain", "127.0.0.1"))
        assert (await read_answer(stream))[1]["connection"] == "keep-alive"
        assert listener.quota.openings.held == {"127.0.0.1": 1}
        other, other_writer = await asyncio.open_connection("127.0.0.1", port)
        assert await closed_by_server(other), "the address's one opening is held by the idle socket"
        other_writer.close()
        writer.close()
        async with asyncio.timeout(5):
            while listener.connections:
                await asyncio.sleep(0.01)
        assert listener.quota.openings.held == {}
