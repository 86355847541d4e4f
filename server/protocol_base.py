"""The bases every message of the protocol builds on, and the parts that messages of several modules share.

server/protocol.py holds the messages themselves (and re-exports these names); a module of messages of its
own (server/pool_protocol.py, server/account_messages.py) builds on these without importing it, so that
the union of every request in server/protocol.py may list its messages.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

from server.decoding import RequestId

MAX_NAME_LENGTH = 32
RAW_TEXT_ALLOWANCE = 4
"""Names and chat are limited after they are normalised and stripped (server/text.py); the wire takes
up to this many times more, for decomposed accents and surrounding spaces."""
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=RAW_TEXT_ALLOWANCE * MAX_NAME_LENGTH)]


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
