"""HTTP on the WebSocket port: pages, health, metrics, the match API and exports; and what never leaks."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import resource
from typing import Any
from urllib.parse import urlsplit

import pytest
from support.fixtures import Connect, StartServer
from support.play import decisive_game, open_match, play_moves
from websockets.exceptions import InvalidStatus

from server.app import Server
from server.http_headers import CONTENT_SECURITY_POLICY, content_security_policy


async def http_get(
    server: Server,
    path: str,
    headers: dict[str, str] | list[tuple[str, str]] | None = None,
    *,
    method: str = "GET",
    host: str | None = "",
    version: str = "HTTP/1.1",
) -> tuple[int, dict[str, str], bytes]:
    """A minimal HTTP request over a raw socket (a GET unless ``method`` says otherwise): status, headers
    (lower-cased names) and body. Headers as a list may name one twice. ``host`` is the Host header's
    value (``""``: the server's public one; ``None``: none). It says ``Connection: close`` unless
    ``headers`` name a ``Connection``."""
    reader, writer = await asyncio.open_connection(server.config.host, server.port)
    lines = [f"{method} {path} {version}"]
    if host is not None:
        lines.append(f"Host: {host or urlsplit(server.http_url).netloc}")
    pairs = list(headers.items() if isinstance(headers, dict) else headers or [])
    if not any(name.lower() == "connection" for name, _ in pairs):
        pairs.append(("Connection", "close"))  # (read to the end below: not kept alive for another)
    lines += [f"{name}: {value}" for name, value in pairs]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    await writer.drain()
    raw = await reader.read()
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode().split("\r\n")
    parsed = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in header_lines)}
    return int(status_line.split()[1]), parsed, body


async def get_json(server: Server, path: str, status: int = 200, token: str | None = None) -> Any:
    bearer = {"Authorization": f"Bearer {token}"} if token else None
    code, headers, body = await http_get(server, path, bearer)
    assert code == status, (path, code, body)
    assert headers["content-type"] == "application/json"
    return json.loads(body)


async def test_pages_health_and_games(arena: Server) -> None:
    status, headers, body = await http_get(arena, "/")
    assert status == 200 and headers["content-type"].startswith("text/html") and b"<html" in body.lower()
    # Our own files and WebSocket only, no inline script, never in a frame (the buttons could be clickjacked).
    policy = dict(part.strip().split(" ", 1) for part in headers["content-security-policy"].split(";"))
    assert policy["script-src"] == policy["connect-src"] == "'self'" and policy["frame-ancestors"] == "'none'"
    assert (headers["x-frame-options"], headers["x-content-type-options"]) == ("DENY", "nosniff")
    assert (await http_get(arena, "/../../etc/passwd"))[0] == 404
    assert (await get_json(arena, "/healthz"))["status"] == "ok"
    games = {game["name"]: game for game in (await get_json(arena, "/api/games"))["games"]}
    assert set(games) >= {"tictactoe", "connect4", "othello", "checkers"}
    assert games["checkers"]["sides"] == ["Black", "White"] and games["checkers"]["notation"]
    assert (await get_json(arena, "/api/nothing", status=404))["error"]["code"] == "not_found"


async def test_a_browser_following_a_dead_link_gets_the_app_and_a_404(arena: Server) -> None:
    """The app's router says "Not found" in the page's own words; a script still gets JSON."""
    status, headers, body = await http_get(arena, "/nope/really", {"Accept": "text/html,*/*;q=0.8"})
    assert status == 404 and headers["content-type"].startswith("text/html")
    assert body == (await http_get(arena, "/"))[2]
    status, headers, _ = await http_get(arena, "/nope/really", {"Accept": "*/*"})
    assert status == 404 and headers["content-type"] == "application/json"
    assert (await http_get(arena, "/api/nothing", {"Accept": "text/html"}))[0] == 404


async def test_a_header_sent_twice_is_refused_and_a_failure_is_answered_in_json(
    arena: Server, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    origins = [("Origin", arena.http_url), ("Origin", "http://evil.example")]
    upgrade = [("Connection", "Upgrade"), ("Upgrade", "websocket"), ("Sec-WebSocket-Version", "13"),
               ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")]  # fmt: skip
    bearers = [("Authorization", "Bearer one"), ("Authorization", "Bearer two")]
    cases = (("/ws", upgrade + origins, "Origin"), ("/api/matches", bearers, "Authorization"))
    for path, headers, name in cases:
        status, _, body = await http_get(arena, path, headers)
        error = json.loads(body)["error"]
        assert status == 400 and error["code"] == "bad_field" and name in error["message"], (status, body)

    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(arena.store, "list_matches", broken)
    with caplog.at_level(logging.ERROR, logger="server.http"):
        refused = await get_json(arena, "/api/matches", status=500)
    assert refused["error"]["code"] == "internal"
    assert "HTTP request for /api/matches failed" in caplog.text and "a bug" in caplog.text


async def finished_checkers_match(arena: Server, connect: Connect) -> str:
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob", bot=True)
    match_id = (await open_match(alice, bob, "checkers", time_control="10+5"))["match_id"]
    moves = list(decisive_game("checkers"))
    await play_moves("checkers", (alice, bob), match_id, moves[:-1])
    last_mover = (alice, bob)[(len(moves) - 1) % 2]
    engine = {"score": 9000, "depth": 3, "nodes": 77, "pv": [moves[-1]]}
    await last_mover.request("move", match_id=match_id, ply=len(moves) - 1, move=moves[-1], engine=engine)
    return match_id


async def test_match_record_and_pdn_export(arena: Server, connect: Connect) -> None:
    match_id = await finished_checkers_match(arena, connect)
    moves = list(decisive_game("checkers"))
    record = await get_json(arena, f"/api/matches/{match_id}")
    assert record["status"] == "finished" and record["game"] == "checkers"
    assert [seat["player"]["name"] for seat in record["seats"]] == ["Alice", "Bob"]
    assert [move["move"] for move in record["moves"]] == moves
    assert record["moves"][-1]["engine"] == {
        "source": None,  # not said
        "score": 9000,
        "depth": 3,
        "nodes": 77,
        "pv": [moves[-1]],
        "time_ms": None,
    }
    assert all(len(move["clocks_ms"]) == 2 for move in record["moves"])

    status, headers, body = await http_get(arena, f"/api/matches/{match_id}/export")
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert ".pdn" in headers["content-disposition"]
    pdn = body.decode()
    winner = record["winner"]
    result = "0-1" if winner == 0 else "1-0"  # seat 0 plays Black; PDN gives White's score first
    for tag in ('[Black "Alice"]', '[White "Bob"]', f'[Result "{result}"]', '[GameType "21"]'):
        assert tag in pdn
    movetext = pdn.split("\n\n", 1)[1].split()
    assert movetext[:3] == ["1.", moves[0], moves[1]] and movetext[-1] == result
    assert [word for word in movetext if not word.endswith(".")][:-1] == moves


async def test_move_list_export_of_the_other_games(arena: Server, connect: Connect) -> None:
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "connect4"))["match_id"]
    await play_moves("connect4", (alice, bob), match_id, list(decisive_game("connect4")))
    _, _, body = await http_get(arena, f"/api/matches/{match_id}/export")
    text = body.decode()
    assert (
        '[Red "Alice"]' in text and '[Result "Red wins"]' in text and '[Termination "four in a row"]' in text
    )
    assert text.rstrip().endswith("1. 1 2\n2. 1 2\n3. 1 2\n4. 1\nRed wins")


async def test_an_export_names_the_side_that_resigned(arena: Server, connect: Connect) -> None:
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "othello"))["match_id"]
    assert (await bob.request("resign", match_id=match_id))["reason"] == "seat 1 resigned"
    _, _, body = await http_get(arena, f"/api/matches/{match_id}/export")
    assert '[Termination "White resigned"]' in body.decode(), "seats mean nothing outside the server"


async def test_match_list_filters_and_pages(arena: Server, connect: Connect) -> None:
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob")
    created = []
    for game in ("tictactoe", "connect4", "tictactoe", "othello", "tictactoe"):
        created.append((await alice.request("match.create", game=game, seat=0))["match_id"])
    await bob.request("match.join", match_id=created[-1])
    player = alice.player_id

    everything = await get_json(arena, f"/api/matches?player={player}")
    assert [match["id"] for match in everything["matches"]] == created[::-1] and everything[
        "next_before"
    ] is None
    first = await get_json(arena, f"/api/matches?player={player}&limit=2")
    assert [match["id"] for match in first["matches"]] == created[:2:-1] and first["next_before"] == created[
        3
    ]
    second = await get_json(arena, f"/api/matches?player={player}&limit=2&before={first['next_before']}")
    assert [match["id"] for match in second["matches"]] == created[2:0:-1]
    tictactoe = await get_json(arena, f"/api/matches?player={player}&game=tictactoe")
    assert [match["id"] for match in tictactoe["matches"]] == [created[4], created[2], created[0]]
    live = await get_json(arena, f"/api/matches?player={player}&status=live")
    assert [match["id"] for match in live["matches"]] == [created[4]]
    assert "moves" not in live["matches"][0]
    for bad in ("limit=0", "limit=x", "status=paused", "game=go"):
        assert (await get_json(arena, f"/api/matches?{bad}", status=400))["error"]["code"] == "bad_field"
    assert (await get_json(arena, "/api/matches/nope", status=404))["error"]["code"] == "not_found"


async def test_a_blank_query_parameter_is_refused_and_an_absent_one_is_not(arena: Server) -> None:
    """``?limit=`` is a form field left empty or a template not filled in, not a request for the default;
    a blank ``before`` taken as absent would turn "no next page" into the first page again, a loop."""
    for name in ("limit", "game", "status", "player", "before"):
        for blank in (f"{name}=", f"{name}=%20", name, f"limit=5&{name}="):
            refused = await get_json(arena, f"/api/matches?{blank}", status=400)
            assert refused["error"]["code"] == "bad_field", blank
            assert refused["error"]["message"].startswith(f"{name} "), (blank, refused)
        twice = await get_json(arena, f"/api/matches?{name}=&{name}=1", status=400)
        assert twice["error"]["message"] == f"{name} is given 2 times: give it once", twice
    # Not one of two values picked in silence.
    refused = await get_json(arena, "/api/matches?status=open&status=live", status=400)
    assert refused["error"]["message"] == "status is given 2 times: give it once", refused
    assert isinstance((await get_json(arena, "/api/matches"))["matches"], list)
    assert len((await get_json(arena, "/api/matches?&&limit=1"))["matches"]) <= 1, "an empty field is none"


async def test_private_matches_are_listed_only_to_their_players(arena: Server, connect: Connect) -> None:
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob")
    private = (await alice.request("match.create", game="tictactoe", visibility="private"))["match_id"]
    public = (await alice.request("match.create", game="tictactoe"))["match_id"]

    def ids(page: dict[str, Any]) -> list[str]:
        return [match["id"] for match in page["matches"]]

    for token in (None, bob.token):  # a stranger, or another player, sees only the public one
        assert ids(await get_json(arena, f"/api/matches?player={alice.player_id}", token=token)) == [public]
    mine = await get_json(arena, f"/api/matches?player={alice.player_id}", token=alice.token)
    assert ids(mine) == [public, private], "its player lists it, as the lobby's games in progress do"
    assert (await get_json(arena, f"/api/matches/{private}"))["id"] == private, "its id is the way in"
    refused = await get_json(arena, "/api/matches", status=401, token="not-a-token")
    assert refused["error"]["code"] == "bad_token"


async def test_an_exactly_full_last_page_says_there_is_no_next(arena: Server, connect: Connect) -> None:
    alice = await connect.player(arena, "Alice")
    created = [(await alice.request("match.create", game="tictactoe"))["match_id"] for _ in range(3)]
    page = await get_json(arena, f"/api/matches?player={alice.player_id}&limit=3")
    assert [match["id"] for match in page["matches"]] == created[::-1] and page["next_before"] is None


async def test_metrics_count_connections_moves_errors_and_commits(arena: Server, connect: Connect) -> None:
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await play_moves("tictactoe", (alice, bob), match_id, ["a1", "b2"])
    await alice.request("move", match_id=match_id, ply=0, move="c3")
    status, headers, body = await http_get(arena, "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain; version=0.0.4")
    samples = dict(line.rsplit(" ", 1) for line in body.decode().splitlines() if not line.startswith("#"))
    assert samples["plyarena_connections"] == "2"
    assert samples["plyarena_live_matches"] == "1"
    assert samples["plyarena_moves_total"] == "2"
    assert samples['plyarena_errors_total{code="stale_ply"}'] == "1"
    assert int(samples["plyarena_commit_seconds_count"]) >= 2
    assert samples['plyarena_commit_seconds_bucket{le="+Inf"}'] == samples["plyarena_commit_seconds_count"]


async def test_metrics_tell_the_processs_descriptors_their_limit_and_its_resident_memory(
    arena: Server, connect: Connect
) -> None:
    """As /proc tells them: a connection holds a descriptor."""

    async def samples() -> dict[str, float]:
        body = (await http_get(arena, "/metrics"))[2].decode()
        lines = (line.rsplit(" ", 1) for line in body.splitlines() if line.startswith("process_"))
        return {name: float(value) for name, value in lines}

    before = await samples()
    await connect.player(arena, "Alice")
    after = await samples()
    assert after["process_open_fds"] >= before["process_open_fds"] + 1, "its socket"
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert after["process_max_fds"] == limit > after["process_open_fds"]
    assert 10 * 2**20 < after["process_resident_memory_bytes"] < 4 * 2**30


async def test_metrics_time_every_garbage_collection_by_generation(arena: Server) -> None:
    full = 'plyarena_gc_pause_seconds_count{generation="2"}'

    def samples(body: bytes) -> dict[str, str]:
        return dict(line.rsplit(" ", 1) for line in body.decode().splitlines() if not line.startswith("#"))

    before = samples((await http_get(arena, "/metrics"))[2])
    gc.collect()
    gc.collect(0)
    after = samples((await http_get(arena, "/metrics"))[2])
    assert int(after[full]) == int(before[full]) + 1
    young = 'plyarena_gc_pause_seconds_count{generation="0"}'
    assert int(after[young]) >= int(before[young]) + 1
    assert float(after['plyarena_gc_pause_seconds_sum{generation="2"}']) > 0
    assert after['plyarena_gc_pause_seconds_bucket{generation="2",le="+Inf"}'] == after[full]


async def test_browser_origins_are_checked_and_scripts_without_one_are_welcome(
    start_server: StartServer, connect: Connect
) -> None:
    server = await start_server(allowed_origins=("https://play.example",))
    assert (await (await connect(server)).hello("Script"))["type"] == "welcome"
    assert (await (await connect(server, origin="https://play.example")).hello("Browser"))[
        "type"
    ] == "welcome"
    with pytest.raises(InvalidStatus) as refused:
        await connect(server, origin="https://evil.example")
    assert refused.value.response.status_code == 403

    default = await start_server()
    own_origin = f"http://127.0.0.1:{default.port}"
    assert (await (await connect(default, origin=own_origin)).hello("Own"))["type"] == "welcome"
    with pytest.raises(InvalidStatus):
        await connect(default, origin="https://evil.example")


async def test_tokens_appear_in_no_broadcast_api_response_or_log(
    arena: Server, connect: Connect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    alice = await connect.player(arena, "Alice")
    bob = await connect.player(arena, "Bob")
    spectator = await connect.player(arena, "Sam")
    await spectator.request("lobby.subscribe")
    match_id = (await open_match(alice, bob, "tictactoe"))["match_id"]
    await spectator.request("match.watch", match_id=match_id)
    await play_moves("tictactoe", (alice, bob), match_id, list(decisive_game("tictactoe")))
    bob_again = await connect.player(arena, token=bob.token)
    await bob_again.request("match.watch", match_id=match_id)
    await spectator.settle(0.2)

    tokens = [alice.token, bob.token, spectator.token]
    assert all(tokens)
    exposed = [
        json.dumps(message) for message in spectator.received[1:] + alice.received[1:] + bob.received[1:]
    ]
    exposed += [json.dumps(message) for message in bob_again.received[1:]]
    for path in ("/api/matches", f"/api/matches/{match_id}", f"/api/matches/{match_id}/export", "/metrics"):
        exposed.append((await http_get(arena, path))[2].decode())
    exposed += [record.getMessage() for record in caplog.records if record.name != "websockets.client"]
    for token in tokens:
        assert token is not None
        assert not [text for text in exposed if token in text]
    # Only the owner's own welcome carries the token.
    assert alice.received[0]["token"] == alice.token


def test_a_page_may_connect_to_the_other_instances_known_and_to_nothing_a_url_could_smuggle_in() -> None:
    policy = content_security_policy(
        [
            "wss://b.example:9443/ws",
            "ws://10.0.0.2:8765/ws",
            "wss://evil.example; script-src *",
            "https://x.example",
        ]
    )
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";"))
    assert directives["connect-src"] == "'self' ws://10.0.0.2:8765 wss://b.example:9443"
    assert directives["script-src"] == "'self'" and "evil" not in policy
    assert content_security_policy() == CONTENT_SECURITY_POLICY
