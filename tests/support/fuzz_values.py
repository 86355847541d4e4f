"""Protocol v1 requests as docs/protocol.md describes them, field by field, and values to break them with.

Each request field is a :class:`Field` that knows what it accepts and can make
a value it must refuse: out of range, of another JSON type, null, nested junk,
huge numbers, long or unicode text with NUL and control characters. Every
decision goes through :class:`Choices`, one method ``integer(low, high)``, so a
hypothesis strategy can make them (and shrink a failure towards small integers:
option lists below put the simple before the nasty) as well as a seeded
:class:`random.Random` (fast, and no test dependency).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from server.protocol_base import (
    MAX_CHAT_LENGTH,
    MAX_FLEET_KEY_LENGTH,
    MAX_MOVE_LENGTH,
    MAX_NAME_LENGTH,
    PV_MOVE_PATTERN,
    RAW_TEXT_ALLOWANCE,
)

T = TypeVar("T")
Json = Any
RequestId = int | str | None

MAX_SAFE_INTEGER = 2**53


class Choices(Protocol):
    """Where every decision of the generator comes from."""

    def integer(self, low: int, high: int) -> int:
        """A whole number from ``low`` to ``high``, both included."""
        ...


@dataclass(slots=True)
class RandomChoices:
    """Choices from a seeded random generator: reproducible, and fast enough for 100,000 cases."""

    rng: random.Random

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)


def pick(choices: Choices, options: Sequence[T]) -> T:
    return options[choices.integer(0, len(options) - 1)]


def chance(choices: Choices, one_in: int) -> bool:
    return choices.integer(1, one_in) == 1


# --------------------------------------------------------------------------- values


_ALPHABETS = (
    "abcxyz0189",
    "ABZ-_.:+ ~",
    "éßø中文😀𝕏",  # beyond ASCII, astral characters included
    "\u202e\u200b\ufeff\u00a0\u3000",  # bidi override, zero-width space, BOM, no-break and wide spaces
    "'\";-\\/*%<>{}[]",  # quotes, SQL- and JSON-looking bits
    "\x00\x07\x1b\x7f\x85\u2028\t\n",  # NUL and other control characters
)
_NASTY_TEXTS = (
    "Robert'); DROP TABLE players;--",
    "' OR '1'='1",
    '"; DELETE FROM moves WHERE 1=1; --',
    "<script>alert(1)</script>",
    "../../etc/passwd",
    "%s%s%n${jndi:ldap://x}",
    "null",
    "NaN",
    "\x00",
    "a\x00b",
    "\u202eevil",
    "𝕏" * 8,
)
CONTROL_CHARACTERS = "\x00\x01\x07\x08\x1b\x7f\x85\x9f\u2028\u2029"
"""Characters the doc calls control characters, refused inside names and chat."""
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""Embeddings, overrides and isolates, which turn the direction of the text after them: refused in names
and chat."""
INVISIBLE_CHARACTERS = "\u200b\u200c\u200d\u200e\u200f\u061c\u2060\ufeff\u00ad"
"""Zero-width characters and direction marks (format characters): refused in names, allowed in chat."""
BLANKS = (" ", "  ", "\t", "\n \n", "\u3000", "\u00a0", " \x1f ")
"""Text that is nothing once stripped of surrounding whitespace."""


