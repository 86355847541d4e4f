"""Protocol v1 as a bot sees it: the messages it sends, and the ones it reads.

Written from docs/protocol.md, as any third-party client would be; nothing here
comes from the server's code. Reading is lenient on purpose: fields a bot does
not use are ignored, and a message of a type it does not know decodes to
:class:`Unknown`, so a newer server never crashes an older bot.
"""

from __future__ import annotations

import re
from typing import Literal, TypeAlias

import msgspec

PROTOCOL_VERSION = 1

# --------------------------------------------------------------------------- shared parts


class PlayerInfo(msgspec.Struct, frozen=True):
    id: str
    name: str
    bot: bool = False


class BotRequest(msgspec.Struct, frozen=True, omit_defaults=True):
    """The mark on a lobby entry that asks a fleet for a bot of ``level`` (and ``style``)."""

    level: int
    style: str | None = None


class BotStatus(msgspec.Struct, frozen=True):
    """The latest note on a lobby entry's bot request: ``queued``, ``unavailable`` or ``coming``."""

    state: str
    reason: str = ""
    by: str = ""


MAX_BOT_STATUS_LENGTH = 200
"""The longest ``reason`` a server takes with a ``bot.status`` note."""

MAX_PV_LENGTH = 64
"""The longest principal variation a server takes with a move."""


class EngineInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    """A bot's search info sent with its move: ``source`` says where the move came from, and what the
    source does not have (a book move's depth and nodes) is left out."""

    score: int | None = None
    depth: int | None = None
    nodes: int | None = None
    pv: list[str] = []
    time_ms: int | None = None
    source: Literal["book", "solved", "searched"] | None = None


class MatchOptions(msgspec.Struct, frozen=True):
    time_control: str = "untimed"
    visibility: str = "public"
    bot: BotRequest | None = None


class MatchResult(msgspec.Struct, frozen=True):
    status: str
    winner: int | None
    reason: str


class LobbyEntry(msgspec.Struct, frozen=True):
    """One public match in the lobby (from the live feed or from an MQTT retained topic)."""

    match_id: str
    game: str
    status: str
    seats: list[PlayerInfo | None]
    time_control: str = "untimed"
    bot: BotRequest | None = None
    host: str = ""
    url: str = ""
    bot_status: BotStatus | None = None

    @property
    def open_seats(self) -> list[int]:
        return [seat for seat, player in enumerate(self.seats) if player is None]


# --------------------------------------------------------------------------- bot -> server


class Request(msgspec.Struct, tag_field="type", kw_only=True, frozen=True, omit_defaults=True):
    id: int | str | None = None


class Hello(Request, tag="hello", kw_only=True):
    name: str | None = None
    token: str | None = None
    bot: bool = False
    fleet_key: str | None = None


class LobbySubscribe(Request, tag="lobby.subscribe", kw_only=True):
    pass


class CreateMatch(Request, tag="match.create", kw_only=True):
    game: str
    time_control: str = "untimed"
    seat: int | str = "random"
    visibility: str = "public"
    bot: BotRequest | None = None


class JoinMatch(Request, tag="match.join", kw_only=True):
    match_id: str
    seat: int | None = None


class WatchMatch(Request, tag="match.watch", kw_only=True):
    match_id: str
    since: int | None = None
    log: str | None = None


class LeaveMatch(Request, tag="match.leave", kw_only=True):
    match_id: str


class PlayMove(Request, tag="move", kw_only=True):
    match_id: str
    ply: int
    move: str
    engine: EngineInfo | None = None


class AcceptDraw(Request, tag="draw.accept", kw_only=True):
    match_id: str


class DeclineDraw(Request, tag="draw.decline", kw_only=True):
    match_id: str


class DeclineTakeback(Request, tag="takeback.decline", kw_only=True):
    match_id: str


class AcceptRematch(Request, tag="rematch.accept", kw_only=True):
    match_id: str


