"""Chess clocks as pure values: time controls, remaining times, increments, flag falls.

Nothing here reads the time. Every method that needs it takes ``now``, a
monotonic time in seconds chosen by the caller, so the match logic can be
tested with a fake clock and the server alone decides what "now" is.
"""

from __future__ import annotations

import re

import msgspec
from msgspec.structs import replace

UNTIMED = "untimed"
MAX_BASE_MS = 3 * 60 * 60 * 1000
MAX_INCREMENT_MS = 3 * 60 * 1000

_TIME_CONTROL = re.compile(r"(?P<minutes>[0-9]{1,3})(?::(?P<seconds>[0-9]{1,2}))?\+(?P<increment>[0-9]{1,3})")
"""ASCII digits only, as docs/protocol.md spells time controls: ``\\d`` (and ``int``) would also take the
decimal digits of every other script (``"٣+0"``, ``"１+0"``)."""


class TimeControl(msgspec.Struct, frozen=True, gc=False):
    """A base time per seat and an increment added after each of its moves."""

    base_ms: int
    increment_ms: int

    @classmethod
    def parse(cls, text: str) -> TimeControl | None:
        """The time control ``text`` names; ``None`` for ``"untimed"``.

        ``"5+3"`` is five minutes plus three seconds a move; ``"0:30+1"`` thirty
        seconds plus one (minutes:seconds, for short games and tests).
        Raises ``ValueError`` naming the text when it is not one of these.
        """
        text = text.strip().lower()
        if text == UNTIMED:
            return None
        found = _TIME_CONTROL.fullmatch(text)
        if found is None:
            raise ValueError(f"bad time control {text!r}: expected 'untimed', 'M+S' (e.g. '5+3') or 'M:SS+S'")
        seconds = int(found["seconds"] or 0)
        if seconds >= 60:
            raise ValueError(f"bad time control {text!r}: seconds must be below 60")
        control = cls((int(found["minutes"]) * 60 + seconds) * 1000, int(found["increment"]) * 1000)
        if not 0 < control.base_ms <= MAX_BASE_MS or control.increment_ms > MAX_INCREMENT_MS:
            raise ValueError(f"bad time control {text!r}: base must be 1 s to 3 h, increment at most 180 s")
        return control

    def __str__(self) -> str:
        minutes, seconds = divmod(self.base_ms // 1000, 60)
        base = f"{minutes}:{seconds:02d}" if seconds else f"{minutes}"
        return f"{base}+{self.increment_ms // 1000}"


def describe(control: TimeControl | None) -> str:
    """The canonical text of a time control, ``"untimed"`` included."""
    return UNTIMED if control is None else str(control)


class Clock(msgspec.Struct, frozen=True, gc=False):
    """Both seats' remaining times; at most one runs, since ``started_at``.

    ``remaining_ms`` is what each seat had when its clock last stopped; the
    running seat's live time is that minus what has elapsed since.
    """

    control: TimeControl
    remaining_ms: tuple[int, int]
    running: int | None = None
    started_at: float | None = None

    @classmethod
    def new(cls, control: TimeControl) -> Clock:
        return cls(control, (control.base_ms, control.base_ms))

    def start(self, seat: int, now: float) -> Clock:
        """Start ``seat``'s clock (stopping any other, which is charged what it used)."""
        return replace(self.stop(now), running=seat, started_at=now)

    def stop(self, now: float) -> Clock:
        """Stop the running clock, charging its seat the time used."""
        return Clock(self.control, self.remaining(now))

    def press(self, next_seat: int, now: float) -> Clock:
        """The running seat has moved: charge it, add its increment, and start ``next_seat``."""
        running = self.running
        if running is None:
            return self.start(next_seat, now)
        # :meth:`remaining` written out, the increment added to the seat that moved: every move presses.
        first, second = self.remaining_ms
        increment = self.control.increment_ms
        if running == 0:
            first -= self.elapsed_ms(now)
            first = (first if first > 0 else 0) + increment
        else:
            second -= self.elapsed_ms(now)
            second = (second if second > 0 else 0) + increment
        return Clock(self.control, (first, second), next_seat, now)

    # No ``max(0, ...)`` below: a builtin that parses keyword arguments on every call, and a move asks
    # these a few times (1.4% of its instructions, docs/performance.md).

    def elapsed_ms(self, now: float) -> int:
        """How long the running clock has run; 0 when none runs."""
        if self.started_at is None:
            return 0
        elapsed = round((now - self.started_at) * 1000)
        return elapsed if elapsed > 0 else 0

    def remaining(self, now: float) -> tuple[int, int]:
        """Both seats' times at ``now``; a seat that has flagged shows 0, never less."""
        running = self.running
        if running is None:
            return self.remaining_ms
        first, second = self.remaining_ms
        if running == 0:
            first -= self.elapsed_ms(now)
            return (first if first > 0 else 0), second
        second -= self.elapsed_ms(now)
        return first, (second if second > 0 else 0)

    def flagged(self, now: float) -> int | None:
        """The seat whose time has run out at ``now``, if any."""
        running = self.running
        if running is None or self.remaining_ms[running] > self.elapsed_ms(now):
            return None
        return running

    def deadline(self) -> float | None:
        """When the running seat will flag unless it moves first."""
        if self.running is None or self.started_at is None:
            return None
        return self.started_at + self.remaining_ms[self.running] / 1000