def text(choices: Choices, low: int, high: int) -> str:
    """Text of ``low`` to ``high`` characters (code points), from every alphabet above."""
    length = choices.integer(low, high)
    if length and chance(choices, 8):
        nasty = pick(choices, _NASTY_TEXTS)
        return (nasty * (length // len(nasty) + 1))[:length]
    if length > 24:  # long text: repeat a short random chunk (fast to draw, still mixed)
        chunk = text(choices, 1, 12)
        return (chunk * (length // len(chunk) + 1))[:length]
    return "".join(pick(choices, pick(choices, _ALPHABETS)) for _ in range(length))


def junk(choices: Choices, depth: int = 0) -> Json:
    """Any JSON value: nulls, booleans, huge and fractional numbers, text, arrays, objects, nesting."""
    kind = choices.integer(0, 11 if depth < 3 else 7)
    match kind:
        case 0:
            return None
        case 1:
            return pick(choices, (True, False))
        case 2:
            return pick(choices, (0, -1, 1, 2, 255, -(2**31), 2**31, 2**53 + 1, -(2**63), 2**64, 10**30))
        case 3:
            return pick(choices, (0.5, -0.0, 1.0, 1e308, -2.5e-300, 3.14159))
        case 4 | 5:
            return text(choices, 0, 40)
        case 6:
            return ""
        case 7:
            return []
        case 8:
            return [junk(choices, depth + 1) for _ in range(choices.integer(1, 3))]
        case 9:
            return {text(choices, 0, 8): junk(choices, depth + 1) for _ in range(choices.integer(1, 3))}
        case 10:
            return {}
        case _:
            levels = choices.integer(2, 50)
            return nested(levels, junk(choices, 3))


def nested(levels: int, inside: Json) -> Json:
    value = inside
    for level in range(levels):
        value = [value] if level % 2 else {"a": value}
    return value


class Field:
    """A request field as docs/protocol.md describes it: what it accepts, and values it must refuse."""

    required = False

    def accepts(self, value: Json) -> bool:
        raise NotImplementedError

    def example(self, choices: Choices) -> Json:
        """A value the field accepts."""
        raise NotImplementedError

    def out_of_range(self, choices: Choices) -> Json:
        """A value of the right JSON type that the field refuses (or any junk)."""
        return junk(choices)

    def wrong(self, choices: Choices) -> Json:
        """A value the field refuses: out of range, of another type, null, nested junk..."""
        for _ in range(8):
            value = self.out_of_range(choices) if chance(choices, 2) else junk(choices)
            if not self.accepts(value):
                return value
        return [[], {}]  # no field of the protocol accepts this


@dataclass(frozen=True)
class Text(Field):
    low: int
    high: int
    required: bool = False
    wire_high: int | None = None
    """What the wire itself takes, when the limit counts text after cleaning (names, chat): longer
    text is refused as it is read, shorter text by the server once cleaned."""

    def accepts(self, value: Json) -> bool:
        """Whether the wire takes ``value``. Text within ``wire_high`` that the server refuses once cleaned
        is read as a valid request, so the request's context is checked first (a second ``hello`` is
        ``not_allowed`` whatever its name): such text belongs to the cases that set that context."""
        return isinstance(value, str) and self.low <= len(value) <= (self.wire_high or self.high)

    def example(self, choices: Choices) -> Json:
        return text(choices, self.low, self.high)

    def out_of_range(self, choices: Choices) -> Json:
        if self.low > 0 and chance(choices, 3):
            return ""
        high = self.wire_high or self.high
        return text(choices, high + 1, high + pick(choices, (1, 10, 300)))


@dataclass(frozen=True)
class Identifier(Field):
    """Lower-case ASCII words such as a bot style: a letter, then letters, digits, ``_`` or ``-``."""

    high: int
    required: bool = False

    def accepts(self, value: Json) -> bool:
        return isinstance(value, str) and len(value) <= self.high and _IDENTIFIER.fullmatch(value) is not None

    def example(self, choices: Choices) -> Json:
        return pick(choices, ("alphabeta", "expectimax", "minimax", "x", "deep-2", "e_greedy"))

    def out_of_range(self, choices: Choices) -> Json:
        if chance(choices, 2):
            return pick(
                choices,
                ("", "Sharp", "9lives", "alpha beta", "alpha\u202ebeta", "alpha\n", "-x", "ø", "a" * 33),
            )
        return text(choices, 1, self.high)


_IDENTIFIER = re.compile(r"[a-z][a-z0-9_-]*")


@dataclass(frozen=True)
class Notation(Field):
    """A move as a principal variation names it: ASCII letters, digits and ``-+#=*``, a letter or digit
    first, at most ``MAX_MOVE_LENGTH`` characters."""

    required: bool = False

    def accepts(self, value: Json) -> bool:
        return isinstance(value, str) and len(value) <= MAX_MOVE_LENGTH and _PV_MOVE.match(value) is not None

    def example(self, choices: Choices) -> Json:
        return pick(choices, ("4", "b2", "d3", "pass", "11-15", "22x15x8", "e8=Q+", "K*"))

    def out_of_range(self, choices: Choices) -> Json:
        if chance(choices, 2):
            return pick(choices, ("", "e4 e5", "a\n", "-x", "aé", "a\u200b", "１", "<b>", "a" * 33))
        return text(choices, 1, MAX_MOVE_LENGTH)


_PV_MOVE = re.compile(PV_MOVE_PATTERN)


@dataclass(frozen=True)
class Integer(Field):
    low: int
    high: int
    required: bool = False

    def accepts(self, value: Json) -> bool:
        return type(value) is int and self.low <= value <= self.high

    def example(self, choices: Choices) -> Json:
        options = (self.low, self.high, self.low + 1, min(self.high, self.low + 7))
        return pick(choices, options)

    def out_of_range(self, choices: Choices) -> Json:
        return pick(choices, (self.low - 1, self.high + 1, self.high + 10**20, self.low - 10**20, 10**400))


@dataclass(frozen=True)
class Boolean(Field):
    required: bool = False

    def accepts(self, value: Json) -> bool:
        return isinstance(value, bool)

    def example(self, choices: Choices) -> Json:
        return pick(choices, (False, True))

    def out_of_range(self, choices: Choices) -> Json:
        return pick(choices, (0, 1, "true", None))


@dataclass(frozen=True)
class OneOf(Field):
    """One of a few values (JSON types matter: ``true`` is not ``1``)."""

    values: tuple[Json, ...]
    required: bool = False

    def accepts(self, value: Json) -> bool:
        return any(type(value) is type(option) and value == option for option in self.values)

    def example(self, choices: Choices) -> Json:
        return pick(choices, self.values)

    def out_of_range(self, choices: Choices) -> Json:
        return pick(choices, (2, -1, True, "Random", "any", "PUBLIC", "secret", 0.0))


@dataclass(frozen=True)
class Either(Field):
    options: tuple[Field, ...]
    required: bool = False

    def accepts(self, value: Json) -> bool:
        return any(option.accepts(value) for option in self.options)

    def example(self, choices: Choices) -> Json:
        return pick(choices, self.options).example(choices)

    def out_of_range(self, choices: Choices) -> Json:
        return pick(choices, self.options).out_of_range(choices)


@dataclass(frozen=True)
class Null(Field):
    def accepts(self, value: Json) -> bool:
        return value is None

    def example(self, choices: Choices) -> Json:
        return None


@dataclass(frozen=True)
class ListOf(Field):
    item: Field
    high: int

    def accepts(self, value: Json) -> bool:
        return isinstance(value, list) and len(value) <= self.high and all(map(self.item.accepts, value))

    def example(self, choices: Choices) -> Json:
        return [self.item.example(choices) for _ in range(choices.integer(0, 3))]

    def out_of_range(self, choices: Choices) -> Json:
        if chance(choices, 2):
            return ["e4"] * (self.high + 1)
        return [*self.example(choices), self.item.wrong(choices)]


@dataclass(frozen=True)
class Record(Field):
    """A JSON object with known fields only (``engine``, ``bot``)."""

    fields: dict[str, Field]
    required: bool = False

    def accepts(self, value: Json) -> bool:
        if not isinstance(value, dict) or not set(value) <= set(self.fields):
            return False
        if any(spec.required and name not in value for name, spec in self.fields.items()):
            return False
        return all(self.fields[name].accepts(item) for name, item in value.items())

    def example(self, choices: Choices) -> Json:
        return {
            name: spec.example(choices)
            for name, spec in self.fields.items()
            if spec.required or chance(choices, 2)
        }

    def out_of_range(self, choices: Choices) -> Json:
        value = self.example(choices)
        name = pick(choices, sorted(self.fields))
        if chance(choices, 3):
            value["surprise"] = junk(choices)
        elif self.fields[name].required and chance(choices, 2):
            del value[name]
        else:
            value[name] = self.fields[name].wrong(choices)
        return value


def nullable(spec: Field) -> Field:
    return Either((spec, Null()))


# The requests of docs/protocol.md, field by field ("id" and "type" aside).
MATCH_ID = Text(1, 64, required=True)
REQUEST_ID = Either((Integer(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER), Text(0, 64), Null()))
NAME = Text(1, MAX_NAME_LENGTH, wire_high=RAW_TEXT_ALLOWANCE * MAX_NAME_LENGTH)
ENGINE = Record({
    "score": nullable(Integer(-(10**9), 10**9)),
    "depth": nullable(Integer(0, 2**31 - 1)),
    "nodes": nullable(Integer(0, MAX_SAFE_INTEGER)),
    "pv": ListOf(Notation(), 64),
    "time_ms": nullable(Integer(0, MAX_SAFE_INTEGER)),
    "source": nullable(OneOf(("book", "solved", "searched"))),
})  # fmt: skip
OFFERS_AND_ENDINGS = ("resign", "draw.offer", "draw.accept", "draw.decline", "abort",
                      "rematch.offer", "rematch.accept", "rematch.decline",
                      "takeback.offer", "takeback.accept", "takeback.decline")  # fmt: skip
"""The requests that take just a ``match_id``."""
BOT = Record({"level": Integer(1, 99, required=True), "style": nullable(Identifier(32))})
SCHEMAS: dict[str, dict[str, Field]] = {
    "hello": {
        "name": nullable(NAME),
        "token": nullable(Text(1, 128)),
        "password": nullable(Text(1, 256)),
        "bot": Boolean(),
        "fleet_key": nullable(Text(1, MAX_FLEET_KEY_LENGTH)),
    },
    "lobby.subscribe": {},
    "lobby.unsubscribe": {},
    "account.register": {"password": Text(1, 256, required=True), "name": nullable(NAME)},
    "account.logout": {"everywhere": Boolean()},
    "match.create": {
        "game": Text(1, 32, required=True),
        "time_control": Text(1, 16),
        "seat": OneOf((0, 1, "random")),
        "visibility": OneOf(("public", "private")),
        "bot": nullable(BOT),
        "rated": Boolean(),
    },
    "match.join": {"match_id": MATCH_ID, "seat": nullable(Integer(0, 1))},
    "match.watch": {
        "match_id": MATCH_ID,
        "since": nullable(Integer(0, MAX_SAFE_INTEGER)),
        "log": nullable(Text(0, 64)),
    },
    "match.leave": {"match_id": MATCH_ID},
    "move": {
        "match_id": MATCH_ID,
        "ply": Integer(0, MAX_SAFE_INTEGER, required=True),
        "move": Text(1, 32, required=True),
        "engine": nullable(ENGINE),
    },
    **{action: {"match_id": MATCH_ID} for action in OFFERS_AND_ENDINGS},
    "chat": {
        "match_id": MATCH_ID,
        "text": Text(1, MAX_CHAT_LENGTH, required=True, wire_high=RAW_TEXT_ALLOWANCE * MAX_CHAT_LENGTH),
    },
    "pool.join": {
        "game": Text(1, 32, required=True),
        "time_control": Text(1, 16, required=True),
        "rated": Boolean(),
    },
    "pool.leave": {},
    "pool.accept_bot": {},
}
MATCH_ACTIONS = ("move", *OFFERS_AND_ENDINGS, "chat")
MATCH_REQUESTS = ("match.join", "match.watch", "match.leave", *MATCH_ACTIONS)
BAD_TIME_CONTROLS = ("9", "5+", "+3", "fast", "5+181", "181+0", "999+0", "0+0", "0:00+5", "1:60+0", "-1+0",
                     "5+3+1", "5 3", "5.5+0", "1e3+0", "untimed+1", "5+-1", "∞")  # fmt: skip
"""Time controls of the right shape (1-16 characters) that docs/protocol.md does not allow."""


def request(choices: Choices, kind: str, **fields: Json) -> dict[str, Json]:
    """A request of type ``kind`` that every field accepts: ``fields`` as given, the rest drawn."""
    message: dict[str, Json] = {"type": kind}
    request_id = request_id_for(choices)
    if request_id is not None or chance(choices, 8):
        message["id"] = request_id
    for name, spec in SCHEMAS[kind].items():
        if name in fields:
            if fields[name] is not ABSENT:
                message[name] = fields[name]
        elif spec.required or chance(choices, 3):
            message[name] = spec.example(choices)
    return message


ABSENT = object()
"""A field to leave out of :func:`request`."""


def request_id_for(choices: Choices) -> RequestId:
    return pick(
        choices,
        (1, None, 0, 42, -7, MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, "r1", "", "ü-中-😀", "x" * 64, "'; --"),
    )


# --------------------------------------------------------------------------- frames


def encode(message: Json, choices: Choices) -> bytes:
    """JSON as UTF-8, with non-ASCII text either escaped or raw, keys in the order given."""
    return json.dumps(message, ensure_ascii=chance(choices, 2), allow_nan=False).encode()
