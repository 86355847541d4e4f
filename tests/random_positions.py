"""Random positions of any game, for the search tests (a helper module, not a test file)."""

from __future__ import annotations

import random

from games import Position, get_game


def random_line(name: str, seed: int, max_plies: int = 200) -> list[Position]:
    """The positions of a random game that still have a move to play, from the start."""
    rng = random.Random(seed)
    position = get_game(name).start()
    line = []
    while position.legal_moves() and len(line) < max_plies:
        line.append(position)
        position = position.play(rng.choice(position.legal_moves()))
    return line


def random_position(name: str, seed: int) -> Position:
    """A position a random number of random plies into a random game, with a move left."""
    line = random_line(name, seed)
    return line[random.Random(seed).randrange(len(line))]
