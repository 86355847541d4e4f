"""How often logins and registrations may be tried: per client address and per name.

Two limits, both in memory (an instance's own; a restart forgets them):

- **Attempts**: every login or registration spends one of its address's and one of its name's allowance
  (a token bucket), wrong or right. A flood from one address, or at one name from many, is refused.
- **Wrong passwords lock out**: past ``free`` wrong passwords in a row, each further one locks the name and
  the address for a window that doubles, up to ``max_lockout_s``. While locked, no password is checked.
  A login that succeeds clears its name's and its address's count.

A name's lockout also holds off its owner, for at most the window; that is the price of a limit no
botnet gets around by changing addresses.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field

from server.addresses import MAX_BUCKETS, Allowance


@dataclass(slots=True)
class _Failures:
    count: int = 0
    locked_until: float = 0.0


@dataclass(slots=True)
class LoginGuard:
    """The attempts and wrong passwords of logins and registrations, per address key and per name key."""

    rate_per_s: float
    burst: int
    free_failures: int
    max_lockout_s: float
    _attempts: Allowance = field(init=False)
    _failures: OrderedDict[str, _Failures] = field(default_factory=OrderedDict)

    def __post_init__(self) -> None:
        self._attempts = Allowance(self.rate_per_s, self.burst)

    def wait_s(self, keys: list[str], now: float) -> float:
        """Seconds until any of ``keys`` may try again (0: now); trying spends an attempt of each key
        when none is locked out."""
        locked = max(
            (self._failures[key].locked_until - now for key in keys if key in self._failures), default=0
        )
        if locked > 0:
            return locked
        if not all([self._attempts.take(f"try:{key}", now) for key in keys]):
            return 1 / self.rate_per_s
        return 0.0

    def failed(self, keys: list[str], now: float) -> None:
        """A wrong password (or unknown name) for ``keys``: count it, and lock out past the free ones."""
        for key in keys:
            failures = self._failures.pop(key, None) or _Failures()
            if len(self._failures) >= MAX_BUCKETS:
                self._failures.popitem(last=False)
            self._failures[key] = failures
            failures.count += 1
            beyond = failures.count - self.free_failures
            if beyond > 0:
                failures.locked_until = now + min(2 ** min(beyond - 1, 30), self.max_lockout_s)

    def succeeded(self, keys: list[str]) -> None:
        for key in keys:
            self._failures.pop(key, None)


def seconds_text(seconds: float) -> str:
    """A wait for people to read: whole seconds, at least 1."""
    return f"{max(1, math.ceil(seconds))} s"
