"""Which bot a player is: a game and one of its levels, and the name it says hello with."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from bots.levels import level as level_row
from bots.levels import level_table

GAME_CODES = {"tictactoe": "ttt", "connect4": "c4", "othello": "oth", "checkers": "chk"}
"""Short game names for bot names; a game not listed goes by its full name."""


@dataclass(frozen=True, slots=True)
class BotSpec:
    """Which bot: a game and one of its levels, with that level's search style."""

    game: str
    level: int
    style: str

    @classmethod
    def of(cls, game: str, level: int) -> BotSpec:
        """The bot playing ``level`` of ``game``, as the level table describes it."""
        return cls(game, level, level_row(game, level).style)

    @classmethod
    def named(cls, name: str) -> BotSpec | None:
        """The bot that says hello as ``name``, or ``None`` if no level of any game is called so."""
        return _specs_by_name().get(name)

    @property
    def name(self) -> str:
        """The name it says hello with: style (or outside engine), game and level, e.g. ``alphabeta-c4-L5``,
        ``stockfish-chess-L8``."""
        engine = level_row(self.game, self.level).engine
        who = self.style if engine is None else engine.name
        return f"{who}-{GAME_CODES.get(self.game, self.game)}-L{self.level}"


@cache
def _specs_by_name() -> dict[str, BotSpec]:
    specs = (
        BotSpec.of(game, number) for game, rows in level_table().items() for number in range(1, len(rows) + 1)
    )
    return {spec.name: spec for spec in specs}
