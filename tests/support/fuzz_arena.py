"""A live server under fuzzing: the fuzzed connections, real matches played beside them, what is stored.

:class:`FuzzedPlayer` opens two connections the fuzzer speaks through: a
*player* (welcomed, with a live match of its own per game where it is to move,
and watching one match of others as a spectator) and a *stranger* that never
says hello. :meth:`FuzzedPlayer.send` sends one :class:`~support.fuzz.FuzzCase`
and returns the one answer. :class:`ScriptedMatch` plays a real match beside
the fuzzing, two clients making the moves of a rules-decided game, and
:func:`stored_rows` reads what the database holds for a set of players, to show
that nothing the fuzzer sent changed it. Used by tests/test_fuzz.py and by
``plyarena bench fuzz``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncEngine
from websockets.exceptions import ConnectionClosed

from games import get_game
from support.client import ArenaClient, Message
from support.fuzz import PLAYER, Arena, FuzzCase, OwnMatch
from support.play import decisive_game

OpenClient = Callable[[str], Awaitable[ArenaClient]]

REPLY_TYPES = frozenset({"error", "welcome", "ok", "lobby.snapshot", "match.state", "match.catchup"})
"""Messages that only ever answer a request (events answer one only when they carry its ``id``)."""


def is_answer(message: Message) -> bool:
    return "id" in message or message.get("type") in REPLY_TYPES


@dataclass
class FuzzedPlayer:
    """The connections a fuzzer speaks through, and what it knows of the arena."""

    player: ArenaClient
    partner: ArenaClient
    """The opponent in the player's own matches; it never moves again, so they stay as they are."""
    stranger: ArenaClient
    arena: Arena
    extra_answers: list[str] = field(default_factory=list)
    """Answers that arrived when none was due (a request must get exactly one)."""

    @classmethod
    async def open(
        cls,
        url: str,
        open_client: OpenClient,
        *,
        own_games: Sequence[str],
        others: Sequence[str],
        watch: str | None,
        games: Sequence[str],
        label: str = "Fuzz",
    ) -> FuzzedPlayer:
        """Sign the player and its partner in, start the player's own matches, and watch ``watch``."""
        player, partner, stranger = [await open_client(url) for _ in range(3)]
        await player.hello(f"{label} player")
        await partner.hello(f"{label} partner")
        own = tuple([await _own_match(player, partner, game) for game in own_games])
        if watch is not None:
            state = await player.request("match.watch", match_id=watch)
            assert state["type"] in ("match.state", "match.catchup"), state
        assert player.token is not None and partner.token is not None
        refused_tokens = (
            hashlib.sha256(player.token.encode()).hexdigest(),  # what the database keeps is no key
            player.token[:-1] + ("A" if player.token[-1] != "A" else "B"),
            partner.token.upper() if partner.token.upper() != partner.token else partner.token.lower(),
            partner.token + " ",
        )
        arena = Arena(own, tuple(others), frozenset({watch} if watch else ()), refused_tokens, tuple(games))
        return cls(player, partner, stranger, arena)

    @property
    def player_ids(self) -> tuple[str, ...]:
        return tuple(client.player_id for client in (self.player, self.partner) if client.player_id)

    async def send(self, case: FuzzCase, timeout: float = 10.0) -> Message | None:
        """Send ``case`` from its connection; its one answer (``None`` if none came)."""
        client = self.player if case.role == PLAYER else self.stranger
        extra = [message for message in client.take_unread() if is_answer(message)]
        self.extra_answers += [f"an answer nobody asked for: {message}" for message in extra]
        try:
            await client.websocket.send(case.frame, text=not case.binary)
            return await client.expect(where=is_answer, timeout=timeout)
        except (AssertionError, ConnectionError, ConnectionClosed):
            return None  # no answer: the handler crashed, or hangs

    async def still_answers(self) -> None:
        """Both connections are open and served: the fuzzing crashed no handler."""
        snapshot = await self.player.request("lobby.subscribe")
        assert snapshot["type"] == "lobby.snapshot", snapshot
        welcome = await self.stranger.hello("Stranger at last")
        assert welcome["type"] == "welcome", welcome


