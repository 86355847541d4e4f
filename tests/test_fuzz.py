"""Bad input, fuzzed: a live server answers every malformed or out-of-place message with the error that
docs/protocol.md gives it, crashes no handler, changes nothing stored, and the real matches played
beside the fuzzing finish normally. Runs on SQLite and PostgreSQL.

The cases come from :mod:`support.fuzz`: hypothesis draws a few hundred (and shrinks a failure to a
small one), then a seeded sweep sends enough to cover every kind of case.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.client import ArenaClient, Message
from support.fixtures import Connect, StartServer
from support.fuzz import CASE_KINDS, Arena, FuzzCase, FuzzTally, answer_problem, fuzz_case
from support.fuzz_arena import FuzzedPlayer, ScriptedMatch, api_get, stored_rows
from support.fuzz_values import SCHEMAS, Choices, RandomChoices, request

from games import GAMES
from plyarena.cli import main
from server.app import Server
from server.errors import ErrorCode
from server.protocol import UndecodableRequest, decode_request
from server.storage.engine import create_engine

UNLIMITED = {"rate_per_s": 1e9, "rate_burst": 10**9}
"""The fuzzer sends as fast as answers come back; rate limits are tested in test_security.py."""
HYPOTHESIS_EXAMPLES = 250
SWEEP_CASES = 1500


class DrawnChoices:
    """:class:`~support.fuzz_values.Choices` drawn by hypothesis, so a failing case shrinks."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def integer(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))


def fuzz_cases(arena: Arena) -> st.SearchStrategy[FuzzCase]:
    @st.composite
    def build(draw: st.DrawFn) -> FuzzCase:
        choices: Choices = DrawnChoices(draw)
        return fuzz_case(choices, arena)

    return build()


async def test_bad_messages_get_their_errors_and_change_nothing_while_real_matches_play_on(
    start_server: StartServer, connect: Connect, arena_db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    server = await start_server(**UNLIMITED)
    scripted = []
    for game in GAMES:
        first, second = (
            await connect.player(server, f"{game} first"),
            await connect.player(server, f"{game} second"),
        )
        scripted.append(await ScriptedMatch.start(first, second, game))
    fuzzed = await FuzzedPlayer.open(
        server.ws_url,
        connect,
        own_games=("tictactoe", "checkers"),
        others=[match.match_id for match in scripted],
        watch=scripted[0].match_id,
        games=tuple(GAMES),
    )
    database = create_engine(arena_db_url)
    playing: list[asyncio.Task[Message]] = []
    try:
        before = await stored_rows(database, fuzzed.player_ids)
        playing += [asyncio.create_task(match.play(pace_s=0.05)) for match in scripted]
        tally = FuzzTally()
        loop = asyncio.get_running_loop()

        @settings(
            max_examples=HYPOTHESIS_EXAMPLES,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(fuzz_cases(fuzzed.arena))
        def each_case_is_refused_as_documented(case: FuzzCase) -> None:
            reply = asyncio.run_coroutine_threadsafe(fuzzed.send(case), loop).result(timeout=30)
            problem = answer_problem(case, reply)
            assert problem is None, problem
            tally.record(case, reply)

        await asyncio.to_thread(each_case_is_refused_as_documented)

        choices = RandomChoices(random.Random(20261122))
        for _ in range(SWEEP_CASES):
            case = fuzz_case(choices, fuzzed.arena)
            tally.record(case, await fuzzed.send(case))
        assert not tally.wrong, "\n".join(tally.wrong)
        assert not fuzzed.extra_answers, fuzzed.extra_answers
        assert set(tally.by_kind) == CASE_KINDS, f"kinds never sent: {CASE_KINDS - set(tally.by_kind)}"

        endings = await asyncio.gather(*playing)
        for match, ended in zip(scripted, endings, strict=True):
            _, record = await api_get(server.http_url, f"/api/matches/{match.match_id}")
            assert not (problems := match.problems(ended, record)), problems
        assert await stored_rows(database, fuzzed.player_ids) == before, "a refused message changed the store"
    finally:
        for task in playing:
            task.cancel()
        await database.dispose()
    await fuzzed.still_answers()
    assert server.metrics.errors_total["internal"] == 0
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR], caplog.text


@pytest.fixture
async def player(arena: Server, connect: Connect) -> AsyncIterator[ArenaClient]:
    client = await connect.player(arena, "Regression")
    yield client


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        pytest.param(b'{"type": "hello", "name": ' + b"[" * 1500 + b"]" * 1500 + b"}", "bad_json", id="deep"),
        pytest.param(b'{"type": "ok", "x": ' + b"[" * 1900 + b"]" * 1900 + b"}", "bad_json", id="deep-extra"),
    ],
)
@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
async def test_frames_that_once_crashed_the_handler_get_bad_json(
    player: ArenaClient, frame: bytes, code: str, binary: bool
) -> None:
    await player.websocket.send(frame, text=not binary)
    error = await player.expect(type_="error")
    assert error["code"] == ("binary_frame" if binary else code), error
    assert (await player.request("lobby.subscribe"))["type"] == "lobby.snapshot"


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(b'{"type": "match.watch", "match_id": "\xed\xa0\x80"}', id="surrogate-bytes"),
        pytest.param(b'{"type": "hello\xff"}', id="not-utf8-type"),
    ],
)
async def test_a_text_frame_that_is_not_utf8_fails_its_connection_with_1007_and_only_it(
    arena: Server, player: ArenaClient, connect: Connect, frame: bytes
) -> None:
    """RFC 6455 (8.1): an endpoint that finds a text frame is not UTF-8 must fail the connection.
    Close code 1007 (invalid data) says why; the same bytes in a binary frame get ``binary_frame``."""
    bystander = await connect.player(arena, "Bystander")
    await player.websocket.send(frame, text=True)
    await asyncio.wait_for(player.websocket.wait_closed(), 10)
    assert player.websocket.close_code == 1007, player.websocket.close_reason
    assert (await bystander.request("lobby.subscribe"))["type"] == "lobby.snapshot"
    again = await connect.player(arena, token=player.token)
    await again.websocket.send(frame, text=False)
    assert (await again.expect(type_="error"))["code"] == "binary_frame"