class DeclineRematch(Request, tag="rematch.decline", kw_only=True):
    match_id: str


class SendChat(Request, tag="chat", kw_only=True):
    match_id: str
    text: str


class SetBotStatus(Request, tag="bot.status", kw_only=True):
    """Note how an open match's bot request stands (a full fleet queues it), shown on its lobby entry."""

    match_id: str
    state: str
    reason: str


# --------------------------------------------------------------------------- server -> bot


class Reply(msgspec.Struct, kw_only=True, frozen=True):
    """Base of what the server sends; ``id`` echoes the request a reply answers."""

    id: int | str | None = None


class Welcome(Reply, kw_only=True, frozen=True):
    player: PlayerInfo
    token: str
    instance: str = ""
    protocol: int = PROTOCOL_VERSION
    matches: list[str] = []


class Error(Reply, kw_only=True, frozen=True):
    code: str
    message: str = ""
    url: str | None = None
    """With ``hosted_elsewhere``: the WebSocket URL of the instance that hosts the match."""


class Ok(Reply, kw_only=True, frozen=True):
    pass


class LobbySnapshot(Reply, kw_only=True, frozen=True):
    matches: list[LobbyEntry] = []


class LobbyUpdate(Reply, kw_only=True, frozen=True):
    entry: LobbyEntry


class LobbyRemove(Reply, kw_only=True, frozen=True):
    match_id: str


class BotStatusNote(Reply, kw_only=True, frozen=True):
    match_id: str
    bot_status: BotStatus


class MatchState(Reply, kw_only=True, frozen=True):
    match_id: str
    log: str
    seq: int
    game: str
    status: str
    seats: list[PlayerInfo | None]
    moves: list[str] = []
    options: MatchOptions = MatchOptions()
    turn: int | None = None
    clocks_ms: list[int] | None = None
    draw_offer: int | None = None
    rematch_offer: int | None = None
    result: MatchResult | None = None
    you: int | None = None


class MatchEvent(Reply, kw_only=True, frozen=True):
    match_id: str
    seq: int


class Seated(MatchEvent, kw_only=True, frozen=True):
    seat: int
    player: PlayerInfo


class Started(MatchEvent, kw_only=True, frozen=True):
    clocks_ms: list[int] | None = None


class Moved(MatchEvent, kw_only=True, frozen=True):
    ply: int
    seat: int
    move: str
    clocks_ms: list[int] | None = None


class DrawOffered(MatchEvent, kw_only=True, frozen=True):
    seat: int


class DrawDeclined(MatchEvent, kw_only=True, frozen=True):
    seat: int


class TakebackOffered(MatchEvent, kw_only=True, frozen=True):
    seat: int


class RematchOffered(MatchEvent, kw_only=True, frozen=True):
    seat: int


class RematchDeclined(MatchEvent, kw_only=True, frozen=True):
    seat: int


class RematchStarted(MatchEvent, kw_only=True, frozen=True):
    new_match_id: str


class ChatLine(MatchEvent, kw_only=True, frozen=True):
    seat: int | None = None
    name: str = ""
    text: str = ""


class PresenceChanged(MatchEvent, kw_only=True, frozen=True):
    seat: int
    connected: bool


class Ended(MatchEvent, kw_only=True, frozen=True):
    status: str
    winner: int | None = None
    reason: str = ""
    clocks_ms: list[int] | None = None


class OtherEvent(MatchEvent, kw_only=True, frozen=True):
    """A match event of a type this bot does not know: it still counts in the sequence."""

    type: str


class MatchCatchup(Reply, kw_only=True, frozen=True):
    match_id: str
    log: str
    seq: int
    events: list[MatchEvent] = []


class Unknown(Reply, kw_only=True, frozen=True):
    """A message of a type this bot does not know, kept only to be logged."""

    type: str


Incoming: TypeAlias = (
    Welcome
    | Error
    | Ok
    | LobbySnapshot
    | LobbyUpdate
    | LobbyRemove
    | BotStatusNote
    | MatchState
    | MatchCatchup
    | MatchEvent
    | Unknown
)

