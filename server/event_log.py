"""A match's recent events, kept so that a client reconnecting can ask only for what it missed."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from server.protocol import MatchEvent


@dataclass(slots=True)
class EventLog:
    """The last ``capacity`` events of a match, for clients that reconnect and ask what they missed.

    ``id`` names this log: sequence numbers only mean something within one log,
    and a restarted server starts new logs, so a client presenting another log's
    numbers gets a full state instead of a wrong guess.
    """

    id: str
    capacity: int
    events: deque[MatchEvent] = field(init=False)
    last_seq: int = 0

    def __post_init__(self) -> None:
        self.events = deque(maxlen=self.capacity)

    def append(self, events: Sequence[MatchEvent]) -> None:
        if events:
            self.events.extend(events)  # (the oldest go past ``capacity``)
            self.last_seq = events[-1].seq

    def since(self, log_id: str | None, seq: int | None) -> list[MatchEvent] | None:
        """Every event after ``seq``, or ``None`` when this log cannot say (another log, or too far back)."""
        if log_id != self.id or seq is None or seq > self.last_seq:
            return None
        first = self.events[0].seq if self.events else self.last_seq + 1
        if seq < first - 1:
            return None
        return [event for event in self.events if event.seq > seq]