async def test_text_that_postgresql_cannot_hold_is_refused_not_a_crash(
    arena: Server, player: ArenaClient, connect: Connect
) -> None:
    """NUL in an id, or a search depth past 32 bits: the store never sees them (PostgreSQL would refuse)."""
    for kind in ("match.watch", "match.join", "resign"):
        error = await player.request(kind, match_id="m\x00x")
        assert (error["type"], error["code"]) == ("error", "not_found"), error
    opponent = await connect.player(arena, "Opponent")
    match_id = (await player.request("match.create", game="tictactoe", seat=0))["match_id"]
    await opponent.request("match.join", match_id=match_id)
    engine = {"depth": 2**40, "score": 1}
    error = await player.request("move", match_id=match_id, ply=0, move="a1", engine=engine)
    # On PostgreSQL this was `unavailable` (which bots retry forever); SQLite stored it.
    assert (error["type"], error["code"]) == ("error", "bad_field"), error
    assert (await api_get(arena.http_url, f"/api/matches/{match_id}"))[1]["moves"] == []
    moved = await player.request("move", match_id=match_id, ply=0, move="a1", engine={"depth": 2**31 - 1})
    assert moved["type"] == "moved", moved
    assert arena.metrics.errors_total["internal"] == 0


@pytest.mark.parametrize(
    ("query", "status"),
    [("player=a%00b", 200), ("before=a%00b", 200), ("limit=" + "9" * 5000, 400), ("limit=%D9%A3", 400)],
)
async def test_match_list_queries_that_once_failed_are_answered(
    arena: Server, query: str, status: int
) -> None:
    code, body = await api_get(arena.http_url, f"/api/matches?{query}")
    assert code == status, body
    if status == 200:
        assert body["matches"] == []
    else:
        assert body["error"]["code"] == "bad_field"


def test_the_fuzz_benchmark_runs_and_counts_by_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "fuzz", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "bad_json" in out and "not_a_player" in out and "wrong answers: 0" in out


def test_every_value_the_fuzzer_calls_wrong_is_refused_as_the_frame_is_read() -> None:
    """A ``wrong_value`` case expects ``bad_field`` whoever sends it, so its value must be refused by the
    decoder itself, before the request's context is checked. (The 100,000 messages of 2026-11-24 found a
    36-character name of control characters: the wire takes up to 128 and the server refuses it once
    cleaned, but from a player who had said hello the request was a second ``hello``, ``not_allowed``.)"""
    choices = RandomChoices(random.Random(11))
    for kind, fields in SCHEMAS.items():
        for name, spec in fields.items():
            for _ in range(300):
                message = request(choices, kind)
                message[name] = spec.wrong(choices)
                with pytest.raises(UndecodableRequest) as refused:
                    decode_request(json.dumps(message).encode(), max_bytes=10**7)  # (size aside)
                assert refused.value.code == ErrorCode.BAD_FIELD, (kind, name, message[name])