async def _own_match(player: ArenaClient, partner: ArenaClient, game: str) -> OwnMatch:
    """A match of ``game`` where the partner (seat 0) and the player have moved and the partner again:
    the player (seat 1) is to move, and it is too late to abort."""
    created = await partner.request("match.create", game=game, seat=0, visibility="private")
    match_id = created["match_id"]
    joined = await player.request("match.join", match_id=match_id)
    assert joined["type"] == "match.state" and joined["status"] == "live", joined
    position, moves = get_game(game).start(), []
    for mover in (partner, player, partner):
        move = position.format_move(position.legal_moves()[0])
        reply = await mover.request("move", match_id=match_id, ply=len(moves), move=move)
        assert reply["type"] == "moved", reply
        moves.append(reply["move"])
        position = position.play(position.parse_move(move))
    return OwnMatch(match_id, game, tuple(moves), seat=1)


@dataclass
class ScriptedMatch:
    """A real match beside the fuzzing: two clients play the moves of a game the rules decide."""

    game: str
    match_id: str
    seats: tuple[ArenaClient, ArenaClient]
    moves: tuple[str, ...]

    @classmethod
    async def start(cls, first: ArenaClient, second: ArenaClient, game: str) -> ScriptedMatch:
        state = await first.request("match.create", game=game, seat=0, time_control="10+5")
        joined = await second.request("match.join", match_id=state["match_id"])
        assert joined["type"] == "match.state" and joined["status"] == "live", joined
        return cls(game, state["match_id"], (first, second), decisive_game(game))

    async def play(self, pace_s: float) -> Message:
        """Play every move, ``pace_s`` apart, each answered ``moved``; the ``ended`` event."""
        for ply, move in enumerate(self.moves):
            await asyncio.sleep(pace_s)
            reply = await self.seats[ply % 2].request("move", match_id=self.match_id, ply=ply, move=move)
            assert reply["type"] == "moved", f"{self.game} match {self.match_id}, ply {ply}: {reply}"
        return await self.seats[0].expect(type_="ended", match_id=self.match_id)

    def problems(self, ended: Message, record: dict[str, Any]) -> list[str]:
        """How the match's end and its stored record differ from a normal finish (empty: none)."""
        outcome = get_game(self.game).replay(self.moves).outcome()
        assert outcome is not None
        where = f"{self.game} match {self.match_id}"
        problems = []
        expected_end = ("finished", outcome.winner, outcome.reason)
        if (ended["status"], ended["winner"], ended["reason"]) != expected_end:
            problems.append(f"{where} ended {ended}, not as the rules say ({outcome})")
        if [move["move"] for move in record["moves"]] != list(self.moves):
            problems.append(f"{where} stored {[m['move'] for m in record['moves']]}, not {list(self.moves)}")
        if (record["status"], record["winner"]) != ("finished", outcome.winner):
            problems.append(f"{where} is stored as {record['status']} won by {record['winner']}")
        return problems


async def api_get(http_url: str, path: str) -> tuple[int, Any]:
    """``GET path`` from the server's JSON API: the status and the JSON body, errors included."""

    def get() -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(f"{http_url}{path}", timeout=10) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as error:
            return error.code, json.load(error)

    return await asyncio.to_thread(get)


async def stored_rows(database: AsyncEngine, player_ids: Sequence[str]) -> dict[str, Any]:
    """Everything stored about ``player_ids``: their rows, their matches with seats and moves, and how
    many players there are (a refused ``hello`` must not create one)."""
    ids = bindparam("ids", expanding=True)
    matches = "SELECT match_id FROM seats WHERE player_id IN :ids"
    queries = {
        "players": "SELECT * FROM players WHERE id IN :ids ORDER BY id",
        "matches": f"SELECT * FROM matches WHERE id IN ({matches}) ORDER BY id",
        "seats": f"SELECT * FROM seats WHERE match_id IN ({matches}) ORDER BY match_id, seat",
        "moves": f"SELECT * FROM moves WHERE match_id IN ({matches}) ORDER BY match_id, ply",
    }
    async with database.connect() as connection:
        rows: dict[str, Any] = {}
        for name, sql in queries.items():
            result = await connection.execute(text(sql).bindparams(ids), {"ids": list(player_ids)})
            rows[name] = [tuple(row) for row in result]
        rows["player count"] = await connection.scalar(text("SELECT count(*) FROM players"))
    return rows
