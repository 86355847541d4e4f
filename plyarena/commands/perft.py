"""``plyarena perft GAME DEPTH``: count move sequences, the check of move generation."""

from __future__ import annotations

import argparse

from games import GAMES, get_game, perft

HELP = "print the number of legal move sequences of DEPTH plies from the start (perft)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("game", choices=sorted(GAMES))
    parser.add_argument("depth", type=int)
    parser.add_argument("--moves", default="", help="moves (space-separated notation) to play first")


def run(args: argparse.Namespace) -> int:
    game = get_game(args.game)
    print(perft(game.replay(args.moves.split()), args.depth))
    return 0
