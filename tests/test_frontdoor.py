"""The front door of docker-compose.yml: deploy/haproxy/haproxy.cfg on a real HAProxy, in front of two
``plyarena serve`` processes sharing a PostgreSQL database and a Mosquitto broker of the test's own.

The configuration is read as docker-compose.yml uses it (every server instance has its path and a place
in the rotation, its public URL is that path at the front door), then run as it is, only its addresses
given in the environment. Clients reach a private match hosted on the other instance through it: over
the protocol, and in Chromium.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import pytest_asyncio
from pg_scratch import temporary_postgres_database
from playwright.async_api import Browser, async_playwright, expect
from support.client import ArenaClient
from support.deploy import FRONT_DOOR, HAPROXY_CFG, compose_file, server_services
from support.process import ServerProcess, free_port
from support.services import PrivateMosquitto, missing, mosquitto_binary, wait_for_port
from support.web import CHROMIUM_ARGS, PageErrors, moves_played, open_page, play_first_legal_move, sign_in

IN_MODULE_LOOP = pytest.mark.asyncio(loop_scope="module")
"""The tests share the module's front door, instances and browser, so they run in its event loop."""
INSTANCES = ("arena-a", "arena-b")
"""docker-compose.yml's instance ids, which the configuration's paths and backends name."""
ROTATION = "any"
"""The backend of every path that is no instance's own: any healthy instance."""
HAPROXY_PATHS = ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy")
CHECK_TIMEOUT_S = 15.0
"""Long enough for two health checks 2 s apart (``fall 2``, ``rise 2``) on a busy machine."""


def haproxy_binary() -> str:
    found = shutil.which("haproxy") or next((p for p in HAPROXY_PATHS if os.path.exists(p)), None)
    if found is None:
        missing("HAProxy", "no haproxy binary (apt-get install haproxy)")
    assert found is not None
    return found


def sections(text: str) -> dict[str, list[list[str]]]:
    """The configuration's sections by their header (``backend any``), each a list of its lines' words."""
    found: dict[str, list[list[str]]] = {}
    current: list[list[str]] = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if not line[0].isspace():
            current = found.setdefault(" ".join(words), [])
        else:
            current.append(words)
    return found


def default_of(word: str) -> str:
    """What ``"${NAME-default}"`` is where ``NAME`` is not set, as in docker-compose.yml."""
    match = re.fullmatch(r'"\$\{\w+-([^}]*)\}"', word)
    assert match is not None, f"{word}: an address from the environment, with the compose network's default"
    return match.group(1)


# ------------------------------------------------------------------ the configuration, as compose uses it


def test_every_instance_has_its_path_and_a_place_in_the_rotation() -> None:
    services = compose_file({})["services"]
    config = sections(HAPROXY_CFG.read_text())
    frontend = config["frontend arena"]
    (port,) = (default_of(line[1]).lstrip(":") for line in frontend if line[0] == "bind")
    assert services[FRONT_DOOR]["ports"] == [f"{port}:{port}"]
    routes = {line[1]: line[2:] for line in frontend if line[0] == "use_backend"}
    rotation = {line[1]: default_of(line[2]) for line in config[f"backend {ROTATION}"] if line[0] == "server"}
    instances = {config.instance_id: (name, config) for name, config in server_services(services).items()}
    assert set(instances) == set(INSTANCES) == set(routes) == set(rotation)
    for instance, (service, server) in instances.items():
        public = urlsplit(server.http_url)
        assert public.path == f"/i/{instance}", "its public URL is its path at the front door"
        assert f"{public.scheme}://{public.netloc}" == f"http://localhost:{port}"
        assert routes[instance] == ["if", "{", "path_beg", f"/i/{instance}/", "}"]
        own = config[f"backend {instance}"]
        assert ["http-request", "replace-path", f"^/i/{instance}(/.*)$", "\\1"] in own, "the prefix taken off"
        (address,) = (default_of(line[2]) for line in own if line[0] == "server")
        assert address == rotation[instance] == f"{service}:{server.port}"
    checks = config["defaults"]
    assert ["http-check", "send", "meth", "GET", "uri", "/healthz"] in checks
    assert ["http-check", "expect", "status", "200"] in checks
    assert any(line[:2] == ["default-server", "check"] for line in checks)
    assert ["balance", "leastconn"] in config[f"backend {ROTATION}"], "WebSockets are long: fewest first"


