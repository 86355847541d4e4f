"""``plyarena perft GAME DEPTH``: count move sequences, the check of move generation.

Counted by the compiled kernel where it has the game (:mod:`bots.speedups`), which the tests hold to the
rules' own count; ``PLYARENA_NO_SPEEDUPS=1`` counts with the rules themselves.
"""

from __future__ import annotations

import argparse

from bots.speedups import perft
from games import GAMES
from plyarena.options import games_with_fen, non_negative_int, position_after

HELP = "print the number of legal move sequences of DEPTH plies from the start, or after --moves (perft)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("game", choices=sorted(GAMES))
    parser.add_argument("depth", type=non_negative_int, help="plies to count (0 counts the position itself)")
    parser.add_argument(
        "--moves", default="", help="moves to play first, space-separated notation (connect4 also: 4453)"
    )
    parser.add_argument(
        "--fen", help=f"start from this position instead (games with FEN: {', '.join(games_with_fen())})"
    )


def run(args: argparse.Namespace) -> int:
    print(perft(position_after(args.game, args.moves, args.fen), args.depth))
    return 0
