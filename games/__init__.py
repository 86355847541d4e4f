"""Pure rules of the two-player games Ply Arena serves.

Every module in this package that defines ``RULES`` (a :class:`games.base.Game`)
is a game; adding a game is adding a module. Nothing here does I/O.
"""

from __future__ import annotations

import importlib
import pkgutil

from games.base import Game, IllegalMoveError, Move, Outcome, Position, perft

__all__ = ["GAMES", "Game", "IllegalMoveError", "Move", "Outcome", "Position", "get_game", "perft"]


def _discover() -> dict[str, Game]:
    found: dict[str, Game] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_") or info.name == "base":
            continue
        rules = getattr(importlib.import_module(f"{__name__}.{info.name}"), "RULES", None)
        if isinstance(rules, Game):
            found[rules.name] = rules
    return found


GAMES: dict[str, Game] = _discover()
"""Every game by its short name."""


def get_game(name: str) -> Game:
    """The game called ``name``; raises ``KeyError`` naming the games there are."""
    try:
        return GAMES[name]
    except KeyError:
        raise KeyError(f"unknown game {name!r}; known games: {', '.join(sorted(GAMES))}") from None
