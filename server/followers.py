"""What a match's followers are sent besides its events: the full state or the catch-up when they start
following, and how many watch.

The spectator count is told to the followers when it changes, at most once a second, so that a crowd
arriving or leaving does not flood the players with counts. A spectator is a follower without a seat,
counted once per player however many connections (tabs) it has; a connection that never said hello is
one spectator of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import msgspec

from server.connection import Connection, push_to
from server.match import LIVE, Match
from server.protocol import (
    AnyMatchEvent,
    MatchCatchup,
    MatchEvent,
    MatchState,
    RequestId,
    SpectatorCount,
    encode,
)

if TYPE_CHECKING:
    from server.registry import LiveMatch

SPECTATOR_UPDATE_INTERVAL_S = 1.0
"""The least time between two ``match.spectators`` messages of one match."""


def spectators_of(match: Match, followers: Iterable[Connection]) -> int:
    """The distinct viewers among ``followers`` that hold no seat in ``match``."""
    viewers: set[object] = set()
    for connection in followers:
        player_id = connection.player_id
        if player_id is None:
            viewers.add(connection)
        elif match.seat_of(player_id) is None:
            viewers.add(player_id)
    return len(viewers)


def state_for(live: LiveMatch, viewer: Connection, now: float, request_id: RequestId) -> MatchState:
    """The full ``match.state`` of ``live`` for ``viewer``, in reply to ``request_id`` (``viewer`` counted
    among the spectators: the state is what it starts following with)."""
    state = live.match.state(log=live.log.id, now=now, viewer=viewer.player_id)
    spectators = spectators_of(live.match, (*live.watchers, viewer))
    return msgspec.structs.replace(state, id=request_id, spectators=spectators)


def catchup_for(live: LiveMatch, missed: list[MatchEvent], now: float, request_id: RequestId) -> MatchCatchup:
    """The ``match.catchup`` of the events ``missed`` in ``live``, with both clocks as they are now."""
    match = live.match
    return MatchCatchup(
        match_id=live.id,
        log=live.log.id,
        seq=match.seq,
        events=cast("list[AnyMatchEvent]", missed),  # (the log holds only concrete events)
        clocks_ms=match.clocks_ms(now),
        clock_running=match.clock.running if match.clock and match.status == LIVE else None,
        id=request_id,
    )


@dataclass(eq=False, slots=True)
class SpectatorTally:
    """One match's count as last told to its followers, and the timer of the next telling, if due."""

    told: int = 0
    told_at: float = float("-inf")
    timer: asyncio.TimerHandle | None = None

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class SpectatorCounter:
    """Tells each match's followers its spectator count when it has changed, rate-limited per match."""

    def __init__(self, now: Callable[[], float], interval_s: float = SPECTATOR_UPDATE_INTERVAL_S) -> None:
        self.now = now
        self.interval_s = interval_s

    def changed(self, live: LiveMatch) -> None:
        """The followers of ``live`` changed: tell them the count now, or once the interval since the last
        telling is over (one timer per match, whatever happens meanwhile)."""
        tally = live.spectators
        if tally.timer is not None:
            return
        wait = tally.told_at + self.interval_s - self.now()
        if wait <= 0:
            self._tell(live)
        else:
            tally.timer = asyncio.get_running_loop().call_later(wait, self._tell, live)

    def _tell(self, live: LiveMatch) -> None:
        tally = live.spectators
        tally.timer = None
        spectators = spectators_of(live.match, live.watchers)
        if spectators == tally.told:
            return
        tally.told, tally.told_at = spectators, self.now()
        push_to(live.watchers, encode(SpectatorCount(match_id=live.id, spectators=spectators)))
