"""``plyarena search GAME``: search one position and print the result as one JSON object."""

from __future__ import annotations

import argparse
import json
import random

from bots.evaluation import evaluator_for
from bots.expectimax import EpsilonGreedyOpponent, OpponentModel, UniformOpponent
from bots.levels import LEVEL_COUNT, choose_move, level
from bots.result import SearchResult
from bots.search import STYLES, search
from games import GAMES, Position
from plyarena.options import CommandError, games_with_fen, non_negative_float, position_after, positive_int

HELP = "search a position and print the best move, score, depth, nodes, pv, time and source as JSON"
DEFAULT_TIME_MS = 1000


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("game", choices=sorted(GAMES))
    parser.add_argument(
        "--moves", default="", help="moves to play first, space-separated notation (connect4 also: 4453)"
    )
    parser.add_argument(
        "--fen", help=f"start from this position instead (games with FEN: {', '.join(games_with_fen())})"
    )
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--depth", type=positive_int, help="search depth in plies")
    budget.add_argument(
        "--time-ms", type=non_negative_float, help=f"time budget (default {DEFAULT_TIME_MS} without a depth)"
    )
    parser.add_argument("--style", choices=STYLES, default=None, help="search style (default alphabeta)")
    parser.add_argument(
        "--level",
        type=int,
        choices=range(1, LEVEL_COUNT + 1),
        metavar="N",
        help="play as bot level N (1-8); --time-ms then caps the level's budget",
    )
    parser.add_argument(
        "--opponent",
        choices=("uniform", "epsilon-greedy"),
        default="uniform",
        help="expectimax's model of the opponent (default uniform)",
    )
    parser.add_argument(
        "--epsilon",
        type=float,
        default=0.2,
        help="epsilon-greedy opponent's random share, 0 to 1 (default 0.2)",
    )
    parser.add_argument(
        "--seed", type=int, help="seed for a level's noise and its choice among equal moves (default: random)"
    )


def run(args: argparse.Namespace) -> int:
    position = position_after(args.game, args.moves, args.fen)
    if not position.legal_moves():
        raise CommandError(f"the game is over after --moves ({position.outcome()}): nothing to search")
    try:
        result = _search(args, position)
    except (LookupError, ValueError) as error:  # no evaluation or solver for the game, a bad epsilon
        raise CommandError(str(error).strip("'\"")) from None
    print(json.dumps(result.as_dict(position)))
    return 0


def _search(args: argparse.Namespace, position: Position) -> SearchResult:
    if args.level is not None:
        if args.depth is not None or args.style is not None:
            raise ValueError("--level sets its own style and depth: give --time-ms at most")
        _, result = choose_move(
            position, level(args.game, args.level), random.Random(args.seed), args.time_ms
        )
        return result
    style = args.style or "alphabeta"
    if style == "minimax" and args.depth is None:
        raise ValueError("minimax searches to a fixed depth: give --depth")
    time_ms = DEFAULT_TIME_MS if args.depth is None and args.time_ms is None else args.time_ms
    return search(
        args.game, position, style=style, depth=args.depth, time_ms=time_ms, opponent=_opponent(args)
    )


def _opponent(args: argparse.Namespace) -> OpponentModel:
    if args.opponent == "uniform":
        return UniformOpponent()
    return EpsilonGreedyOpponent(evaluator_for(args.game), args.epsilon)
