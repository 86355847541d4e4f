"""Stable error codes of protocol v1, and the one exception that carries them.

A code is part of the protocol: clients and bots branch on it, so a code never
changes meaning. The message beside it is for people and may be reworded.
"""

from __future__ import annotations

from enum import StrEnum

from server.storage.errors import (
    ConflictError,
    DuplicateMoveError,
    NameTakenError,
    NotFoundError,
    SeatTakenError,
    StorageError,
)


class ErrorCode(StrEnum):
    """Every ``code`` an ``error`` message can carry (documented in docs/protocol.md)."""

    BAD_JSON = "bad_json"
    """The frame is not a JSON object."""
    UNKNOWN_TYPE = "unknown_type"
    """The ``type`` names no client message."""
    BAD_FIELD = "bad_field"
    """A field is missing, unknown, of the wrong type or out of range."""
    HELLO_REQUIRED = "hello_required"
    """Anything but ``hello`` before the connection has said ``hello``."""
    BAD_TOKEN = "bad_token"
    """The token given to ``hello`` belongs to no player."""
    BAD_LOGIN = "bad_login"
    """A ``hello`` with a name and a password that do not go together: the name is claimed by nobody, or
    the password is not its own (one code for both, so that it tells no one which names are claimed)."""
    NAME_TAKEN = "name_taken"
    """``account.register`` for a name another player has claimed (compared without regard to case)."""
    BAD_FLEET_KEY = "bad_fleet_key"
    """The ``fleet_key`` given to ``hello`` is not this server's (or the server trusts no fleet key)."""
    NOT_A_FLEET = "not_a_fleet"
    """A ``bot.status`` note from a connection that did not prove the server's fleet key in its ``hello``."""
    NOT_FOUND = "not_found"
    """No match (or game) by that id."""
    HOSTED_ELSEWHERE = "hosted_elsewhere"
    """The match is open or live on another instance: its ``url`` (when known) is where to ask for it."""
    SEAT_TAKEN = "seat_taken"
    """The seat asked for, or every seat, is held by someone else."""
    NOT_A_PLAYER = "not_a_player"
    """The sender holds no seat in the match it tries to act in."""
    NOT_STARTED = "not_started"
    """The match still waits for a player."""
    NOT_YOUR_TURN = "not_your_turn"
    """A move from the seat that is not to move."""
    STALE_PLY = "stale_ply"
    """A move that answers a ply other than the current one."""
    ILLEGAL_MOVE = "illegal_move"
    """A move the rules refuse; the message is the rules' reason."""
    MATCH_OVER = "match_over"
    """The match has finished or been aborted."""
    NOT_ALLOWED = "not_allowed"
    """A well-formed request that is not allowed now (e.g. abort after both sides moved, a chat line in a
    match whose chat is full, a match past the open ones allowed to a player or an address)."""
    TOO_MANY_BOT_GAMES = "too_many_bot_games"
    """A request for another game against a bot (a ``match.create`` asking for one, a ``match.join`` into a
    bot's match, a rematch of a bot game) from a person who plays the most bot games they may at once."""
    FRAME_TOO_LARGE = "frame_too_large"
    """The frame exceeds the message size limit."""
    BINARY_FRAME = "binary_frame"
    """The request came in a binary frame: requests are JSON text, in text frames."""
    RATE_LIMITED = "rate_limited"
    """Too much, too fast: a request over its connection's rate limit (dropped), a chat line over its
    player's or its match's (dropped), a new player or a connection over its address's allowance, a login
    or registration over its address's or its name's, or while they are locked out after wrong passwords."""
    UNAVAILABLE = "unavailable"
    """Storage failed; nothing changed, the request may be retried."""
    INTERNAL = "internal"
    """A bug on the server; nothing changed."""


class ProtocolError(Exception):
    """A request refused with a stable :class:`ErrorCode` and a human message."""

    def __init__(self, code: ErrorCode, message: str, *, url: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.url = url
        """Where to go instead (``hosted_elsewhere``): the WebSocket URL of the match's host."""


class ServerStartError(Exception):
    """The server could not start: its database cannot be opened, or its port cannot be listened on.

    The message says which and why, in words an operator can act on (and with no password in it).
    """


def storage_failure(error: StorageError) -> ProtocolError:
    """The protocol error for a write the store refused; nothing of it was stored."""
    if isinstance(error, DuplicateMoveError):
        return ProtocolError(ErrorCode.STALE_PLY, str(error))
    if isinstance(error, SeatTakenError):
        return ProtocolError(ErrorCode.SEAT_TAKEN, str(error))
    if isinstance(error, NameTakenError):
        return ProtocolError(ErrorCode.NAME_TAKEN, str(error))
    if isinstance(error, NotFoundError):
        return ProtocolError(ErrorCode.NOT_FOUND, str(error))
    if isinstance(error, ConflictError):
        return ProtocolError(ErrorCode.NOT_ALLOWED, str(error))
    return ProtocolError(ErrorCode.UNAVAILABLE, f"not stored, try again: {error}")
