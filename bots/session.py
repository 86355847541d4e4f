"""What a bot knows of one match it holds a seat in (:class:`bots.client.BotPlayer` keeps one per match)."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field

from bots import wire
from bots.capacity import Ticket
from bots.timing import Clock
from games import Position


def move_seed(match_seed: int, ply: int) -> int:
    """The seed of the search for ``ply`` of a match: the match's seed and the ply fix it, so that a
    search started again for the same ply (after a reconnection) chooses as the first one did."""
    return random.Random(f"{match_seed}/{ply}").getrandbits(32)


@dataclass(slots=True)
class MatchSession:
    """What a bot knows of one match it holds a seat in."""

    match_id: str
    seed: int = 0
    """Seeds the match's searches (:func:`move_seed`): their choices between equal moves, and noise."""
    ticket: Ticket | None = None
    """The fleet's place this game takes, given back when the game ends."""
    log: str | None = None
    """The event log the sequence numbers belong to; ``None`` until the first ``match.state``."""
    seq: int = 0
    game: str = ""
    status: str = "open"
    you: int | None = None
    moves: list[str] = field(default_factory=list)
    position: Position | None = None
    time_control: str = "untimed"
    clocks_ms: list[int] | None = None
    clocks_seen_at: float = 0.0
    """``time.monotonic()`` when ``clocks_ms`` arrived: the running clock has ticked since."""
    last_score: int | None = None
    thinking: asyncio.Task[None] | None = None
    thinking_ply: int = -1
    """The ply ``thinking`` chooses (and, once chosen, keeps sending) a move for."""
    rematch_ticket: Ticket | None = None
    leave_timer: asyncio.TimerHandle | None = None
    taken_over: bool = False
    """Handed over by a bot of the same player at another server: followed here, even before a state."""

    @property
    def ply(self) -> int:
        return len(self.moves)

    @property
    def our_turn(self) -> bool:
        return self.status == "live" and self.position is not None and self.position.turn == self.you

    @property
    def over(self) -> bool:
        return self.status in ("finished", "aborted")

    def any_move(self) -> str:
        """A random legal move: better than losing on time when the pool cannot search."""
        assert self.position is not None
        rng = random.Random(move_seed(self.seed, self.ply))
        return self.position.format_move(rng.choice(self.position.legal_moves()))

    def clock(self) -> Clock | None:
        """Our clock now, or ``None`` when untimed."""
        if self.clocks_ms is None or self.you is None:
            return None
        elapsed_ms = (time.monotonic() - self.clocks_seen_at) * 1000 if self.our_turn else 0.0
        remaining = max(0, int(self.clocks_ms[self.you] - elapsed_ms))
        return Clock(remaining, wire.increment_ms(self.time_control))
