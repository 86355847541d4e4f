"""Bad protocol v1 messages, each with the error codes that docs/protocol.md says must answer it.

The generator knows the protocol from its documentation only, as a stranger
writing a client would: it never imports the server, so the server's own
definitions cannot make a wrong answer look right. Each :class:`FuzzCase` is one
frame (text or binary), the connection that sends it (a ``stranger`` that never
said hello, or the fuzzed ``player``), the error codes that may answer it and
the ``id`` the answer must carry.

Two families of cases:

- *malformed* frames, refused before anyone looks at who sent them: binary
  frames (whatever they hold: requests are JSON in text frames), not JSON,
  truncated, invalid UTF-8, lone surrogates, nesting thousands deep, oversized,
  unknown types and fields, missing fields, wrongly typed or out-of-range
  values (huge numbers, long text, nulls, nested junk, unicode);
- well-formed requests that the context refuses: anything before ``hello``,
  forged tokens, a second ``hello``, acting in other players' matches (as a
  spectator or not), unknown matches, stale plies and illegal moves in the
  player's own match, offers that were never made, names and chat that are blank
  or hold control or bidi characters (names: invisible ones too), unknown games
  and impossible time controls.

The generator never makes a request the server should accept: every case must
be refused, so it can change nothing stored.

Cases are drawn through :class:`~support.fuzz_values.Choices`, from a
hypothesis strategy in the tests and from a seeded random generator in
``plyarena bench fuzz``; the request fields and the values that break them are
in :mod:`support.fuzz_values`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache

from games import Position, get_game
from server.protocol_base import MAX_CHAT_LENGTH, MAX_FLEET_KEY_LENGTH
from support.fuzz_values import (
    ABSENT,
    BAD_TIME_CONTROLS,
    BIDI_CONTROLS,
    BLANKS,
    CONTROL_CHARACTERS,
    INVISIBLE_CHARACTERS,
    MATCH_ACTIONS,
    MATCH_ID,
    MATCH_REQUESTS,
    MAX_SAFE_INTEGER,
    REQUEST_ID,
    SCHEMAS,
    Choices,
    Json,
    RequestId,
    Text,
    chance,
    encode,
    junk,
    pick,
    request,
    text,
)

STRANGER, PLAYER = "stranger", "player"


# --------------------------------------------------------------------------- what the fuzzer attacks


@dataclass(frozen=True, slots=True)
class Limits:
    """The size limits of docs/protocol.md ("Requests and replies")."""

    message_bytes: int = 4096
    """Larger frames are answered ``frame_too_large``."""
    frame_bytes: int = 64 * 1024
    """Larger frames close the connection: the generator stays below."""


@dataclass(frozen=True, slots=True)
class OwnMatch:
    """A live match in which the fuzzed player holds ``seat`` and it is that seat's turn."""

    match_id: str
    game: str
    moves: tuple[str, ...]
    """Every move so far, in the notation the server sent (``match.state``'s ``moves``)."""
    seat: int


@dataclass(frozen=True, slots=True)
class Arena:
    """What the fuzzer knows about the live server: its matches, and tokens that name no one."""

    own: tuple[OwnMatch, ...]
    others: tuple[str, ...]
    """Matches of other players, live or finished, in which the fuzzed player holds no seat."""
    watched: frozenset[str]
    """The ones of ``others`` that the fuzzed player follows as a spectator."""
    refused_tokens: tuple[str, ...]
    """Token-shaped text the server must refuse (another player's token hash, a token one letter off)."""
    games: tuple[str, ...]
    """Game names the server knows (``GET /api/games``)."""
    limits: Limits = Limits()


@dataclass(frozen=True, slots=True)
class FuzzCase:
    kind: str
    role: str
    """``stranger`` (never said hello) or ``player`` (welcomed; holds the seats of :attr:`Arena.own`)."""
    frame: bytes
    binary: bool
    """Sent as a binary frame (else as a text frame; a text frame's ``frame`` is always UTF-8)."""
    expected: frozenset[str]
    """The error codes that may answer it."""
    reply_ids: frozenset[RequestId]
    """The ``id`` values the answer may carry."""

    def describe(self) -> str:
        excerpt = self.frame[:300].decode("utf-8", "backslashreplace")
        more = f"... ({len(self.frame)} bytes)" if len(self.frame) > 300 else ""
        kind = "binary" if self.binary else "text"
        return f"{self.kind} from the {self.role}, a {kind} frame: {excerpt}{more}"


