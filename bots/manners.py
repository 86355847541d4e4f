"""How a bot answers what its opponent offers: the stated policy for draws and rematches.

- **Draws.** A bot never offers one. It accepts an offer when its latest search
  does not expect it to win, that is when that search's score (from the bot's
  side) is at most :attr:`Manners.draw_max_score` (0 by default: equal or worse);
  it declines otherwise, and also before it has searched at all (it has no
  reason then to think it stands worse).
- **Takebacks.** A bot never asks for one, and declines every request: it
  played its move for the position as it was, and a game it could be asked to
  replay move by move would measure nothing.
- **Rematches.** A bot never offers one. It accepts an offer when its fleet has
  room for one more game (a rematch is a new game and counts against
  ``--max-games``), and declines otherwise. After a match ends it keeps following
  it for :attr:`Manners.rematch_window_s` seconds so an offer can reach it, then
  leaves.
- **Resigning and aborting.** Never: a bot plays on until the rules, the clock or
  its opponent end the game.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Manners:
    """The policy of the module docstring, with its two knobs."""

    draw_max_score: int = 0
    rematch_window_s: float = 30.0

    def accepts_draw(self, last_score: int | None) -> bool:
        """Whether to accept a draw offer, given the score of the bot's latest search (``None``: none yet)."""
        return last_score is not None and last_score <= self.draw_max_score

    def accepts_rematch(self, has_room: bool) -> bool:
        """Whether to accept a rematch offer; ``has_room`` says whether the fleet can take another game."""
        return has_room


DEFAULT_MANNERS = Manners()
