"""Where in its game each scripted match starts the measured play: spread as on a server in steady state.

Started together and paced alike, thousands of matches would move in step: no
game ends in the first seconds of play, then nearly all end within a few seconds
of each other, each end starting a rematch at once. A game's end and its rematch's
start cost the server as much as some five moves (docs/performance.md),
so the paced window's first seconds were cheaper than steady play (0.66 of a core at
5,000 moves/s against 0.8 to 0.9 once games were ending) and its middle a wave of
game ends that held every move back by 100 to 150 ms. A server that has hosted matches
for a while has them at every ply. So before any window each pair plays, at the
flat-out pace, an opening of :func:`opening_plies` moves (through the end of a
game and into its rematch if need be), drawn as a renewal process's age: the
game a random moment falls in is picked with odds in proportion to its length,
and the moment is uniform within it.
"""

from __future__ import annotations

import random

from games import get_game

SAMPLED_GAMES = 200
"""Random games played out to learn how long the game's games are: enough for the shape of their spread."""


def random_game_length(game: str, rng: random.Random) -> int:
    """The plies of one game of uniformly random legal moves, as the scripted players play."""
    position = get_game(game).start()
    plies = 0
    while position.outcome() is None:
        position = position.play(rng.choice(position.legal_moves()))
        plies += 1
    return plies


def opening_plies(game: str, pairs: int, rng: random.Random) -> list[int]:
    """For each of ``pairs`` matches, how many plies to play before the measured play starts."""
    lengths = [random_game_length(game, rng) for _ in range(SAMPLED_GAMES)]
    chosen = rng.choices(lengths, weights=lengths, k=pairs)
    return [int(rng.random() * length) for length in chosen]