# --------------------------------------------------------------------------- the id an answer carries


def _ids(message: dict[str, Json]) -> frozenset[RequestId]:
    """The id an answer to ``message`` must echo (``null`` when it has none)."""
    return frozenset({message.get("id")})


def _unreadable_ids(message: dict[str, Json]) -> frozenset[RequestId]:
    """A frame whose id the server may or may not manage to read."""
    return frozenset({None, message.get("id")})


_NOT_READ = frozenset({None})


# --------------------------------------------------------------------------- malformed frames


Builder = Callable[[Choices, Arena], "FuzzCase"]


def _role(choices: Choices) -> str:
    return pick(choices, (PLAYER, STRANGER))


def _any_request(choices: Choices, arena: Arena) -> dict[str, Json]:
    """A well-formed request of any type, about any match: material for breaking."""
    kind = pick(choices, sorted(SCHEMAS))
    fields: dict[str, Json] = {}
    if "match_id" in SCHEMAS[kind]:
        fields["match_id"] = _some_match_id(choices, arena)
    return request(choices, kind, **fields)


def _some_match_id(choices: Choices, arena: Arena) -> str:
    known = [own.match_id for own in arena.own] + list(arena.others)
    return pick(choices, known) if known and chance(choices, 2) else MATCH_ID.example(choices)


def not_json(choices: Choices, arena: Arena) -> FuzzCase:
    form = choices.integer(0, 3)
    if form == 0:
        body = text(choices, 0, 60)
        frame = ("x" + body if body.lstrip(" \t\r\n\x0b\x0c").startswith("{") else body).encode()
    elif form == 1:
        frame = encode([_any_request(choices, arena), junk(choices)], choices)
    elif form == 2:
        frame = encode(junk(choices), choices)
        if frame.lstrip().startswith(b"{"):
            frame = b"[" + frame + b"]"
    else:
        frame = pick(choices, (b"", b" ", b"null", b"true", b"0", b'"hello"', b"\xff\xfe\x00", b"\x00" * 8))
    return _case("not_json", choices, frame, {"bad_json"}, _NOT_READ)


def truncated(choices: Choices, arena: Arena) -> FuzzCase:
    whole = encode(_any_request(choices, arena), choices)
    cut = whole[: choices.integer(1, len(whole) - 1)]
    return _case("truncated", choices, cut, {"bad_json"}, _NOT_READ)


_NOT_STANDARD_JSON = (
    b'{"type": "hello", "name": "x",}',
    b"{'type': 'hello', 'name': 'x'}",
    b'{type: "hello"}',
    b'{"type": "hello" /* comment */}',
    b'{"type": "move", "match_id": "m", "ply": NaN, "move": "a1"}',
    b'{"type": "move", "match_id": "m", "ply": Infinity, "move": "a1"}',
    b'{"type": "move", "match_id": "m", "ply": 0x10, "move": "a1"}',
    b'{"type": "move", "match_id": "m", "ply": 01, "move": "a1"}',
    b'{"type": "hello"}}',
    b'{"type": "hello"} {"type": "hello"}',
    b'{"type": "hello", "name": "tab\there"}',
    b'{"type": "hello", "name": "\\x41"}',
    b'\xef\xbb\xbf{"type": "hello", "name": "bom"}',
)


def not_standard_json(choices: Choices, arena: Arena) -> FuzzCase:
    return _case("not_standard_json", choices, pick(choices, _NOT_STANDARD_JSON), {"bad_json"}, _NOT_READ)


