"""What every search style returns, and the score scale they share.

Scores are from the side to move at the root. A game the search sees to its end
scores ``WIN`` minus the plies it takes, so a quicker win scores more and a
slower loss scores less; everything else is the game's heuristic evaluation,
which stays far below (``|evaluation| < 10_000``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from games import Move, Outcome, Position

WIN = 1_000_000
"""Score of a win on the spot; a win ``n`` plies away scores ``WIN - n``."""
MAX_PLY = 10_000
"""No game lasts longer: scores above ``WIN - MAX_PLY`` are won games, not evaluations."""
DECISIVE = WIN - MAX_PLY
INFINITY = WIN + 1
"""Beyond every score: the initial alpha-beta window is (-INFINITY, INFINITY)."""


def outcome_score(outcome: Outcome, turn: int, plies: int) -> int:
    """Score of a finished game for the seat ``turn``, reached ``plies`` plies from the root."""
    if outcome.winner is None:
        return 0
    return WIN - plies if outcome.winner == turn else plies - WIN


def is_decisive(score: float) -> bool:
    """Whether ``score`` is a won or lost game rather than a heuristic evaluation."""
    return abs(score) > DECISIVE


Source = Literal["book", "solved", "searched"]
"""Where a move came from: an opening book, an exact solver, or a depth-limited search."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The outcome of one search from one position, and where it came from.

    A ``"searched"`` result has ``depth``, the deepest iteration completed in full,
    and ``nodes``, every position visited (aborted iterations included: they cost
    time too). A ``"solved"`` one saw every line to the end, so it has no depth,
    and ``nodes`` only if its solver counts them; a ``"book"`` move was looked up,
    so it has neither. ``pv`` is the line expected, starting with ``move``.
    """

    move: Move
    score: int
    depth: int | None
    nodes: int | None
    pv: tuple[Move, ...]
    time_ms: float
    source: Source = "searched"

    def as_dict(self, position: Position) -> dict[str, Any]:
        """The result with moves in notation (``position`` is the searched one), for JSON."""
        move = position.format_move(self.move)
        line = []
        for move_in_line in self.pv:
            line.append(position.format_move(move_in_line))
            position = position.play(move_in_line)
        return {
            "move": move,
            "score": self.score,
            "depth": self.depth,
            "nodes": self.nodes,
            "pv": line,
            "time_ms": round(self.time_ms, 3),
            "source": self.source,
        }