MESSAGE_TYPES: dict[str, type[Reply]] = {
    "welcome": Welcome,
    "error": Error,
    "ok": Ok,
    "lobby.snapshot": LobbySnapshot,
    "lobby.update": LobbyUpdate,
    "lobby.remove": LobbyRemove,
    "bot.status": BotStatusNote,
    "match.state": MatchState,
    "match.catchup": MatchCatchup,
}

EVENT_TYPES: dict[str, type[MatchEvent]] = {
    "seated": Seated,
    "started": Started,
    "moved": Moved,
    "draw.offered": DrawOffered,
    "draw.declined": DrawDeclined,
    "takeback.offered": TakebackOffered,
    "rematch.offered": RematchOffered,
    "rematch.declined": RematchDeclined,
    "rematch.started": RematchStarted,
    "chat": ChatLine,
    "presence": PresenceChanged,
    "ended": Ended,
}


class _Envelope(msgspec.Struct):
    type: str


class _RawCatchup(Reply, kw_only=True, frozen=True):
    match_id: str
    log: str
    seq: int
    events: list[msgspec.Raw] = []


_envelope = msgspec.json.Decoder(_Envelope)
_decoders = {tag: msgspec.json.Decoder(cls) for tag, cls in {**MESSAGE_TYPES, **EVENT_TYPES}.items()}
_raw_catchup = msgspec.json.Decoder(_RawCatchup)
_encoder = msgspec.json.Encoder()


class MalformedMessage(ValueError):
    """A frame from the server that is not a JSON object with a ``type``, or whose fields do not fit it."""


def decode(frame: str | bytes) -> Incoming:
    """The message in ``frame``; :class:`Unknown` (:class:`OtherEvent`) for types a bot does not know."""
    try:
        message_type = _envelope.decode(frame).type
        if message_type == "match.catchup":
            raw = _raw_catchup.decode(frame)
            events = [_decode_event(event) for event in raw.events]
            return MatchCatchup(id=raw.id, match_id=raw.match_id, log=raw.log, seq=raw.seq, events=events)
        decoder = _decoders.get(message_type)
        if decoder is not None:
            return decoder.decode(frame)
        fields = msgspec.json.decode(frame)
        if isinstance(fields.get("match_id"), str) and isinstance(fields.get("seq"), int):
            return OtherEvent(match_id=fields["match_id"], seq=fields["seq"], type=message_type)
        return Unknown(type=message_type)
    except (msgspec.DecodeError, AttributeError) as error:
        raise MalformedMessage(f"cannot read server frame {_excerpt(frame)}: {error}") from None


def _decode_event(raw: msgspec.Raw) -> MatchEvent:
    message = decode(bytes(raw))
    if not isinstance(message, MatchEvent):
        raise MalformedMessage(f"a match.catchup event is not a match event: {_excerpt(bytes(raw))}")
    return message


def _excerpt(frame: str | bytes, limit: int = 200) -> str:
    text = frame if isinstance(frame, str) else frame.decode("utf-8", "replace")
    return repr(text if len(text) <= limit else text[:limit] + "...")


def encode(request: Request) -> str:
    """``request`` as the JSON text of one frame."""
    return _encoder.encode(request).decode()


TIME_CONTROL = re.compile(r"^(?P<minutes>\d+)(?::(?P<seconds>\d{2}))?\+(?P<increment>\d+)$")


def increment_ms(time_control: str) -> int:
    """The increment of a time control (``"5+3"``, ``"0:30+1"``) in milliseconds; 0 when untimed."""
    if time_control == "untimed":
        return 0
    match = TIME_CONTROL.match(time_control)
    if match is None:
        raise ValueError(f"unknown time control {time_control!r}: expected 'M+S', 'M:SS+S' or 'untimed'")
    return int(match["increment"]) * 1000
