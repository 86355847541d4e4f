"""Plain records that cross the storage boundary.

The rest of the server reads and writes these frozen records and never
touches ORM objects, so sessions stay inside :mod:`server.storage` and a record
can be handed to any coroutine safely.

They are ``msgspec`` structs rather than dataclasses, as are the match's effects
and clock: a frozen dataclass's ``__init__`` sets each field through
``object.__setattr__``, a struct's is in C, and a move makes several of each
(docs/performance.md, "msgspec from the wire to the rows"). Holding values only,
none can close a reference cycle, so none is tracked by the garbage collector.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec


class PlayerRecord(msgspec.Struct, frozen=True, gc=False):
    """A person or bot known to the server. The token itself is never stored, only its hash."""

    id: str
    name: str
    is_bot: bool
    created_at: datetime
    claimed: bool = False
    """Whether the player's name is claimed with a password (logging in from anywhere gives them back)."""


class SeatRecord(msgspec.Struct, frozen=True, gc=False):
    """Who holds a seat of a match (seat 0 moves first)."""

    seat: int
    player_id: str
    player_name: str
    is_bot: bool


class EngineInfo(msgspec.Struct, frozen=True, gc=False):
    """What a bot's search said about the move it sent, kept for replays and eval graphs.

    ``source`` is where the move came from (``book``, ``solved`` or ``searched``; ``None`` when the bot
    did not say), ``time_ms`` the bot's own time for it.
    """

    score: int | None = None
    depth: int | None = None
    nodes: int | None = None
    pv: tuple[str, ...] = ()
    source: str | None = None
    time_ms: int | None = None


class MoveRecord(msgspec.Struct, frozen=True, gc=False):
    """One ply of a match, as committed.

    ``clocks_ms`` are both seats' remaining times right after the move (``None``
    for untimed matches); ``think_ms`` is how long the mover took.
    """

    match_id: str
    ply: int
    seat: int
    notation: str
    think_ms: int
    played_at: datetime
    clocks_ms: tuple[int, int] | None = None
    engine: EngineInfo | None = None


class ChatRecord(msgspec.Struct, frozen=True, gc=False):
    """One chat line of a match, numbered by the ``seq`` of the ``chat`` event that carried it."""

    match_id: str
    seq: int
    seat: int
    name: str
    text: str
    said_at: datetime


class MatchFinish(msgspec.Struct, frozen=True, gc=False):
    """How a match ended, written in the same transaction as its last move when a move ends it."""

    status: str  # "finished" or "aborted"
    winner: int | None  # winning seat, None for a draw or an abort
    reason: str
    finished_at: datetime


class MatchRecord(msgspec.Struct, frozen=True, gc=False):
    """A match with its seats and, when loaded in full, its moves.

    ``status`` is one of ``open`` (waiting for players), ``live``, ``finished``,
    ``aborted``. ``options`` holds the creation options as JSON-ready data (time
    control, visibility, bot request, ...).
    """

    id: str
    game: str
    options: dict[str, Any]
    status: str
    host: str
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    winner: int | None = None
    reason: str | None = None
    seats: tuple[SeatRecord, ...] = ()
    moves: tuple[MoveRecord, ...] = ()
    rematch_of: str | None = None  # the match this one is a rematch of
    rematch_id: str | None = None
    """This match's rematch, once started: only in a match loaded whole (:meth:`Store.get_match`)."""
    chat: tuple[ChatRecord, ...] = ()
    """The last chat lines, oldest first: only for the unfinished matches a restarted server restores."""
    chat_count: int = 0
    """How many chat lines the match has stored in all (``chat`` holds only the last): likewise."""
