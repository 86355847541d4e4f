"""Protocol v1: every message on the wire, as msgspec Structs.

Messages are JSON objects in WebSocket text frames, told apart by their
``type``. A client's request may carry an ``id`` (a string or an integer) that
the reply echoes, so a client can match replies to requests. Everything a
client sends is a :data:`Request`; everything the server sends is a
:data:`ServerMessage`. docs/protocol.md describes them for people.

Decoding is two-step so an error can always echo the request's ``id``: a
lenient envelope (server/decoding.py) reads ``type`` and ``id``, then the struct of that type reads
the whole frame strictly (unknown fields refused, sizes capped).
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

import msgspec

from server.account_messages import AccountClaimed, LoggedOut, Logout, Password, Register
from server.decoding import (
    MAX_ID_LENGTH,
    UNREADABLE,
    RequestId,
    UndecodableRequest,
    frame_refusal,
    read_envelope,
    too_deep,
)
from server.decoding import MAX_NESTING as MAX_NESTING
from server.decoding import peek_request_id as peek_request_id
from server.errors import ErrorCode
from server.pool_protocol import AcceptPoolBot, JoinPool, LeavePool, Paired, PoolLeft, PoolWaiting
from server.protocol_base import (
    MAX_BOT_STATUS_LENGTH,
    MAX_NAME_LENGTH,
    BotRequest,
    BotStatus,
    BotStatusState,
    ChatText,
    Count,
    EngineInfo,
    FleetKey,
    LobbyEntry,
    MatchId,
    MatchResult,
    MoveText,
    Name,
    PlayerInfo,
    Request,
    SeatNumber,
    ServerMessage,
    Token,
)
from server.protocol_base import MAX_MOVE_LENGTH as MAX_MOVE_LENGTH
from server.protocol_base import PV_MOVE_PATTERN as PV_MOVE_PATTERN

PROTOCOL_VERSION = 1


class MatchOptions(msgspec.Struct, frozen=True):
    time_control: str
    """``"M+S"`` (minutes + seconds of increment), ``"M:SS+S"``, or ``"untimed"``."""
    visibility: Literal["public", "private"]
    bot: BotRequest | None
    rated: bool = False
    """Whether the result changes the people's ratings (docs/player-ratings.md)."""
    bot_rating: int | None = None
    """In a rated match against a bot, the rating its fleet announced for the level: people are rated
    against it."""


# --------------------------------------------------------------------------- client -> server


class Hello(Request, tag="hello", kw_only=True, frozen=True):
    """Say who you are: a ``name`` the first time, your ``token`` to come back, or a claimed ``name``
    with its ``password`` to log in."""

    name: Name | None = None
    token: Token | None = None
    password: Password | None = None
    bot: bool = False
    fleet_key: FleetKey | None = None
    """The operator's secret, from a fleet it trusts: lets this connection post ``bot.status`` notes."""


class LobbySubscribe(Request, tag="lobby.subscribe", kw_only=True, frozen=True):
    pass


class LobbyUnsubscribe(Request, tag="lobby.unsubscribe", kw_only=True, frozen=True):
    pass


class CreateMatch(Request, tag="match.create", kw_only=True, frozen=True):
    game: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_LENGTH)]
    time_control: Annotated[str, msgspec.Meta(min_length=1, max_length=16)] = "untimed"
    seat: Literal[0, 1, "random"] = "random"
    visibility: Literal["public", "private"] = "public"
    bot: BotRequest | None = None
    rated: bool = False


class JoinMatch(Request, tag="match.join", kw_only=True, frozen=True):
    match_id: MatchId
    seat: SeatNumber | None = None


class WatchMatch(Request, tag="match.watch", kw_only=True, frozen=True):
    """Follow a match; with ``log`` and ``since`` from an earlier message, get only what was missed."""

    match_id: MatchId
    since: Count | None = None
    log: Annotated[str, msgspec.Meta(max_length=MAX_ID_LENGTH)] | None = None


class LeaveMatch(Request, tag="match.leave", kw_only=True, frozen=True):
    match_id: MatchId


class PlayMove(Request, tag="move", kw_only=True, frozen=True):
    match_id: MatchId
    ply: Count
    """How many moves the match had when this move was chosen (the ply it answers)."""
    move: MoveText
    engine: EngineInfo | None = None


class Resign(Request, tag="resign", kw_only=True, frozen=True):
    match_id: MatchId


class OfferDraw(Request, tag="draw.offer", kw_only=True, frozen=True):
    match_id: MatchId


class AcceptDraw(Request, tag="draw.accept", kw_only=True, frozen=True):
    match_id: MatchId