def test_haproxy_accepts_the_configuration(tmp_path: Path) -> None:
    environ = {"PLYARENA_HAPROXY_ADMIN": str(tmp_path / "admin.sock")}
    result = subprocess.run(
        [haproxy_binary(), "-c", "-f", str(HAPROXY_CFG)],
        env={**os.environ, **environ}, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ALERT" not in result.stdout + result.stderr


# ------------------------------------------------------------------ the front door, running


@dataclass
class FrontDoor:
    """HAProxy on ``port`` in front of one ``plyarena serve`` per instance id."""

    port: int
    admin_socket: Path
    instances: dict[str, ServerProcess]

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws_url(self, instance: str | None = None) -> str:
        """The WebSocket URL of ``instance`` at the front door, or of any instance (``None``)."""
        path = f"/i/{instance}/ws" if instance else "/ws"
        return f"ws://127.0.0.1:{self.port}{path}"

    async def command(self, line: str) -> str:
        """One command of HAProxy's runtime API, and its answer."""
        reader, writer = await asyncio.open_unix_connection(self.admin_socket)
        writer.write(line.encode() + b"\n")
        await writer.drain()
        answer = await reader.read()
        writer.close()
        return answer.decode()

    async def status(self, backend: str, server: str) -> str:
        """What HAProxy says of ``server`` in ``backend``: ``UP``, ``DOWN``, ``DRAIN``, ..."""
        header, *rows = [row.split(",") for row in (await self.command("show stat")).splitlines() if row]
        columns = [header[0].lstrip("# "), *header[1:]]
        for row in rows:
            if row[:2] == [backend, server]:
                return row[columns.index("status")]
        raise AssertionError(f"no server {backend}/{server}")

    async def wait_for_status(self, backend: str, server: str, wanted: str) -> None:
        status = ""
        try:
            async with asyncio.timeout(CHECK_TIMEOUT_S):
                while (status := await self.status(backend, server)).split()[0] != wanted:
                    await asyncio.sleep(0.1)
        except TimeoutError:
            raise AssertionError(f"{backend}/{server} is still {status!r}, not {wanted}") from None

    @contextlib.asynccontextmanager
    async def out_of_rotation(self, instance: str) -> AsyncIterator[None]:
        """``instance`` drained from the rotation, as an operator does before stopping it: no new
        clients but at its own path."""
        assert (await self.command(f"set server {ROTATION}/{instance} state drain")).strip() == ""
        try:
            yield
        finally:
            await self.command(f"set server {ROTATION}/{instance} state ready")


def get_json(url: str) -> tuple[int, Any]:
    """An HTTP GET through the front door: its status and its body, as JSON where it is."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        body = error.read()
        with contextlib.suppress(ValueError):
            return error.code, json.loads(body)
        return error.code, body.decode(errors="replace")


async def answering_instance(url: str) -> str:
    status, body = await asyncio.to_thread(get_json, url)
    assert status == 200, (status, body)
    return str(body["instance"])


@pytest.fixture(scope="module")
def front_door_database(postgres_url: str) -> Iterator[str]:
    with temporary_postgres_database(postgres_url, "frontdoor") as url:
        yield url


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def front_door(
    front_door_database: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[FrontDoor]:
    haproxy = haproxy_binary()
    workdir = tmp_path_factory.mktemp("frontdoor")
    broker = PrivateMosquitto(mosquitto_binary())
    await broker.start()
    port = free_port()
    instances = {
        instance: ServerProcess(
            front_door_database, instance, workdir,
            "--mqtt", broker.url, "--public-url", f"http://127.0.0.1:{port}/i/{instance}",
        )
        for instance in INSTANCES
    }  # fmt: skip
    door = FrontDoor(port, workdir / "admin.sock", instances)
    environ = {
        "PLYARENA_FRONTDOOR_BIND": f"127.0.0.1:{port}",
        "PLYARENA_HAPROXY_ADMIN": str(door.admin_socket),
        **{f"PLYARENA_{instance.upper().replace('-', '_')}": f"127.0.0.1:{instances[instance].port}"
           for instance in INSTANCES},
    }  # fmt: skip
    process: asyncio.subprocess.Process | None = None
    try:
        await asyncio.gather(*(server.start() for server in instances.values()))
        with (workdir / "haproxy.log").open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                haproxy, "-db", "-f", str(HAPROXY_CFG), env={**os.environ, **environ}, stdout=log, stderr=log
            )
        await wait_for_port(port)
        for instance in INSTANCES:
            for backend in (ROTATION, instance):
                await door.wait_for_status(backend, instance, "UP")
        yield door
    finally:
        if process is not None and process.returncode is None:
            process.terminate()
            await process.wait()
        await asyncio.gather(*(server.stop() for server in instances.values()))
        await broker.stop()


@IN_MODULE_LOOP
async def test_each_instance_is_at_its_path_and_the_root_at_either(front_door: FrontDoor) -> None:
    for instance in INSTANCES:
        assert await answering_instance(f"{front_door.http_url}/i/{instance}/healthz") == instance
    answers = [await answering_instance(f"{front_door.http_url}/healthz") for _ in range(6)]
    assert set(answers) == set(INSTANCES), answers
    async with front_door.out_of_rotation("arena-a"):
        answers = [await answering_instance(f"{front_door.http_url}/healthz") for _ in range(4)]
        assert answers == ["arena-b"] * 4, "a drained instance takes no new clients ..."
        assert await answering_instance(f"{front_door.http_url}/i/arena-a/healthz") == "arena-a", (
            "... but those of its own matches"
        )


@IN_MODULE_LOOP
async def test_a_client_at_b_joins_watches_and_plays_a_private_match_hosted_on_a(
    front_door: FrontDoor,
) -> None:
    """Alice creates a private match at arena-a; Bob and Carol, connected to arena-b through the front
    door, are told where it is played (arena-a's path at the front door) and follow it there."""
    async with contextlib.AsyncExitStack() as stack:

        async def player(url: str, name: str | None = None, token: str | None = None) -> ArenaClient:
            client = await stack.enter_async_context(await ArenaClient.connect(url))
            await client.hello(name, token=token)
            return client

        alice = await player(front_door.ws_url("arena-a"), "Alice")
        match_id = (await alice.request("match.create", game="connect4", seat=0, visibility="private"))[
            "match_id"
        ]
        record = f"{front_door.http_url}/i/arena-b/api/matches/{match_id}"
        await wait_until_async(lambda: host_url_known(record), "arena-b knows arena-a's URL from the broker")
        followed: dict[str, ArenaClient] = {}
        for name, request in (("Bob", "match.join"), ("Carol", "match.watch")):
            at_b = await player(front_door.ws_url("arena-b"), name)
            refused = await at_b.request(request, match_id=match_id)
            assert refused["type"] == "error" and refused["code"] == "hosted_elsewhere", refused
            assert refused["url"] == front_door.ws_url("arena-a")
            there = await player(refused["url"], token=at_b.token)
            answer = await there.request(request, match_id=match_id)
            assert answer["type"] != "error", answer
            followed[name] = there
        bob, carol = followed["Bob"], followed["Carol"]
        await alice.expect(type_="started", match_id=match_id)
        moves = [(alice, "4"), (bob, "3"), (alice, "4"), (bob, "3"), (alice, "4"), (bob, "3"), (alice, "4")]
        for ply, (mover, move) in enumerate(moves):
            assert (await mover.request("move", match_id=match_id, ply=ply, move=move))["type"] == "moved"
        for client in (alice, bob, carol):
            ended = await client.expect(type_="ended", match_id=match_id)
            assert ended["winner"] == 0
        status, stored = await asyncio.to_thread(get_json, record)
        assert status == 200 and stored["host"] == "arena-a" and len(stored["moves"]) == len(moves)


async def host_url_known(url: str) -> bool:
    status, body = await asyncio.to_thread(get_json, url)
    return status == 200 and body["host_url"] is not None


async def wait_until_async(
    condition: Callable[[], Awaitable[bool]], what: str, timeout: float = 10.0
) -> None:
    """Wait until ``condition()`` comes true, ``what`` says for what, for at most ``timeout`` seconds."""
    try:
        async with asyncio.timeout(timeout):
            while not await condition():
                await asyncio.sleep(0.1)
    except TimeoutError:
        raise AssertionError(f"waited {timeout} s until {what}") from None


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser(chromium_path: str) -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        await browser.close()


@IN_MODULE_LOOP
async def test_the_browser_follows_a_private_match_to_its_host_through_the_front_door(
    front_door: FrontDoor, browser: Browser
) -> None:
    """A player and a spectator whose pages came from arena-b (arena-a out of the rotation), by the
    match's link: each page plays or watches it at arena-a, through the front door."""
    async with (
        front_door.out_of_rotation("arena-a"),
        await ArenaClient.connect(front_door.ws_url("arena-a")) as rival,
    ):
        await rival.hello("Homebody")
        created = await rival.request("match.create", game="connect4", seat=0, visibility="private")
        match_id = created["match_id"]
        await wait_until_async(
            lambda: host_url_known(f"{front_door.http_url}/i/arena-b/api/matches/{match_id}"),
            "arena-b knows arena-a's URL from the broker",
        )
        page = await open_page(browser, front_door.http_url)
        watcher = await open_page(browser, front_door.http_url)
        errors = [PageErrors(page), PageErrors(watcher)]
        sockets: list[str] = []
        for each in (page, watcher):
            each.on("websocket", lambda socket: sockets.append(socket.url))
        await sign_in(page, "Wanderer", path=f"/match/{match_id}")
        await page.get_by_role("button", name=re.compile(r"^Join as ")).click()
        await rival.expect(type_="started", match_id=match_id)
        await sign_in(watcher, "Onlooker", path=f"/match/{match_id}")
        await expect(watcher.locator(".match-title")).to_contain_text("watching")
        assert (await rival.request("move", match_id=match_id, ply=0, move="4"))["type"] == "moved"
        await expect(page.locator(".turn-status", has_text="Your turn")).to_be_visible()
        await play_first_legal_move(page)
        moved = await rival.expect(type_="moved", match_id=match_id, ply=1)
        assert moved["seat"] == 1
        await expect(moves_played(watcher)).to_have_count(2)
    # Each page's own connections at arena-b (in the lobby, where it picked its name, then on the match's
    # page), then its connection to arena-a at the front door.
    assert sockets.count(front_door.ws_url()) == 4 and sockets.count(front_door.ws_url("arena-a")) == 2
    for page_errors in errors:
        page_errors.assert_none()


@pytest.mark.slow
@IN_MODULE_LOOP
async def test_a_dead_instance_leaves_the_rotation_and_its_path_answers_unavailable(
    front_door: FrontDoor,
) -> None:
    """Its health checks fail: HAProxy takes it out of the rotation (every new client goes to the other)
    and answers 503 at its path, until it is back."""
    doomed = front_door.instances["arena-b"]
    await doomed.kill()
    try:
        await front_door.wait_for_status(ROTATION, "arena-b", "DOWN")
        answers = [await answering_instance(f"{front_door.http_url}/healthz") for _ in range(4)]
        assert answers == ["arena-a"] * 4
        status, _ = await asyncio.to_thread(get_json, f"{front_door.http_url}/i/arena-b/healthz")
        assert status == 503
    finally:
        await doomed.start()
        for backend in (ROTATION, "arena-b"):
            await front_door.wait_for_status(backend, "arena-b", "UP")
