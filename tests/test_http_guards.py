"""What every HTTP answer on the WebSocket port holds to: only for the hosts this server is (no DNS
rebinding), no body for a HEAD, and the security headers, on websockets' own refusals (414, 431) too."""

from __future__ import annotations

import argparse
import asyncio
import json

from support.fixtures import StartServer
from test_server_http import http_get

from plyarena.commands import serve
from server.app import Server
from server.http_headers import SECURITY_HEADERS

UPGRADE = {
    "Upgrade": "websocket",
    "Connection": "Upgrade",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version": "13",
}


def assert_secured(headers: dict[str, str]) -> None:
    for name, value in SECURITY_HEADERS:
        assert headers.get(name.lower()) == value, (name, headers)


async def test_a_request_naming_another_host_is_refused_and_so_is_its_websocket(arena: Server) -> None:
    """A page of evil.example whose name was made to point at this server (DNS rebinding) names its own
    host: neither /metrics, nor the API, nor the WebSocket answer it."""
    for path, headers in (("/metrics", None), ("/api/games", None), ("/", None), ("/ws", UPGRADE)):
        status, answer, body = await http_get(arena, path, headers, host=f"evil.example:{arena.port}")
        assert status == 421, (path, status, body)
        assert_secured(answer)
        error = json.loads(body)["error"]
        assert error["code"] == "not_allowed" and "evil.example" in error["message"]


async def test_the_listening_address_and_its_loopback_names_are_allowed(arena: Server) -> None:
    for host in (f"127.0.0.1:{arena.port}", f"localhost:{arena.port}", "LOCALHOST.", f"[::1]:{arena.port}"):
        status, _, body = await http_get(arena, "/api/games", host=host)
        assert status == 200, (host, body)
    reader, writer = await asyncio.open_connection("127.0.0.1", arena.port)
    request = [
        f"GET /ws HTTP/1.1\r\nHost: localhost:{arena.port}\r\n",
        *(f"{k}: {v}\r\n" for k, v in UPGRADE.items()),
    ]
    writer.write(("".join(request) + "\r\n").encode())
    assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 101 ")
    writer.close()


async def test_a_request_without_a_host_is_refused_unless_it_is_http_1_0(arena: Server) -> None:
    status, answer, body = await http_get(arena, "/healthz", host=None)
    assert status == 400 and "Host" in json.loads(body)["error"]["message"]
    assert_secured(answer)
    status, _, _ = await http_get(arena, "/healthz", host=None, version="HTTP/1.0")
    assert status == 200, "a load balancer's health check"


async def test_the_public_urls_host_and_the_hosts_allowed_on_the_command_line_are_answered(
    start_server: StartServer,
) -> None:
    parser = argparse.ArgumentParser()
    serve.configure(parser)
    args = ["--public-url", "https://play.example/i/a", "--allow-host", "Arena.LAN", "--allow-host", "b.lan"]
    config = serve.config_from(parser.parse_args(args))
    assert config.allowed_hosts == ("Arena.LAN", "b.lan")
    server = await start_server(public_url=config.public_url, allowed_hosts=config.allowed_hosts)
    for host in ("play.example", "play.example:443", "arena.lan:8765", "b.lan", f"127.0.0.1:{server.port}"):
        assert (await http_get(server, "/api/games", host=host))[0] == 200, host
    assert (await http_get(server, "/api/games", host="other.example"))[0] == 421
    anyone = await start_server(allowed_hosts=("*",))
    assert (await http_get(anyone, "/api/games", host="other.example"))[0] == 200


async def test_head_has_the_headers_of_get_and_no_body(arena: Server) -> None:
    for path in ("/", "/api/games", "/healthz", "/metrics", "/api/nothing", "/app.js"):
        got_status, got, got_body = await http_get(arena, path)
        status, headers, body = await http_get(arena, path, method="HEAD")
        assert body == b"" and status == got_status, path
        assert got["content-length"] == str(len(got_body)), path
        if path != "/metrics":  # (its figures, the event loop's lag among them, change between the two)
            assert headers["content-length"] == got["content-length"], path
        assert headers["content-type"] == got["content-type"]
    status, headers, body = await http_get(arena, "/ws", UPGRADE, method="HEAD")
    assert status == 405 and body == b"" and int(headers["content-length"]) > 0


async def test_websockets_own_refusals_carry_the_security_headers(arena: Server) -> None:
    """A request line or headers too long are refused by websockets before our front sees them."""
    status, headers, _ = await http_get(arena, "/" + "x" * 9000)
    assert status == 414
    assert_secured(headers)
    status, headers, _ = await http_get(arena, "/", [(f"X-Filler-{n}", "x") for n in range(200)])
    assert status == 431
    assert_secured(headers)
    status, headers, _ = await http_get(arena, "/ws", {**UPGRADE, "Sec-WebSocket-Version": "7"})
    assert status == 400 and "server" in headers, "a version websockets does not speak"
    assert_secured(headers)