class DeclineDraw(Request, tag="draw.decline", kw_only=True, frozen=True):
    match_id: MatchId


class Abort(Request, tag="abort", kw_only=True, frozen=True):
    match_id: MatchId


class OfferRematch(Request, tag="rematch.offer", kw_only=True, frozen=True):
    match_id: MatchId


class AcceptRematch(Request, tag="rematch.accept", kw_only=True, frozen=True):
    match_id: MatchId


class DeclineRematch(Request, tag="rematch.decline", kw_only=True, frozen=True):
    match_id: MatchId


class OfferTakeback(Request, tag="takeback.offer", kw_only=True, frozen=True):
    match_id: MatchId


class AcceptTakeback(Request, tag="takeback.accept", kw_only=True, frozen=True):
    match_id: MatchId


class DeclineTakeback(Request, tag="takeback.decline", kw_only=True, frozen=True):
    match_id: MatchId


class SendChat(Request, tag="chat", kw_only=True, frozen=True):
    match_id: MatchId
    text: ChatText


class SetBotStatus(Request, tag="bot.status", kw_only=True, frozen=True):
    """Say how the bot request of an open match stands; it shows on the match's lobby entry."""

    match_id: MatchId
    state: BotStatusState
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_BOT_STATUS_LENGTH)]


ClientMessage: TypeAlias = (
    Hello
    | LobbySubscribe
    | LobbyUnsubscribe
    | CreateMatch
    | JoinMatch
    | WatchMatch
    | LeaveMatch
    | PlayMove
    | Resign
    | OfferDraw
    | AcceptDraw
    | DeclineDraw
    | Abort
    | OfferRematch
    | AcceptRematch
    | DeclineRematch
    | OfferTakeback
    | AcceptTakeback
    | DeclineTakeback
    | SendChat
    | SetBotStatus
    | JoinPool
    | LeavePool
    | AcceptPoolBot
    | Register
    | Logout
)

REQUEST_TYPES: dict[str, type[Request]] = {cls.__struct_config__.tag: cls for cls in ClientMessage.__args__}


# --------------------------------------------------------------------------- server -> client


class Welcome(ServerMessage, tag="welcome", kw_only=True, frozen=True):
    player: PlayerInfo
    token: str
    """Your secret: keep it to come back as the same player. Sent only to you."""
    protocol: int
    instance: str
    matches: list[str]
    """Unfinished matches on this server in which you hold a seat: ``match.watch`` them to resume."""
    claimed: bool
    """Whether your name is claimed with a password (so you may log out, and log in elsewhere)."""


class Error(ServerMessage, tag="error", kw_only=True, frozen=True):
    """A refused request: ``id`` is always there (``null`` when the request's could not be read)."""

    id: RequestId
    code: ErrorCode
    message: str
    url: str | None = None
    """With ``hosted_elsewhere``: the WebSocket URL of the instance that hosts the match, when known."""


class Ok(ServerMessage, tag="ok", kw_only=True, frozen=True):
    """The reply to a request that has nothing else to say (``lobby.unsubscribe``, ``match.leave``,
    ``bot.status``)."""


class LobbyOmitted(msgspec.Struct, frozen=True):
    """How many entries of each kind of the lobby a :class:`LobbySnapshot` left out for want of room: all
    0 when it holds the whole lobby."""

    bot_requests: Count
    """Open matches that ask for a bot."""
    open: Count
    """Other open matches."""
    live: Count


class LobbySnapshot(ServerMessage, tag="lobby.snapshot", kw_only=True, frozen=True):
    matches: list[LobbyEntry]
    omitted: LobbyOmitted
    """Always sent, so a client can say how many matches the list leaves out (server/lobby.py bounds it)."""


class LobbyUpdate(ServerMessage, tag="lobby.update", kw_only=True, frozen=True):
    entry: LobbyEntry


class LobbyRemove(ServerMessage, tag="lobby.remove", kw_only=True, frozen=True):
    match_id: str


class BotStatusNote(ServerMessage, tag="bot.status", kw_only=True, frozen=True):
    """A note on the bot request of a match you follow (also sent on following a match that has one).

    Not a match event: it has no ``seq`` and is not replayed by ``match.catchup``.
    """

    match_id: str
    bot_status: BotStatus


class SpectatorCount(ServerMessage, tag="match.spectators", kw_only=True, frozen=True):
    """How many watch a match you follow, when that changes (at most once a second). Not a match event:
    it has no ``seq`` and is not replayed by ``match.catchup``."""

    match_id: str
    spectators: Count


