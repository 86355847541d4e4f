"""A scripted person who follows their match from instance to instance, as the browser client does.

It plays random legal moves at a pace, and when its connection is lost or its server answers
``hosted_elsewhere``, it finds the match's host among the instances it knows (asking each with its token
and ``match.watch``; the answer is the match's state, or where it is hosted) and plays on there. It
records every move it knows the server acknowledged (its own moves' replies, the moves it saw played,
the moves of each state), so that a run can check that every one of them was kept.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any

import msgspec
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from games import get_game

log = logging.getLogger(__name__)

LOST = (OSError, ConnectionClosed, InvalidHandshake, TimeoutError)
"""What ends a connection to an instance (killed, or stopped)."""
REPLY_TIMEOUT_S = 5.0
RETRY_S = 0.2
"""The wait before asking the next instance, and before sending again a move refused ``unavailable``."""
OVER = ("finished", "aborted")
CONNECT_OPTIONS: dict[str, Any] = {"open_timeout": REPLY_TIMEOUT_S, "close_timeout": 0.5, "proxy": None}
"""A dead peer's closing handshake is not waited for long."""

_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode


class Moved(Exception):
    """The server hosts the match no more: ``url`` is where it went, if it said."""

    def __init__(self, url: str | None) -> None:
        super().__init__(f"hosted at {url}")
        self.url = url


@dataclass(slots=True)
class Followed:
    """What a run reads of a person: the moves acknowledged, where and when it played."""

    acknowledged: dict[int, str] = field(default_factory=dict)
    """Every move the person knows the server kept, by ply."""
    hosts: list[str] = field(default_factory=list)
    """The URLs it followed its match at, in order."""
    lost_at: float | None = None
    """``time.monotonic()`` when its first connection was lost."""
    back_at: float | None = None
    """When it next had its match's state from a host, after that."""
    status: str = "open"


