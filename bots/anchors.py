"""Anchors: an outside engine at a fixed, published strength, whose rating holds a ladder to a known scale.

A ladder fitted among our own levels says only how far apart they are. To put
chess's on a scale people know, its levels also play Stockfish with
``UCI_LimitStrength`` on and ``UCI_Elo`` fixed: such a player is an *anchor*,
named ``ENGINE@ELO`` (``stockfish@1500``). In a tournament it plays through
:mod:`bots.engine` with those UCI options and a fixed time a move; in the fit
(:mod:`bots.ratings`) its rating is held at ELO, so our levels' ratings land on
the engine's scale. Anchors are in no level table: a tournament seats them by
name, and their games are recorded under that name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from bots.levels import EngineSpec, Level

Player = int | str
"""Who plays in a tournament: a level's number, or an anchor's name (``stockfish@1500``)."""

DEFAULT_ANCHOR_MS = 100
"""An anchor's time a move: Stockfish's limited strength is set by UCI_Elo, not by its thinking time,
as long as it has time to reach the depth its weakened play picks at (a few plies, well within this)."""
_NAME = re.compile(r"(?P<engine>[a-z][a-z0-9_-]*)@(?P<elo>[0-9]{3,4})")


def anchor_elo(name: str) -> int:
    """The fixed rating of the anchor ``name`` (``stockfish@1500`` -> 1500); ``ValueError`` naming it."""
    match = _NAME.fullmatch(name)
    if match is None:
        raise ValueError(f"{name!r} is not an anchor: expected ENGINE@ELO, such as stockfish@1500")
    return int(match["elo"])


def anchor_level(game: str, name: str, time_ms: int = DEFAULT_ANCHOR_MS) -> Level:
    """The engine level the anchor ``name`` plays as: its engine at ``UCI_Elo``, ``time_ms`` a move."""
    elo = anchor_elo(name)
    engine = name.partition("@")[0]
    options = (("UCI_LimitStrength", True), ("UCI_Elo", elo))
    return Level(
        game, 0, name, f"{engine} limited to UCI_Elo {elo}", "engine", time_ms=time_ms,
        engine=EngineSpec(engine, options),
    )  # fmt: skip


def parse_anchors(text: str) -> tuple[str, ...]:
    """Anchor names from ``stockfish@1350,stockfish@1500``; ``ValueError`` naming a bad one."""
    names = tuple(dict.fromkeys(item.strip() for item in text.split(",")))
    for name in names:
        anchor_elo(name)
    return names


def fixed_ratings(players: Iterable[Player]) -> dict[Player, float]:
    """The anchors among ``players``, each with the rating it is held at."""
    return {player: float(anchor_elo(player)) for player in players if isinstance(player, str)}


def label(player: Player) -> str:
    """How tables name a player: ``L3`` for a level, the name for an anchor."""
    return f"L{player}" if isinstance(player, int) else player


def player_order(player: Player, fixed: Mapping[Player, float] | None = None) -> tuple[int, float]:
    """Sort key: levels by number, then anchors by rating."""
    if isinstance(player, int):
        return (0, player)
    return (1, fixed[player] if fixed and player in fixed else anchor_elo(player))
