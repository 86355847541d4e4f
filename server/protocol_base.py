"""The bases and parts that protocol v1's messages are built of: the request and server-message bases,
limits, checked field types, and the small structs several messages share (a player, a bot request, a
match's result, a lobby entry).

:mod:`server.protocol` holds the messages themselves and imports these (the rest of the server finds them
there); a group of messages in a module of its own (server/pool_protocol.py, server/account_messages.py)
builds on these without importing it, so that the unions of every message in server/protocol.py may list
its messages.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from server.decoding import MAX_ID_LENGTH, RequestId

MAX_NAME_LENGTH = 32
MAX_CHAT_LENGTH = 200
MAX_MOVE_LENGTH = 32
MAX_PV_LENGTH = 64
MAX_TOKEN_LENGTH = 128
MAX_BOT_STATUS_LENGTH = 200

MatchId = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_ID_LENGTH)]
RAW_TEXT_ALLOWANCE = 4
"""Names and chat are limited after they are normalised and stripped (server/text.py); the wire takes
up to this many times more, for decomposed accents and surrounding spaces."""
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=RAW_TEXT_ALLOWANCE * MAX_NAME_LENGTH)]
Token = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TOKEN_LENGTH)]
MAX_FLEET_KEY_LENGTH = 256
FleetKey = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_FLEET_KEY_LENGTH)]
MoveText = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_MOVE_LENGTH)]
PV_MOVE_PATTERN = r"\A[A-Za-z0-9][A-Za-z0-9+#=*-]*\Z"
"""What a move of a principal variation may be: ASCII letters and digits and the marks that move notations
use (``11-15``, ``22x15x8``, ``pass``, and for games to come ``O-O``, ``e8=Q+``, ``P*5e``). A pv is a line
of future moves, so no game can check it against a position; this keeps it notation and not a second chat
(no spaces, dots or slashes, so no sentences or addresses; nothing invisible, no markup). ``\\Z``, not
``$``, which would let a line break through before the end."""
PvMove = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_MOVE_LENGTH, pattern=PV_MOVE_PATTERN)]
ChatText = Annotated[str, msgspec.Meta(min_length=1, max_length=RAW_TEXT_ALLOWANCE * MAX_CHAT_LENGTH)]
Count = Annotated[int, msgspec.Meta(ge=0, le=2**53)]
Depth = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1)]
"""A search depth: it is stored in a 32-bit column, so a larger one could not be (PostgreSQL refuses it)."""
Score = Annotated[int, msgspec.Meta(ge=-(10**9), le=10**9)]
SeatNumber = Annotated[int, msgspec.Meta(ge=0, le=1)]
EngineSource = Literal["book", "solved", "searched"]
"""Where a bot's move came from: its opening book, an exact solver, or a depth-limited search."""
BotStatusState = Literal["queued", "unavailable", "coming"]
"""How a bot request stands: waiting its turn, not to be served, or about to be seated."""


# --------------------------------------------------------------------------- shared parts


class PlayerInfo(msgspec.Struct, frozen=True):
    """A player as others see them: never their token."""

    id: str
    name: str
    bot: bool


class BotRequest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """'I want a bot of this level (and style)': a mark on the lobby entry that bot fleets watch for."""

    level: Annotated[int, msgspec.Meta(ge=1, le=99)]
    style: Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_-]*\Z", max_length=MAX_NAME_LENGTH)] | None = (
        None
    )
    """A search style a fleet offers (``alphabeta``, ``expectimax``): an identifier, not free text."""


class BotStatus(msgspec.Struct, frozen=True):
    """The latest note on a bot request (a full fleet, say), so nobody waits in silence.

    Advisory: kept in memory while the match is open, never stored, cleared once the match starts.
    """

    state: BotStatusState
    reason: str
    by: str
    """The name of the player who left the note (a fleet, usually)."""


class EngineInfo(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """What a bot's search said about its move: stored with the move and shown to everyone."""

    score: Score | None = None
    depth: Depth | None = None
    nodes: Count | None = None
    pv: Annotated[list[PvMove], msgspec.Meta(max_length=MAX_PV_LENGTH)] = []
    time_ms: Count | None = None
    source: EngineSource | None = None
    """Absent from older bots: the move's source is then unknown."""


class MatchResult(msgspec.Struct, frozen=True):
    status: str
    """``finished`` or ``aborted``."""
    winner: SeatNumber | None
    """The winning seat; ``null`` for a draw or an abort."""
    reason: str


class LobbyEntry(msgspec.Struct, frozen=True):
    """One public match in the lobby, also published retained on the bus."""

    match_id: str
    game: str
    status: str
    """``open`` (waiting for a player) or ``live``."""
    time_control: str
    seats: list[PlayerInfo | None]
    bot: BotRequest | None
    host: str
    """The server instance that hosts the match."""
    url: str
    """The WebSocket URL of that instance."""
    created_at: str
    rated: bool = False
    bot_status: BotStatus | None = None
    """The latest note on the ``bot`` request of an open match, ``null`` when there is none."""


# --------------------------------------------------------------------------- bases


class Request(
    msgspec.Struct, tag_field="type", forbid_unknown_fields=True, kw_only=True, frozen=True, gc=False
):
    """Base of every request. Untracked by the garbage collector, as is every message here: decoded
    from JSON or built from values, a message can never close a reference cycle (see ``Match``)."""

    id: RequestId = None


class ServerMessage(
    msgspec.Struct, tag_field="type", kw_only=True, frozen=True, omit_defaults=True, gc=False
):
    """Base of every server message. ``id`` echoes the request a message answers and is left out otherwise.
    Untracked by the garbage collector, as every request is."""

    id: RequestId = None
