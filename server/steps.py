"""What an intent of :class:`~server.match.Match` returns: the next state, its events, and the effects
to commit before either counts.

The effects are values the storage layer turns into rows (:mod:`server.effect_rows`); the match
itself never sees a row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import msgspec

from server import protocol
from server.protocol import EngineInfo, MatchEvent, PlayerInfo

if TYPE_CHECKING:
    from server.match import Match


class Finish(msgspec.Struct, frozen=True, gc=False):
    """How a match ended, as stored."""

    status: str
    winner: int | None
    reason: str


class SaveSeat(msgspec.Struct, frozen=True, gc=False):
    seat: int
    player: PlayerInfo


class SaveStart(msgspec.Struct, frozen=True, gc=False):
    pass


class SaveMove(msgspec.Struct, frozen=True, gc=False):
    ply: int
    seat: int
    notation: str
    think_ms: int
    clocks_ms: tuple[int, int] | None
    engine: EngineInfo | None
    finish: Finish | None


class SaveFinish(msgspec.Struct, frozen=True, gc=False):
    finish: Finish


class SaveChat(msgspec.Struct, frozen=True, gc=False):
    """Store a chat line, numbered by its event's ``seq``, so a restarted server shows it again."""

    line: protocol.ChatLine


class TakeBack(msgspec.Struct, frozen=True, gc=False):
    """Remove the moves from ``ply`` on: the match takes them back (:mod:`server.offers`)."""

    ply: int


class CreateRematch(msgspec.Struct, frozen=True, gc=False):
    """Create and store ``match``, the live rematch, before announcing it."""

    match: Match


Effect: TypeAlias = SaveSeat | SaveStart | SaveMove | SaveFinish | SaveChat | TakeBack | CreateRematch


class Step(msgspec.Struct, frozen=True, gc=False):
    """The outcome of one intent: the next state, its events, and what to commit before either counts."""

    match: Match
    events: tuple[MatchEvent, ...] = ()
    effects: tuple[Effect, ...] = ()
    duplicate: bool = False
    """True for a move that repeats the move already played at its ply: nothing to do."""
    stored: bool = False
    """True for a step found in the store after its commit answer was lost: its effects are committed
    already (a rematch it starts is started all the same)."""