_INVALID_UTF8 = (b"\xff", b"\xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"a\x80b")
_LONE_SURROGATES = (b"\\ud800", b"\\udfff", b"x\\ud83dy", b"\\ude00\\ud83d")
_MARK = "FUZZ-MARK-7f3a"


def broken_text(choices: Choices, arena: Arena) -> FuzzCase:
    """A string of a well-formed request that is not UTF-8, or holds a lone surrogate escape."""
    message = _any_request(choices, arena)
    reply_ids = _unreadable_ids(message)
    strings = [name for name, value in message.items() if isinstance(value, str)]  # "type" at least
    name = pick(choices, strings)
    message[name] = message[name][:10] + _MARK
    surrogate = chance(choices, 2)
    bad = pick(choices, _LONE_SURROGATES if surrogate else _INVALID_UTF8)
    frame = encode(message, choices).replace(_MARK.encode(), bad)
    kind = "lone_surrogate" if surrogate else "invalid_utf8"
    return _case(kind, choices, frame, {"bad_json"}, reply_ids)


def deep_nesting(choices: Choices, arena: Arena) -> FuzzCase:
    """Arrays nested over a thousand deep inside a request; a shallower parser may call it a wrong field."""
    message = _any_request(choices, arena)
    levels = choices.integer(1200, 1800)
    name = pick(choices, [*sorted(SCHEMAS[message["type"]]), "extra"])
    message[name] = _MARK
    frame = encode(message, choices).replace(f'"{_MARK}"'.encode(), b"[" * levels + b"]" * levels)
    return _case("deep_nesting", choices, frame, {"bad_json", "bad_field"}, _unreadable_ids(message))


def oversized(choices: Choices, arena: Arena) -> FuzzCase:
    message = _any_request(choices, arena)
    message["padding"] = pick(choices, ("x", "é", "\x00", "😀")) * choices.integer(1, 400)
    frame = encode(message, choices)
    size = choices.integer(arena.limits.message_bytes + 1, min(arena.limits.frame_bytes, 20_000))
    if len(frame) < size:  # fill up with plain bytes: escaped text takes up to 12 bytes a character
        frame = frame[:-1] + b', "more": "' + b"y" * (size - len(frame)) + b'"}'
    return _case("oversized", choices, frame, {"frame_too_large"}, _ids(message))


def unknown_type(choices: Choices, arena: Arena) -> FuzzCase:
    name = text(choices, 0, 20)
    if name in SCHEMAS:
        name += "!"
    message = {**_any_request(choices, arena), "type": name}
    return _case("unknown_type", choices, encode(message, choices), {"unknown_type"}, _ids(message))


def bad_type(choices: Choices, arena: Arena) -> FuzzCase:
    """``type`` missing, or not a string."""
    message = _any_request(choices, arena)
    if chance(choices, 3):
        del message["type"]
    else:
        message["type"] = _not_text(choices)
    return _case("bad_type", choices, encode(message, choices), {"bad_field"}, _ids(message))


def _not_text(choices: Choices) -> Json:
    value = junk(choices)
    return value if not isinstance(value, str) else [value]


def bad_id(choices: Choices, arena: Arena) -> FuzzCase:
    message = {**_any_request(choices, arena), "id": REQUEST_ID.wrong(choices)}
    return _case("bad_id", choices, encode(message, choices), {"bad_field"}, _NOT_READ)


def unknown_field(choices: Choices, arena: Arena) -> FuzzCase:
    message = _any_request(choices, arena)
    known = {"type", "id", *SCHEMAS[message["type"]]}
    name = pick(choices, ("player_id", "seat", "token", "Type", "__proto__", "match_id", "ply", "admin"))
    if name in known:
        name = text(choices, 1, 12) + "?"
    message[name] = junk(choices)
    return _case("unknown_field", choices, encode(message, choices), {"bad_field"}, _ids(message))


def missing_field(choices: Choices, arena: Arena) -> FuzzCase:
    kinds = sorted(kind for kind, fields in SCHEMAS.items() if any(f.required for f in fields.values()))
    message = request(choices, pick(choices, kinds), match_id=_some_match_id(choices, arena))
    required = sorted(name for name, spec in SCHEMAS[message["type"]].items() if spec.required)
    del message[pick(choices, required)]
    return _case("missing_field", choices, encode(message, choices), {"bad_field"}, _ids(message))


def wrong_value(choices: Choices, arena: Arena) -> FuzzCase:
    """One field of the wrong type or out of range: huge numbers, long text, nulls, nested junk."""
    kinds = sorted(kind for kind, fields in SCHEMAS.items() if fields)
    message = request(choices, pick(choices, kinds))
    if "match_id" in message and chance(choices, 2):
        message["match_id"] = _some_match_id(choices, arena)
    name = pick(choices, sorted(SCHEMAS[message["type"]]))
    message[name] = SCHEMAS[message["type"]][name].wrong(choices)
    return _case("wrong_value", choices, encode(message, choices), {"bad_field"}, _ids(message))


# --------------------------------------------------------------------------- well-formed, refused


WATCHING = {"lobby.subscribe", "lobby.unsubscribe", "match.watch", "match.leave"}
"""The requests a connection may make before ``hello``."""


def before_hello(choices: Choices, arena: Arena) -> FuzzCase:
    kind = pick(choices, sorted(set(SCHEMAS) - {"hello"} - WATCHING))
    fields = {"match_id": _some_match_id(choices, arena)} if "match_id" in SCHEMAS[kind] else {}
    message = request(choices, kind, **fields)
    frame = encode(message, choices)
    return _case("before_hello", choices, frame, {"hello_required"}, _ids(message), STRANGER)


def forged_token(choices: Choices, arena: Arena) -> FuzzCase:
    if arena.refused_tokens and chance(choices, 2):
        token = pick(choices, arena.refused_tokens)
    else:
        token = Text(1, 128).example(choices)
    message = request(choices, "hello", token=token, fleet_key=ABSENT)
    return _case("forged_token", choices, encode(message, choices), {"bad_token"}, _ids(message), STRANGER)


def forged_fleet_key(choices: Choices, arena: Arena) -> FuzzCase:
    """A ``hello`` that claims to speak for a fleet with a key that is not the server's."""
    message = request(choices, "hello", fleet_key=Text(1, MAX_FLEET_KEY_LENGTH).example(choices))
    frame = encode(message, choices)
    return _case("forged_fleet_key", choices, frame, {"bad_fleet_key"}, _ids(message), STRANGER)


def bad_name(choices: Choices, arena: Arena) -> FuzzCase:
    """A first ``hello`` whose name is blank or holds a control, bidi or invisible character, or with no
    name at all."""
    form = choices.integer(0, 2)
    if form == 0:
        name: Json = pick(choices, BLANKS)
    elif form == 1:
        refused = CONTROL_CHARACTERS + BIDI_CONTROLS + INVISIBLE_CHARACTERS
        name = "a" + pick(choices, refused) + text(choices, 0, 20).strip()[:20] + "z"
    else:
        name = pick(choices, (None, ABSENT))
    token = pick(choices, (None, ABSENT))
    message = request(choices, "hello", name=name, token=token, fleet_key=ABSENT)
    return _case("bad_name", choices, encode(message, choices), {"bad_field"}, _ids(message), STRANGER)


def second_hello(choices: Choices, arena: Arena) -> FuzzCase:
    message = request(choices, "hello")
    return _case("second_hello", choices, encode(message, choices), {"not_allowed"}, _ids(message), PLAYER)


def others_match(choices: Choices, arena: Arena) -> FuzzCase:
    """Acting in another player's match, watched or not: moves with any ply, offers, chat, joining."""
    if not arena.others:
        return unknown_match(choices, arena)
    match_id = pick(choices, arena.others)
    kind = pick(choices, (*MATCH_ACTIONS, "match.join", "match.leave"))
    if kind == "match.leave" and match_id in arena.watched:
        kind = "resign"  # leaving a watched match is allowed
    message = request(choices, kind, match_id=match_id)
    expected = {
        "match.join": {"seat_taken", "match_over"},  # live, or over by now
        "match.leave": {"not_found"},  # not followed
    }.get(kind, {"not_a_player"})
    watched = "spectator" if match_id in arena.watched else "outsider"
    return _case(f"{watched}_action", choices, encode(message, choices), expected, _ids(message), PLAYER)


def unknown_match(choices: Choices, arena: Arena) -> FuzzCase:
    known = {own.match_id for own in arena.own} | set(arena.others)
    match_id = MATCH_ID.example(choices)
    if match_id in known:
        match_id += "?"
    message = request(choices, pick(choices, MATCH_REQUESTS), match_id=match_id)
    return _case("unknown_match", choices, encode(message, choices), {"not_found"}, _ids(message), PLAYER)


@cache
def _positions(game: str, moves: tuple[str, ...]) -> tuple[Position, ...]:
    return tuple(get_game(game).history(moves))


def _plays(position: Position, move: str) -> bool:
    """Whether the rules accept ``move`` here (any failure but a legal move counts as refused)."""
    try:
        position.play(position.parse_move(move))
    except Exception:
        return False
    return True


def _is_resend(own: OwnMatch, ply: int, move: str) -> bool:
    """A repeat of the player's own earlier move, in any spelling the game reads: answered with the
    state, not refused."""
    if ply >= len(own.moves):
        return False
    position = _positions(own.game, own.moves)[ply]
    try:
        return position.turn == own.seat and position.format_move(position.parse_move(move)) == own.moves[ply]
    except Exception:  # (not a move here at all)
        return False


def own_move(choices: Choices, arena: Arena) -> FuzzCase:
    """In the player's own match, on its turn: a move for another ply, or an illegal one for this ply."""
    own = pick(choices, arena.own)
    position = _positions(own.game, own.moves)[-1]
    legal = [position.format_move(move) for move in position.legal_moves()]
    current = len(own.moves)
    if chance(choices, 2):
        ply = pick(choices, (current + 1, 0, max(0, current - 1), current + 2, MAX_SAFE_INTEGER))
        move = pick(choices, legal) if chance(choices, 2) else Text(1, 32).example(choices)
        if ply == current or _is_resend(own, ply, move):
            ply = current + 1
        expected, kind = {"stale_ply"}, "stale_ply"
    else:
        ply = current
        candidates = (*own.moves, pick(choices, legal).upper() + "x", "pass", "a9", "0-0", "33-38", "0",
                      Text(1, 32).example(choices))  # fmt: skip
        move = pick(choices, candidates)
        if _plays(position, move):
            move = "~"  # no game has such a move
        expected, kind = {"illegal_move"}, "illegal_move"
    message = request(choices, "move", match_id=own.match_id, ply=ply, move=move)
    return _case(kind, choices, encode(message, choices), expected, _ids(message), PLAYER)


def own_not_allowed(choices: Choices, arena: Arena) -> FuzzCase:
    """Answering offers never made, joining twice, aborting too late. (Offering a rematch mid-game is
    allowed: it starts as the game ends.)"""
    own = pick(choices, arena.own)
    kinds = [
        "draw.accept",
        "draw.decline",
        "rematch.accept",
        "rematch.decline",
        "takeback.accept",
        "takeback.decline",
    ]
    kinds.append("match.join")
    if len(own.moves) >= 2:
        kinds.append("abort")
    message = request(choices, pick(choices, kinds), match_id=own.match_id)
    return _case("not_allowed", choices, encode(message, choices), {"not_allowed"}, _ids(message), PLAYER)


def bad_chat(choices: Choices, arena: Arena) -> FuzzCase:
    own = pick(choices, arena.own)
    if chance(choices, 3):
        line = pick(choices, BLANKS)
    elif chance(choices, 2):  # within what the wire takes, too long once stripped
        line = " " + "c" * (MAX_CHAT_LENGTH + pick(choices, (1, 50, 400))) + " "
    else:
        refused = CONTROL_CHARACTERS + BIDI_CONTROLS
        line = "hi " + pick(choices, refused) + " " + text(choices, 0, 150).strip()[:150] + "!"
    message = request(choices, "chat", match_id=own.match_id, text=line)
    return _case("bad_chat", choices, encode(message, choices), {"bad_field"}, _ids(message), PLAYER)


def bad_create(choices: Choices, arena: Arena) -> FuzzCase:
    if chance(choices, 2):
        game = text(choices, 1, 32)
        if game in arena.games:
            game = game[:31] + "?"
        message = request(choices, "match.create", game=game)
        expected = {"not_found"}
    elif chance(choices, 2):
        control = pick(choices, BAD_TIME_CONTROLS)
        message = request(choices, "match.create", game=pick(choices, arena.games), time_control=control)
        expected = {"bad_field"}
    else:  # a bot asked for where no bot can find the match
        game, level = pick(choices, arena.games), pick(choices, (1, 2, 3))
        message = request(choices, "match.create", game=game, visibility="private", bot={"level": level})
        expected = {"bad_field"}
    return _case("bad_create", choices, encode(message, choices), expected, _ids(message), PLAYER)


def _case(
    kind: str,
    choices: Choices,
    frame: bytes,
    expected: set[str],
    reply_ids: frozenset[RequestId],
    role: str | None = None,
) -> FuzzCase:
    binary = chance(choices, 4)
    return FuzzCase(kind, role or _role(choices), frame, binary, frozenset(expected), reply_ids)


BUILDERS: tuple[Builder, ...] = (
    not_json, truncated, unknown_type, bad_type, missing_field, unknown_field, wrong_value, bad_id,
    oversized, not_standard_json, broken_text, deep_nesting,
    before_hello, forged_token, forged_fleet_key, bad_name, second_hello, unknown_match, others_match,
    own_move, own_not_allowed, bad_chat, bad_create,
)  # fmt: skip
"""Every way of going wrong, simple first (hypothesis shrinks towards the start of the list)."""


CASE_KINDS = frozenset({
    "not_json", "truncated", "unknown_type", "bad_type", "missing_field", "unknown_field", "wrong_value",
    "bad_id", "oversized", "not_standard_json", "invalid_utf8", "lone_surrogate", "deep_nesting",
    "before_hello", "forged_token", "forged_fleet_key", "bad_name", "second_hello", "unknown_match",
    "spectator_action", "outsider_action", "stale_ply", "illegal_move", "not_allowed", "bad_chat",
    "bad_create",
})  # fmt: skip
"""The ``kind`` of every case :data:`BUILDERS` make."""


def fuzz_case(choices: Choices, arena: Arena) -> FuzzCase:
    """One bad message for ``arena``, and how it must be answered."""
    case = pick(choices, BUILDERS)(choices, arena)
    if not case.binary and not _is_utf8(case.frame):
        # Text that is not UTF-8 fails the connection (close code 1007, as RFC 6455 requires; tests/
        # test_fuzz.py checks that on its own): here, where the connections must stay, it goes binary.
        case = replace(case, binary=True)
    if len(case.frame) > arena.limits.message_bytes:  # the size is checked before anything else
        case = FuzzCase(
            case.kind, case.role, case.frame, case.binary, frozenset({"frame_too_large"}),
            case.reply_ids if case.kind == "oversized" else case.reply_ids | _NOT_READ,
        )  # fmt: skip
    elif case.binary:  # requests come in text frames: a binary one is refused unread, whatever it holds
        case = FuzzCase(
            case.kind, case.role, case.frame, case.binary, frozenset({"binary_frame"}),
            case.reply_ids | _NOT_READ,
        )  # fmt: skip
    assert len(case.frame) <= arena.limits.frame_bytes, "a larger frame would close the connection"
    return case


def _is_utf8(frame: bytes) -> bool:
    try:
        frame.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@dataclass
class FuzzTally:
    """What a fuzzing run sent and how it was answered."""

    sent: int = 0
    by_code: dict[str, int] = field(default_factory=dict)
    by_kind: dict[str, int] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)
    """Cases answered otherwise than the protocol says (at most the first 20 are kept)."""
    wrong_count: int = 0

    def record(self, case: FuzzCase, reply: dict[str, Json] | None) -> str | None:
        """Count ``reply`` to ``case``; a description of what is wrong with it, if anything."""
        self.sent += 1
        self.by_kind[case.kind] = self.by_kind.get(case.kind, 0) + 1
        code = reply.get("code") if reply is not None and reply.get("type") == "error" else None
        label = code if code is not None else ("no answer" if reply is None else f"a {reply.get('type')}")
        self.by_code[label] = self.by_code.get(label, 0) + 1
        problem = answer_problem(case, reply)
        if problem is not None:
            self.wrong_count += 1
            if len(self.wrong) < 20:
                self.wrong.append(problem)
        return problem


def answer_problem(case: FuzzCase, reply: dict[str, Json] | None) -> str | None:
    """``None`` if ``reply`` is an answer the protocol allows to ``case``, else what is wrong."""
    if reply is None:
        return f"no answer to {case.describe()}"
    if reply.get("type") != "error" or reply.get("code") not in case.expected:
        return f"{case.describe()}\n  expected an error {sorted(case.expected)}, got {reply}"
    if reply.get("id") not in case.reply_ids or "id" not in reply:
        return f"{case.describe()}\n  the error should carry an id in {set(case.reply_ids)}: {reply}"
    if not reply.get("message"):
        return f"{case.describe()}\n  the error says nothing: {reply}"
    return None