class MatchState(ServerMessage, tag="match.state", kw_only=True, frozen=True):
    """Everything about a match at ``seq`` of event log ``log``: the start of following it."""

    match_id: str
    log: str
    seq: int
    game: str
    options: MatchOptions
    status: str
    """``open``, ``live``, ``finished`` or ``aborted``."""
    seats: list[PlayerInfo | None]
    moves: list[str]
    display: list[str] | None = None
    """``moves`` as people write them (SAN in chess), in a game whose wire notation is not theirs; left out
    in the others."""
    turn: SeatNumber | None
    """The seat to move, ``null`` unless the match is live."""
    clocks_ms: tuple[int, int] | None
    """Both seats' remaining times now; ``null`` when untimed."""
    clock_running: SeatNumber | None
    connected: list[bool]
    grace_left_ms: list[int | None]
    """For each absent seat, how long its player has left to come back; ``null`` for one present."""
    draw_offer: SeatNumber | None
    takeback_offer: SeatNumber | None = None
    """The seat asking for a takeback; left out when none is."""
    spectators: Count = 0
    """How many watch the match without a seat in it (people, not their connections, where known); left
    out when none does."""
    rematch_offer: SeatNumber | None
    rematch_agreed: bool
    """Both players asked for a rematch during the game: it starts as the game ends."""
    result: MatchResult | None
    you: SeatNumber | None
    """Your seat in this match, ``null`` for a spectator."""
    board: tuple[str, ...]
    """The position as rows of characters (see :meth:`games.base.Position.grid`)."""
    legal: tuple[str, ...]
    """The legal moves of the side to move, in notation; empty unless the match is live."""
    chat: list[ChatLine]
    """The match's last chat lines, oldest first, as their ``chat`` events were."""
    rematch_id: str | None
    """The rematch, once it has started."""


class MatchEvent(ServerMessage, kw_only=True, frozen=True):
    """Something that happened in a match, numbered by ``seq`` (1, 2, ... within its ``log``)."""

    match_id: str
    seq: int


class Seated(MatchEvent, tag="seated", kw_only=True, frozen=True):
    seat: SeatNumber
    player: PlayerInfo


class Started(MatchEvent, tag="started", kw_only=True, frozen=True):
    clocks_ms: tuple[int, int] | None
    turn: SeatNumber
    """The seat to move first: whoever it is, the position below needs no rules to draw."""
    board: tuple[str, ...]
    legal: tuple[str, ...]


class Moved(MatchEvent, tag="moved", kw_only=True, frozen=True):
    ply: int
    """The ply the move answered: 0 for the first move of a match."""
    seat: SeatNumber
    move: str
    display: str | None = None
    """The move as people write it (SAN in chess: ``Nf3``), in a game whose wire notation is not theirs;
    left out in the others."""
    think_ms: int
    clocks_ms: tuple[int, int] | None
    """Both remaining times right after the move, increment included."""
    board: tuple[str, ...]
    """The position after the move (see :meth:`games.base.Position.grid`)."""
    legal: tuple[str, ...]
    """The legal moves that answer it, in notation; empty when the move ends the game."""
    engine: EngineInfo | None = None


class DrawOffered(MatchEvent, tag="draw.offered", kw_only=True, frozen=True):
    seat: SeatNumber


class DrawDeclined(MatchEvent, tag="draw.declined", kw_only=True, frozen=True):
    seat: SeatNumber


class TakebackOffered(MatchEvent, tag="takeback.offered", kw_only=True, frozen=True):
    seat: SeatNumber


class TakebackDeclined(MatchEvent, tag="takeback.declined", kw_only=True, frozen=True):
    seat: SeatNumber


class TakebackAccepted(MatchEvent, tag="takeback.accepted", kw_only=True, frozen=True):
    """The moves from ``ply`` on are taken back: the match goes on from the position before them."""

    seat: SeatNumber
    """The seat that asked for the takeback."""
    ply: int
    """How many moves the match has now."""
    turn: SeatNumber
    clocks_ms: tuple[int, int] | None
    """Both times as they were before the first move taken back, the side to move's running again."""
    board: tuple[str, ...]
    legal: tuple[str, ...]


class RematchOffered(MatchEvent, tag="rematch.offered", kw_only=True, frozen=True):
    seat: SeatNumber


class RematchDeclined(MatchEvent, tag="rematch.declined", kw_only=True, frozen=True):
    seat: SeatNumber


class RematchAgreed(MatchEvent, tag="rematch.agreed", kw_only=True, frozen=True):
    """Both players want a rematch, asked for during the game: it starts the moment the game ends."""


class RematchStarted(MatchEvent, tag="rematch.started", kw_only=True, frozen=True):
    new_match_id: str


class ChatLine(MatchEvent, tag="chat", kw_only=True, frozen=True):
    seat: SeatNumber
    name: str
    text: str


