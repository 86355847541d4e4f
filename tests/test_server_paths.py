"""A match's requests decided in callbacks (``MatchHost.act_soon``) and in the host's coroutine
(``MatchHost.act``) get the same answers and store the same rows.

Two servers, one answering each way, play the same scripts drawn by hypothesis, on the same fake clock:
moves legal and illegal, out of turn, stale or sent again; resignations, draws, aborts, rematches and
chat; requests sent in bursts without waiting for their answers; time passing until a flag falls. What
each player receives and what each store holds must be the same, ids aside.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.client import ArenaClient, Message
from support.play import open_match

from server.app import Server, running_server
from server.config import ServerConfig

GAME = "tictactoe"
"""Short games: a script reaches their ends, and the rematches after them."""
TIME_CONTROL = "1+2"
EXAMPLES = 60

WHO = st.sampled_from(["turn", "other"])
"""The player to act: the one whose turn it is, or the other."""
PICK = st.one_of(st.integers(0, 8), st.sampled_from(["illegal", "stale", "again"]))
"""Which move: the nth legal one (modulo their number), one that is not, or one of an earlier ply."""
SIMPLE = st.one_of(
    st.tuples(st.just("move"), WHO, PICK),
    st.tuples(
        st.sampled_from(
            [
                "resign",
                "draw.offer",
                "draw.accept",
                "draw.decline",
                "abort",
                "rematch.offer",
                "rematch.accept",
                "rematch.decline",
                "chat",
            ]
        ),
        WHO,
        st.none(),
    ),
)
ACTION = st.one_of(
    SIMPLE,
    st.tuples(st.just("burst"), WHO, st.lists(SIMPLE, min_size=2, max_size=4)),
    st.tuples(st.just("wait"), st.sampled_from([1.0, 20.0, 70.0]), st.none()),
)
SCRIPT = st.lists(ACTION, max_size=24)


class FakeClock:
    """The server's clock, moved by the script alone: both servers see the same times."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Side:
    """One server under test, and its clock."""

    server: Server
    clock: FakeClock


@dataclass
class Table:
    """The match two players play on one server, as the answers tell it."""

    match_id: str
    match_ids: list[str] = field(default_factory=list)
    turn: int = 0
    ply: int = 0
    legal: tuple[str, ...] = ()
    played: list[str] = field(default_factory=list)

    def note(self, message: Message) -> None:
        """Follow the match from a message received."""
        kind = message.get("type")
        if kind == "rematch.started" and message["match_id"] == self.match_id:
            self.match_id = message["new_match_id"]
            self.match_ids.append(self.match_id)
            self.turn, self.ply, self.legal, self.played = 0, 0, (), []
        elif message.get("match_id") != self.match_id:
            return
        elif kind in ("started", "match.state") and message.get("legal") is not None:
            self.turn = message["turn"] if message.get("turn") is not None else self.turn
            self.legal = tuple(message["legal"])
            self.played = list(message.get("moves", self.played))
            self.ply = len(self.played)
        elif kind == "moved":
            self.played.append(message["move"])
            self.ply = message["ply"] + 1
            self.turn = 1 - message["seat"]
            self.legal = tuple(message["legal"])

    def seat(self, who: str) -> int:
        return self.turn if who == "turn" else 1 - self.turn

    def request(self, kind: str, pick: object) -> dict[str, Any]:
        """The request a script's action stands for, now."""
        if kind == "chat":
            return {"type": "chat", "match_id": self.match_id, "text": f"said at ply {self.ply}"}
        if kind != "move":
            return {"type": kind, "match_id": self.match_id}
        if pick == "illegal":
            return {"type": "move", "match_id": self.match_id, "ply": self.ply, "move": "z9"}
        if pick == "again":  # (the last move sent again, as after a lost answer)
            ply = max(self.ply - 1, 0)
            move = self.played[ply] if ply < len(self.played) else "a1"
            return {"type": "move", "match_id": self.match_id, "ply": ply, "move": move}
        if pick == "stale":  # (a move chosen for another ply)
            ply = self.ply - 1 if self.ply else self.ply + 1
            move = self.legal[0] if self.legal else "a1"
            return {"type": "move", "match_id": self.match_id, "ply": ply, "move": move}
        assert isinstance(pick, int)
        move = self.legal[pick % len(self.legal)] if self.legal else "a1"
        return {"type": "move", "match_id": self.match_id, "ply": self.ply, "move": move}


async def play(side: Side, script: list[tuple[str, Any, Any]]) -> dict[str, Any]:
    """Play ``script`` on one server; what each player received and what the store holds, ids named by
    their order of appearance."""
    server = side.server
    async with (
        await ArenaClient.connect(server.ws_url) as ann,
        await ArenaClient.connect(server.ws_url) as bob,
    ):
        await ann.hello("Ann")
        await bob.hello("Bob")
        return await play_match(server, side.clock, (ann, bob), script)