class FollowingPerson:
    """One person in one match; see the module docstring. ``urls`` are the instances it may ask."""

    def __init__(self, name: str, game: str, urls: list[str], home: str, *, pace_s: float, seed: int) -> None:
        self.name = name
        self.game = get_game(game)
        self.urls = urls
        self.url = home
        self.pace_s = pace_s
        self.rng = random.Random(seed)
        self.token: str | None = None
        self.match_id: str | None = None
        self.seat: int | None = None
        self.moves: list[str] = []
        self.record = Followed()
        self.moves_allowed: int | None = None
        """How many moves it may play before it waits for :attr:`go` (``None``: no limit)."""
        self.go = asyncio.Event()
        self.holding = asyncio.Event()
        """Set while it waits for :attr:`go` with its allowed moves played."""
        self._socket: ClientConnection | None = None
        self._ids = itertools.count(1)

    # ----------------------------------------------------------------- the first connection

    async def start(self, **create: Any) -> str:
        """Connect at home, say hello, and open a match (``match.create``'s fields); its id."""
        reply = await self._request_at_home("match.create", **create)
        self.match_id = str(reply["match_id"])
        return self.match_id

    async def join(self, match_id: str) -> None:
        """Connect at home, say hello, and take the free seat of ``match_id``."""
        self.match_id = match_id
        await self._request_at_home("match.join", match_id=match_id)

    async def _request_at_home(self, kind: str, **fields: Any) -> dict[str, Any]:
        self._socket = await connect(self.url, **CONNECT_OPTIONS)
        welcome = await self._request("hello", name=self.name)
        if welcome.get("type") != "welcome":
            raise RuntimeError(f"{self.name}: hello refused at {self.url}: {welcome}")
        self.token = str(welcome["token"])
        reply = await self._request(kind, **fields)
        if reply.get("type") != "match.state":
            raise RuntimeError(f"{self.name}: {kind} refused: {reply}")
        self._state(reply)
        return reply

    # ----------------------------------------------------------------- playing, wherever the match is

    async def play(self) -> Followed:
        """Play the match to its end, following it to each new host; what it saw."""
        asked = 0
        while self.record.status not in OVER:
            try:
                if self._socket is None:
                    await self._resume_at(self.url)
                await self._play_here()
            except Moved as moved:
                await self._drop()
                if moved.url is not None and moved.url != self.url:
                    self.url = moved.url
                else:
                    asked += 1
                    self.url = self.urls[asked % len(self.urls)]
                    await asyncio.sleep(RETRY_S)
            except LOST:
                await self._drop()
                if self.record.lost_at is None:
                    self.record.lost_at = time.monotonic()
                asked += 1
                self.url = self.urls[asked % len(self.urls)]
                await asyncio.sleep(RETRY_S)
        await self._drop()
        return self.record

    async def _resume_at(self, url: str) -> None:
        """Connect to ``url`` with our token and ask for the match (:class:`Moved` if it is not there)."""
        self._socket = await connect(url, **CONNECT_OPTIONS)
        welcome = await self._request("hello", token=self.token)
        if welcome.get("type") != "welcome":
            raise RuntimeError(f"{self.name}: hello refused at {url}: {welcome}")
        state = await self._request("match.watch", match_id=self.match_id)
        self._check(state)
        self._state(state)
        if self.record.lost_at is not None and self.record.back_at is None:
            self.record.back_at = time.monotonic()

    async def _play_here(self) -> None:
        """Move when it is our turn (after the pace), read what comes, until the game ends."""
        while self.record.status not in OVER:
            position = self.game.replay(self.moves)
            if self.record.status == "live" and position.turn == self.seat and position.legal_moves():
                await self._move(position)
            else:
                await self._read_one()

    async def _move(self, position: Any) -> None:
        if self.moves_allowed is not None and self.moves_allowed <= 0:
            self.holding.set()
            await self.go.wait()
            self.moves_allowed = None
        await asyncio.sleep(self.pace_s * self.rng.uniform(0.5, 1.5))
        move = position.format_move(self.rng.choice(position.legal_moves()))
        ply = len(self.moves)
        reply = await self._request("move", match_id=self.match_id, ply=ply, move=move)
        if reply.get("type") == "moved":
            if self.moves_allowed is not None:
                self.moves_allowed -= 1
            self._moved(reply)
        elif reply.get("code") in ("unavailable", "rate_limited"):
            await asyncio.sleep(RETRY_S)  # (an owner cut off from its database, or one fenced off)
        elif reply.get("code") == "hosted_elsewhere":
            raise Moved(reply.get("url"))
        else:  # out of step (a move it had not seen): the state puts it right
            state = await self._request("match.watch", match_id=self.match_id)
            self._check(state)
            self._state(state)

    async def _read_one(self) -> None:
        assert self._socket is not None
        self._event(_decode(await self._socket.recv()))

    # ----------------------------------------------------------------- messages

    async def _request(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Send a request and read until its reply, handling the events that come meanwhile."""
        assert self._socket is not None
        request_id = next(self._ids)
        await self._socket.send(_encode({"type": kind, "id": request_id, **fields}).decode())
        async with asyncio.timeout(REPLY_TIMEOUT_S):
            while True:
                message = _decode(await self._socket.recv())
                if message.get("id") == request_id:
                    return dict(message)
                self._event(message)

    def _event(self, message: dict[str, Any]) -> None:
        if message.get("match_id") != self.match_id:
            return
        kind = message.get("type")
        if kind == "moved":
            self._moved(message)
        elif kind == "started":
            self.record.status = "live"
        elif kind == "ended":
            self.record.status = str(message["status"])
        elif kind == "match.state":
            self._state(message)

    def _moved(self, message: dict[str, Any]) -> None:
        ply = int(message["ply"])
        self.record.acknowledged[ply] = str(message["move"])
        if ply == len(self.moves):
            self.moves.append(str(message["move"]))

    def _state(self, state: dict[str, Any]) -> None:
        self.moves = [str(move) for move in state["moves"]]
        self.record.acknowledged.update(enumerate(self.moves))
        self.record.status = str(state["status"])
        if state.get("you") is not None:
            self.seat = int(state["you"])
        if not self.record.hosts or self.record.hosts[-1] != self.url:
            self.record.hosts.append(self.url)

    @staticmethod
    def _check(reply: dict[str, Any]) -> None:
        if reply.get("type") == "error":
            raise Moved(reply.get("url") if reply.get("code") == "hosted_elsewhere" else None)

    async def _drop(self) -> None:
        """Let the connection go (a dead peer's close handshake is not waited for)."""
        socket, self._socket = self._socket, None
        if socket is not None:
            await socket.close()

    async def close(self) -> None:
        await self._drop()