class PresenceChanged(MatchEvent, tag="presence", kw_only=True, frozen=True):
    seat: SeatNumber
    connected: bool
    grace_ms: int | None
    """When disconnected from a live match: how long the seat has to come back before losing."""


class Ended(MatchEvent, tag="ended", kw_only=True, frozen=True):
    status: str
    winner: SeatNumber | None
    reason: str
    clocks_ms: tuple[int, int] | None


AnyMatchEvent: TypeAlias = (
    Seated
    | Started
    | Moved
    | DrawOffered
    | DrawDeclined
    | TakebackOffered
    | TakebackDeclined
    | TakebackAccepted
    | RematchOffered
    | RematchDeclined
    | RematchAgreed
    | RematchStarted
    | ChatLine
    | PresenceChanged
    | Ended
)


class MatchCatchup(ServerMessage, tag="match.catchup", kw_only=True, frozen=True):
    """The reply to ``match.watch`` with a known ``log`` and ``since``: exactly the events missed."""

    match_id: str
    log: str
    seq: int
    events: list[AnyMatchEvent]
    clocks_ms: tuple[int, int] | None
    """Both remaining times now (the missed events carry the times as they were then); always sent,
    ``null`` when untimed, like every field without a default."""
    clock_running: SeatNumber | None


# --------------------------------------------------------------------------- encoding and decoding


_request_decoders = {tag: msgspec.json.Decoder(cls) for tag, cls in REQUEST_TYPES.items()}
_any_request_decoder = msgspec.json.Decoder(ClientMessage)
_encoder = msgspec.json.Encoder()


def decode_request(frame: bytes | str, max_bytes: int, *, binary: bool = False) -> Request:
    """The request in ``frame`` (which came in a binary WebSocket frame if ``binary``); raises
    :class:`UndecodableRequest` saying what is wrong (server/decoding.py reads what it can of a bad one)."""
    data = frame.encode() if isinstance(frame, str) else frame
    if len(data) > max_bytes or binary or too_deep(data):
        raise frame_refusal(data, max_bytes, binary=binary)
    try:  # a good request in one pass; only a bad one is read again, step by step, to say what is wrong
        return _any_request_decoder.decode(data)
    except UNREADABLE:
        pass
    envelope = read_envelope(data)
    decoder = _request_decoders.get(envelope.type)
    if decoder is None:
        known = ", ".join(sorted(REQUEST_TYPES))
        message = f"unknown message type {envelope.type!r}; known types: {known}"
        raise UndecodableRequest(ErrorCode.UNKNOWN_TYPE, message, envelope.id)
    try:
        return decoder.decode(data)
    except msgspec.ValidationError as error:
        raise UndecodableRequest(ErrorCode.BAD_FIELD, str(error), envelope.id) from None
    except UNREADABLE as error:
        raise UndecodableRequest(ErrorCode.BAD_JSON, f"not a JSON object: {error}", envelope.id) from None


def encode(message: ServerMessage | LobbyEntry) -> bytes:
    """``message`` as UTF-8 JSON, ready for a text frame or a bus payload."""
    return _encoder.encode(message)


def as_reply(data: bytes, request_id: RequestId) -> bytes:
    """``data``, a server message encoded without an id, as the reply to request ``request_id``.

    The id goes where :func:`encode` puts it, right after the type (``tests/test_protocol.py`` holds
    the two to the same bytes): the mover's copy of a ``moved`` is the one everyone else gets, its
    board and legal moves not encoded a second time.
    """
    if request_id is None:
        return data
    cut = data.index(b",") + 1  # (after ``{"type":"...",``: no type has a comma)
    return b"".join((data[:cut], b'"id":', _encoder.encode(request_id), b",", data[cut:]))


def error_message(code: ErrorCode, message: str, request_id: RequestId, url: str | None = None) -> Error:
    return Error(code=code, message=message, id=request_id, url=url)


AnyServerMessage: TypeAlias = (
    Welcome
    | AccountClaimed
    | LoggedOut
    | Error
    | Ok
    | LobbySnapshot
    | LobbyUpdate
    | LobbyRemove
    | BotStatusNote
    | SpectatorCount
    | MatchState
    | MatchCatchup
    | PoolWaiting
    | Paired
    | PoolLeft
    | AnyMatchEvent
)
"""Everything the server sends, as :data:`ClientMessage` is everything a client does (``plyarena schema``
describes both in docs/protocol.schema.json)."""

_server_decoder = msgspec.json.Decoder(AnyServerMessage)


def decode_server_message(frame: bytes | str) -> ServerMessage:
    """A server message, for clients written in Python (bots, tests)."""
    return _server_decoder.decode(frame)
