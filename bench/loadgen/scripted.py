"""Scripted players: two connections per match that play random legal moves from what the server sends.

They keep no rules of their own: ``match.state``, ``started`` and ``moved``
carry the position's legal moves (``legal``) and say whose turn it is, so a
player picks one of those at random when it is its turn and its match's
:class:`~bench.loadgen.recording.Beat` says the move is due. As a match starts,
both players offer a rematch (the second offer accepts it), so the rematch
starts the moment the game ends and the pair plays on in a fresh match with no
pause between games; the server takes both connections on to it, and off the
old one. (Should a game end before that agreement, both offer once it is over.)
A refused move is counted and its player asks for the match's full state to get
back in step. Before the measured play each pair plays an opening of random
length at the flat-out pace, so that the matches are spread over their games'
plies rather than in step (:mod:`bench.loadgen.dephasing`).

Sending never waits (``broadcast`` to one connection), and each message goes
from the protocol straight to its player (:mod:`bench.loadgen.direct`): the
least a client can cost, so that the load generator's CPU goes into the
connections, not the script.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Any

import msgspec
from websockets.asyncio.connection import broadcast

from bench.loadgen.direct import DirectClient
from bench.loadgen.recording import Pacing, Recorder

log = logging.getLogger(__name__)

OVER = ("finished", "aborted")
OPENING_MOVE_INTERVAL_S = 1 / 30
"""Between a pair's opening moves (:mod:`bench.loadgen.dephasing`): the flat-out window's pace, each player
within the server's default allowance of 20 requests a second a connection (a checkers opening may be
hundreds of plies long)."""
RATE_LIMITED_WAIT_S = 1.0
"""How long a player refused as over the server's rate waits before it asks for its match's state."""


class Incoming(msgspec.Struct):
    """The fields of a server message that scripted players read; msgspec skips the others."""

    type: str
    id: int | str | None = None
    match_id: str | None = None
    ply: int | None = None
    seat: int | None = None
    turn: int | None = None
    you: int | None = None
    status: str | None = None
    moves: list[str] | None = None
    legal: list[str] | None = None
    code: str | None = None
    message: str | None = None
    rematch_offer: int | None = None
    rematch_agreed: bool = False


_decode = msgspec.json.Decoder(Incoming).decode
_encode = msgspec.json.Encoder().encode


class MatchStartFailed(Exception):
    """The server refused to open or join a match for a pair."""


class ScriptedPlayer:
    """One connection of a :class:`ScriptedPair`: what it knows of its match, and its move in flight."""

    __slots__ = (
        "legal",
        "live",
        "match_id",
        "next_id",
        "pair",
        "pending",
        "ply",
        "rematch_agreed",
        "rematch_asked",
        "sent_at",
        "turn",
        "websocket",
        "you",
    )

    def __init__(self, websocket: DirectClient, pair: ScriptedPair) -> None:
        self.websocket = websocket
        self.pair = pair
        self.match_id: str | None = None
        self.you: int | None = None
        self.ply = 0
        self.turn: int | None = None
        self.legal: list[str] = []
        self.live = False
        self.rematch_agreed = False
        self.rematch_asked: str | None = None
        """The match whose rematch this player has asked for during the game."""
        self.pending: int | None = None
        """The id of the move sent and not yet answered."""
        self.sent_at = 0.0
        self.next_id = 1

    def send(self, request: dict[str, Any]) -> int:
        """Send ``request`` with a fresh id, without waiting; return the id."""
        request_id = request["id"] = self.next_id
        self.next_id += 1
        broadcast([self.websocket], _encode(request), text=True)
        return request_id

    def on_frame(self, frame: bytes) -> None:
        """Handle one message from the server, as it comes."""
        try:
            self.on_message(_decode(frame))
        except Exception:
            log.exception("scripted player: cannot handle %r", frame[:200])

    def on_message(self, message: Incoming) -> None:
        kind = message.type
        if kind == "moved":
            if message.match_id != self.match_id or message.ply is None or message.seat is None:
                return
            if self.pending is not None and message.id == self.pending:
                self.pending = None
                self.pair.recorder.round_trip(self.sent_at, asyncio.get_running_loop().time())
            self.ply = message.ply + 1
            self.legal = message.legal or []
            self.turn = 1 - message.seat
            self.consider_moving()
        elif kind == "match.state":
            self.adopt(message)
        elif kind == "started":
            if message.match_id == self.match_id:
                self.live, self.ply, self.turn = True, 0, message.turn
                self.legal = message.legal or []
                self.pair.player_live()
                self.offer_rematch()
                self.consider_moving()
        elif kind == "rematch.agreed":
            if message.match_id == self.match_id:
                self.rematch_agreed = True
        elif kind == "ended":
            if message.match_id == self.match_id:
                self.live, self.legal = False, []
                if self is self.pair.host:
                    self.pair.recorder.game_ended(asyncio.get_running_loop().time())
            agreed, self.rematch_agreed = self.rematch_agreed, False
            if not agreed:  # (agreed, its rematch.started comes next)
                self.send({"type": "rematch.offer", "match_id": message.match_id})
        elif kind == "error":
            self.on_error(message)

    def adopt(self, state: Incoming) -> None:
        """Start over from a full state: a reply to create, join or watch, or a rematch's first message."""
        if state.you is None or state.match_id is None:
            return
        self.match_id, self.you, self.turn = state.match_id, state.you, state.turn
        self.ply = len(state.moves or ())
        self.legal = state.legal or []
        self.live = state.status == "live"
        self.rematch_agreed = state.rematch_agreed
        if self.pending is not None and state.id == self.pending:
            self.pending = None  # our move was a resend of one already played
        if state.status == "open":
            self.pair.opened(state.match_id)
        elif self.live:
            self.pair.player_live()
            if state.rematch_offer == self.you:
                self.rematch_asked = state.match_id
            self.offer_rematch()
            self.consider_moving()
        elif state.status in OVER:
            self.send({"type": "rematch.offer", "match_id": state.match_id})

    def offer_rematch(self) -> None:
        """Ask for the rematch during the game, so that it starts as the game ends."""
        if not self.rematch_agreed and self.rematch_asked != self.match_id:
            self.rematch_asked = self.match_id
            self.send({"type": "rematch.offer", "match_id": self.match_id})

    def on_error(self, error: Incoming) -> None:
        loop = asyncio.get_running_loop()
        self.pair.recorder.error(error.code or "?", loop.time())
        if error.code == "rate_limited" and self.match_id is not None:
            # Whatever was refused (a move, an offer, a request to get back in step), the state a while
            # later says where the match is; asked at once, it would be refused as well.
            self.pending = None
            watch = {"type": "match.watch", "match_id": self.match_id}
            loop.call_later(RATE_LIMITED_WAIT_S, self.send, watch)
        elif self.pending is not None and error.id == self.pending:
            self.pending = None
            if self.match_id is not None:
                self.send({"type": "match.watch", "match_id": self.match_id})  # get back in step
        elif not self.pair.live.done():
            self.pair.failed(f"{error.code}: {error.message}")

    @property
    def can_move(self) -> bool:
        return self.live and self.turn == self.you and bool(self.legal) and self.pending is None

    def consider_moving(self) -> None:
        if self.can_move:
            self.pair.move_when_due()

    def move(self) -> None:
        """Send a random legal move."""
        choice = self.pair.rng.choice(self.legal)
        self.sent_at = asyncio.get_running_loop().time()
        self.pending = self.send({"type": "move", "match_id": self.match_id, "ply": self.ply, "move": choice})


