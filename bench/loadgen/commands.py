"""What the bench's parent process and its load-generator workers tell each other, pickled over a pipe.

Times are ``time.monotonic()`` seconds: on Linux every process reads the same
clock, so the parent can schedule a measurement window once for every worker.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Window:
    """A phase of play: moves from ``start``, measured from ``measure_from`` (after a warm-up) to ``end``.

    ``interval_s`` is the time between two moves of one match: the clients wait
    until it has passed since the match's previous move was due (never less), so
    the whole process moves at ``matches / interval_s`` as long as the server keeps up.
    """

    name: str
    start: float
    measure_from: float
    end: float
    interval_s: float

    @property
    def measured_s(self) -> float:
        return self.end - self.measure_from


@dataclass(frozen=True, slots=True)
class Connect:
    """Open ``count`` more connections to ``url`` and keep them; with ``hello``, say hello on each."""

    url: str
    count: int
    hello: bool
    name_prefix: str = "load"


@dataclass(frozen=True, slots=True)
class Echo:
    """Send ``payload`` on the first ``active`` open connections and time each echo, during ``window``."""

    active: int
    payload: bytes
    window: Window


@dataclass(frozen=True, slots=True)
class StartMatches:
    """Pair up the first ``2 * pairs`` connections: one opens a match, the other joins; answer when all are
    live and have played their openings (:mod:`bench.loadgen.dephasing`)."""

    pairs: int
    game: str
    time_control: str
    seed: int


@dataclass(frozen=True, slots=True)
class StartBots:
    """Connect ``2 * pairs`` level-``level`` bots to ``url``, two for each match to be played."""

    url: str
    pairs: int
    game: str
    level: int
    time_control: str
    seed: int


@dataclass(frozen=True, slots=True)
class Play:
    """Play through ``windows`` (in order, back to back), then stop moving and report."""

    windows: tuple[Window, ...]


@dataclass(frozen=True, slots=True)
class CloseAll:
    """Drop every connection (and stop the bots)."""


@dataclass(frozen=True, slots=True)
class Quit:
    """End the worker process."""


Command = Connect | Echo | StartMatches | StartBots | Play | CloseAll | Quit


@dataclass(frozen=True, slots=True)
class Opened:
    """The answer to :class:`Connect` and :class:`StartBots`."""

    opened: int
    failed: int
    first_error: str | None
    seconds: float


@dataclass(frozen=True, slots=True)
class Started:
    """The answer to :class:`StartMatches`: how many matches went live."""

    live: int
    failed: int
    first_error: str | None
    seconds: float


@dataclass(slots=True)
class WindowSamples:
    """What one worker saw during one window's measured part."""

    name: str
    round_trips_ms: array[float] = field(default_factory=lambda: array("d"))
    """One per move (or echo) sent in the window and answered, from sending to the reply."""
    errors: dict[str, int] = field(default_factory=dict)
    """Error replies by code."""
    games_ended: int = 0
    loop_lag_ms: array[float] = field(default_factory=lambda: array("d"))
    """The worker's own event-loop lag: high values mean the load generator, not the server, was slow."""


@dataclass(frozen=True, slots=True)
class Played:
    """The answer to :class:`Play` and :class:`Echo`: one :class:`WindowSamples` per window."""

    windows: tuple[WindowSamples, ...]


@dataclass(frozen=True, slots=True)
class Done:
    """The answer to :class:`CloseAll`."""


@dataclass(frozen=True, slots=True)
class Failed:
    """A command raised in the worker; ``error`` is its traceback."""

    command: str
    error: str


Reply = Opened | Started | Played | Done | Failed
