"""What a fleet is told: the levels it offers, how many games it plays at once, and how it behaves."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field

from bots.link import DEFAULT_BACKOFF, Backoff
from bots.manners import DEFAULT_MANNERS, Manners
from bots.offer import parse_levels


def new_fleet_id() -> str:
    return f"fleet-{secrets.token_hex(3)}"


@dataclass(frozen=True, slots=True)
class FleetConfig:
    levels: dict[str, tuple[int, ...]] = field(default_factory=lambda: parse_levels(None))
    """Which levels of which games the fleet seats bots for."""
    max_games: int = 8
    idle_wait_s: float | None = 30.0
    """How long a person waits alone in a public match before a bot joins; ``None``: never."""
    public_level: int = 3
    """The level of the bot that joins a public match nobody joined."""
    fleet_id: str = field(default_factory=new_fleet_id)
    fleet_key: str | None = field(default=None, repr=False)
    """The servers' fleet key, said in every hello, so that they take the fleet's ``queued`` notes; without
    it the bots play all the same and the notes are refused (``not_a_fleet``). Kept out of ``repr``."""
    manners: Manners = DEFAULT_MANNERS
    backoff: Backoff = DEFAULT_BACKOFF
    restore_patience_s: float = 60.0
    """How long a bot brought back from the state file tries to reach its server (the servers' default
    grace: by then one that stayed up has forfeited its games anyway)."""
    host_patience_s: float = 3.0
    """How long a bot's server may be out of reach before its matches are looked for on other instances:
    no instance takes a match over before the host's lease (3 s at the least) lapses, and a server that
    restarts sooner is found by the bot's own reconnections."""
    follow_every_s: float = 0.5
    """How often the fleet asks another instance for a match whose host it looks for."""