async def play_match(
    server: Server,
    clock: FakeClock,
    players: tuple[ArenaClient, ArenaClient],
    script: list[tuple[str, Any, Any]],
) -> dict[str, Any]:
    """Open a match between ``players`` and play ``script`` in it, each action's requests sent at once
    and their answers awaited, then one round trip each to let every event arrive."""
    ids = itertools.count(10_000)  # (the clients number their own requests from 1)
    state = await open_match(*players, GAME, time_control=TIME_CONTROL)
    table = Table(state["match_id"], [state["match_id"]])
    table.note(state)
    for kind, who, detail in script:
        if kind == "wait":
            clock.now += who
            continue
        seat = table.seat(who)
        actions = detail if kind == "burst" else [(kind, who, detail)]
        sent = []
        for action, _, pick in actions:
            request_id = next(ids)
            sent.append(request_id)
            await players[seat].send({"id": request_id, **table.request(action, pick)})
        for request_id in sent:
            await players[seat].expect(id=request_id)
        for player in players:  # (a round trip each: every event sent before it has arrived)
            assert (await player.request("lobby.unsubscribe"))["type"] == "ok"
            for message in player.take_unread():
                table.note(message)
    stored = [await server.store.get_match(match_id) for match_id in table.match_ids]
    return named_ids(
        {
            "received": [player.received for player in players],
            "stored": [
                None
                if record is None
                else {
                    "status": record.status,
                    "winner": record.winner,
                    "reason": record.reason,
                    "seats": [(seat.seat, seat.player_id, seat.player_name) for seat in record.seats],
                    "moves": [(m.ply, m.seat, m.notation, m.think_ms, m.clocks_ms) for m in record.moves],
                    "rematch_id": record.rematch_id,
                }
                for record in stored
            ],
        }
    )


ID_KEYS = frozenset({"match_id", "new_match_id", "rematch_id", "log", "token", "player_id"})


def named_ids(found: dict[str, Any]) -> dict[str, Any]:
    """``found`` with every id (of a match, a log, a player, a token) named by its order of appearance,
    wherever it appears, as a field or within a text."""
    names: dict[str, str] = {}

    def collect(value: Any, key: str | None = None) -> None:
        if isinstance(value, dict):
            for inner, item in value.items():
                collect(item, inner)
        elif isinstance(value, list | tuple):
            for item in value:
                collect(item, key)
        elif isinstance(value, str) and (key in ID_KEYS or key == "id") and value not in names:
            names[value] = f"<id {len(names)}>"

    collect(found)
    pattern = re.compile("|".join(map(re.escape, sorted(names, key=len, reverse=True)))) if names else None

    def rename(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: rename(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [rename(item) for item in value]
        if isinstance(value, str) and pattern is not None:
            return pattern.sub(lambda hit: names[hit.group()], value)
        return value

    return rename(found)


@pytest.fixture
async def sides(tmp_path: Path) -> AsyncIterator[tuple[Side, Side]]:
    """Two servers on SQLite, one deciding in callbacks when it can, one never."""
    async with contextlib.AsyncExitStack() as stack:
        made = []
        for at_once in (True, False):
            clock = FakeClock()
            config = ServerConfig(
                port=0,
                db_url=f"sqlite+aiosqlite:///{tmp_path / f'at-once-{at_once}.sqlite3'}",
                instance_id="paths",  # (in every welcome: the same on both)
                rate_per_s=1e9,  # (the fake clock stands still between waits: no refills)
                rate_burst=10**9,
            )
            server = await stack.enter_async_context(running_server(config, now=clock, at_once=at_once))
            made.append(Side(server, clock))
        yield made[0], made[1]


async def test_callbacks_and_coroutines_answer_the_same_and_store_the_same(sides: tuple[Side, Side]) -> None:
    at_once, in_coroutines = sides
    loop = asyncio.get_running_loop()

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(SCRIPT)
    def the_same(script: list[tuple[str, Any, Any]]) -> None:
        async def both() -> tuple[dict[str, Any], dict[str, Any]]:
            return await play(at_once, script), await play(in_coroutines, script)

        first, second = asyncio.run_coroutine_threadsafe(both(), loop).result(timeout=60)
        assert first == second

    host = at_once.server.host
    with mock.patch.object(host, "_committed", wraps=host._committed) as committed:
        await asyncio.to_thread(the_same)
    assert committed.call_count > 0, "no request was decided in callbacks"
    assert in_coroutines.server.metrics.errors_total["internal"] == 0
    assert at_once.server.metrics.errors_total["internal"] == 0
