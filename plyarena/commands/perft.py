"""``plyarena perft GAME DEPTH``: count move sequences, the check of move generation."""

from __future__ import annotations

import argparse

from games import GAMES, perft
from plyarena.options import non_negative_int, position_after

HELP = "print the number of legal move sequences of DEPTH plies from the start, or after --moves (perft)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("game", choices=sorted(GAMES))
    parser.add_argument("depth", type=non_negative_int, help="plies to count (0 counts the position itself)")
    parser.add_argument(
        "--moves", default="", help="moves to play first, space-separated notation (connect4 also: 4453)"
    )


def run(args: argparse.Namespace) -> int:
    print(perft(position_after(args.game, args.moves), args.depth))
    return 0