class ScriptedPair:
    """Two scripted players on two connections, playing one match after another against each other."""

    def __init__(
        self,
        host: DirectClient,
        guest: DirectClient,
        *,
        game: str,
        time_control: str,
        pacing: Pacing,
        recorder: Recorder,
        rng: random.Random,
        opening_plies: int = 0,
    ) -> None:
        self.game = game
        self.time_control = time_control
        self.pacing = pacing
        self.recorder = recorder
        self.rng = rng
        self.beat = pacing.new_beat()
        self.scheduled = False
        """A move waits for the beat; whoever's turn it is then plays it."""
        self.opening_plies = opening_plies
        """Moves still to play at the opening's pace before the pair keeps the beat (see
        :mod:`bench.loadgen.dephasing`)."""
        self.host = ScriptedPlayer(host, self)
        self.guest = ScriptedPlayer(guest, self)
        loop = asyncio.get_running_loop()
        self._opened: asyncio.Future[str] = loop.create_future()
        self.live: asyncio.Future[None] = loop.create_future()
        self._opening_played: asyncio.Future[None] = loop.create_future()
        host.on_message = self.host.on_frame
        guest.on_message = self.guest.on_frame

    async def start(self) -> None:
        """Open a public match and join it; return once both players see it live and have played the
        opening."""
        self.host.send(
            {"type": "match.create", "game": self.game, "time_control": self.time_control, "seat": 0}
        )
        match_id = await asyncio.shield(self._opened)
        self.guest.send({"type": "match.join", "match_id": match_id})
        await asyncio.shield(self.live)
        await asyncio.shield(self._opening_played)

    def move_when_due(self) -> None:
        if self.scheduled:
            return
        self.scheduled = True
        if self.opening_plies > 0:
            asyncio.get_running_loop().call_later(OPENING_MOVE_INTERVAL_S, self._opening_move)
            return
        if not self._opening_played.done():
            self._opening_played.set_result(None)
        self.pacing.request(self.beat, self._due)

    def _due(self) -> None:
        """The beat: the player to move plays (none may be ready; its next message asks again)."""
        self.scheduled = False
        for player in (self.host, self.guest):
            if player.can_move:
                player.move()
                return

    def _opening_move(self) -> None:
        """A move of the opening (none may be ready; its next message asks again)."""
        self.scheduled = False
        for player in (self.host, self.guest):
            if player.can_move:
                self.opening_plies -= 1
                player.move()
                return

    def opened(self, match_id: str) -> None:
        if not self._opened.done():
            self._opened.set_result(match_id)

    def player_live(self) -> None:
        if self.host.live and self.guest.live and not self.live.done():
            self.live.set_result(None)

    def failed(self, reason: str) -> None:
        for future in (self._opened, self.live, self._opening_played):
            if not future.done():
                future.set_exception(MatchStartFailed(reason))
                future.exception()  # retrieved: the other future carries the same news to start()

    def stop(self) -> None:
        """Stop handling the players' messages."""
        for player in (self.host, self.guest):
            player.websocket.on_message = None
