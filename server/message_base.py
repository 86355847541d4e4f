"""The bases every message of protocol v1 shares, apart so that groups of messages
(server/account_messages.py) can live in modules of their own beside server/protocol.py, which gathers
them all."""

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
