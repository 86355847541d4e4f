"""Pacing the load and sorting what it measures into windows.

Every match (or echoing connection) has a :class:`Beat`: the time its next
move is due. :class:`Pacing` fires a move when it is due, or at once when the
match is late (after a slow reply), but never sooner than one interval after
the previous move was due, so a process's matches together move at the rate
asked for while the server keeps up, and as fast as it answers when it does not.
:class:`Recorder` files each round trip under the window in which its request
was sent, and only in that window's measured part, after the warm-up.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

from bench.loadgen.commands import Window, WindowSamples

LOOP_LAG_PROBE_S = 0.02


class Beat:
    """One match's pace: when its next move is due, and the move waiting for that time."""

    __slots__ = ("due", "fire", "handle")

    def __init__(self) -> None:
        self.due = 0.0
        self.fire: Callable[[], None] | None = None
        self.handle: asyncio.TimerHandle | None = None


class Pacing:
    """When the matches of one process move: every ``interval_s`` each, or not at all while stopped."""

    def __init__(self) -> None:
        self.interval_s: float | None = None
        """``None`` while stopped: moves that come due wait for :meth:`set_interval`."""
        self.beats: list[Beat] = []

    def new_beat(self) -> Beat:
        beat = Beat()
        self.beats.append(beat)
        return beat

    def request(self, beat: Beat, fire: Callable[[], None]) -> None:
        """Call ``fire`` when ``beat``'s next move is due: now if it is already late."""
        beat.fire = fire
        interval = self.interval_s
        if interval is None:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        beat.due = max(beat.due + interval, now)
        if beat.due <= now:
            beat.fire = None
            fire()
        else:
            beat.handle = loop.call_at(beat.due, self._fire, beat)

    def _fire(self, beat: Beat) -> None:
        beat.handle = None
        fire = beat.fire
        if fire is not None and self.interval_s is not None:
            beat.fire = None
            fire()

    def set_interval(self, interval_s: float | None, rng: random.Random) -> None:
        """Change the pace (``None``: stop); the first moves at a new pace are spread over one interval."""
        self.interval_s = interval_s
        now = asyncio.get_running_loop().time()
        for beat in self.beats:
            if beat.handle is not None:
                beat.handle.cancel()
                beat.handle = None
            if interval_s is None:
                continue
            beat.due = now - interval_s + rng.random() * interval_s
            if beat.fire is not None:
                fire, beat.fire = beat.fire, None
                self.request(beat, fire)


class Recorder:
    """Samples of one process, filed by window; see the module docstring."""

    def __init__(self) -> None:
        self.windows: tuple[Window, ...] = ()
        self.samples: list[WindowSamples] = []

    def reset(self, windows: tuple[Window, ...]) -> None:
        self.windows = windows
        self.samples = [WindowSamples(window.name) for window in windows]

    def _measured(self, at: float) -> WindowSamples | None:
        for window, samples in zip(self.windows, self.samples, strict=True):
            if window.measure_from <= at < window.end:
                return samples
        return None

    def round_trip(self, sent_at: float, received_at: float) -> None:
        samples = self._measured(sent_at)
        if samples is not None:
            samples.round_trips_ms.append((received_at - sent_at) * 1000)

    def error(self, code: str, at: float) -> None:
        samples = self._measured(at)
        if samples is not None:
            samples.errors[code] = samples.errors.get(code, 0) + 1

    def game_ended(self, at: float) -> None:
        samples = self._measured(at)
        if samples is not None:
            samples.games_ended += 1

    async def probe_loop_lag(self, interval_s: float = LOOP_LAG_PROBE_S) -> None:
        """Record how late this process's own loop wakes up (until cancelled)."""
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(interval_s)
            now = loop.time()
            samples = self._measured(now)
            if samples is not None:
                samples.loop_lag_ms.append(max(0.0, (now - before - interval_s) * 1000))
