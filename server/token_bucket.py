"""A rate limit by token bucket: each connection's, and each client address's (server/addresses.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class TokenBucket:
    """A rate limit: ``burst`` requests at once, refilled at ``rate`` per second."""

    rate: float
    burst: int
    tokens: float = field(init=False)
    updated: float | None = None

    def __post_init__(self) -> None:
        self.tokens = float(self.burst)

    def take(self, now: float) -> bool:
        """Spend one token if there is one; ``False`` means the request is over the limit."""
        tokens = self.tokens
        if self.updated is not None:
            tokens += (now - self.updated) * self.rate
            if tokens > self.burst:  # (not ``min``: a builtin's call, for every request)
                tokens = float(self.burst)
        self.updated = now
        if tokens < 1:
            self.tokens = tokens
            return False
        self.tokens = tokens - 1
        return True
