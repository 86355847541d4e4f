"""``plyarena ratings FILE...``: Elo ratings of bot levels from tournament results, with 95% intervals.

Reads one or more results files of ``plyarena tournament`` (all of one game),
fits the ratings (:mod:`bots.ratings`), prints them and the gap from each level
to the next as rich tables, and optionally draws the ladder as a PNG
(``--plot``) and stores it in the shipped table (``--write``, normally
``bots/ratings.json``, which fleets announce and ``/api/bots`` serves).
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bots.anchors import fixed_ratings, label
from bots.levels import levels as level_rows
from bots.ratings import (
    DEFAULT_ANCHOR_LEVEL,
    DEFAULT_ANCHOR_RATING,
    DEFAULT_CONFIDENCE,
    DEFAULT_PRIOR_DRAWS,
    Ladder,
    encounters_of,
    fit_ladder,
    read_ratings,
    shipped_ladder,
    write_ratings,
)
from bots.ratings_plot import PlottingUnavailableError, plot_ladder
from bots.tournament import GameRecord, read_records
from games import get_game
from plyarena.options import CommandError, finite_float, non_negative_float

HELP = "fit Elo ratings with 95% intervals to tournament results; print, plot and store the ladder"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="results of plyarena tournament")
    parser.add_argument(
        "--anchor-level",
        type=int,
        default=DEFAULT_ANCHOR_LEVEL,
        help="the level with a fixed rating (default 1; where the levels played anchors, such as "
        "stockfish@1500, the anchors hold the scale instead, each at its Elo)",
    )
    parser.add_argument(
        "--anchor-rating",
        type=finite_float,
        default=DEFAULT_ANCHOR_RATING,
        help=f"its rating (default {DEFAULT_ANCHOR_RATING:.0f})",
    )
    parser.add_argument(
        "--prior-draws",
        type=non_negative_float,
        default=DEFAULT_PRIOR_DRAWS,
        help="virtual draws between neighbouring levels, so a level that won every game stays finite "
        f"(default {DEFAULT_PRIOR_DRAWS:g}; 0: plain maximum likelihood)",
    )
    parser.add_argument(
        "--confidence", type=finite_float, default=DEFAULT_CONFIDENCE, help="interval coverage (default 0.95)"
    )
    parser.add_argument("--plot", type=Path, metavar="PNG", help="draw the ladder to this PNG")
    parser.add_argument(
        "--write",
        type=Path,
        metavar="JSON",
        help="store this game's ladder in a ratings table (bots/ratings.json ships with the project)",
    )


def run(args: argparse.Namespace) -> int:
    console = Console()
    try:
        records = [record for path in args.files for record in read_records(path)]
        game = _one_game(records, args.files)
        ladder = fit_ladder(
            encounters_of(records),
            anchor_level=args.anchor_level,
            anchor_rating=args.anchor_rating,
            prior_draws=args.prior_draws,
            confidence=args.confidence,
            anchors=fixed_ratings(player for record in records for player in (record.first, record.second)),
        )
    except OSError as error:
        raise CommandError(f"cannot read {error.filename}: {error.strerror or error}") from None
    except ValueError as error:
        raise CommandError(str(error)) from None
    names = {row.number: row.name for row in level_rows(game)}
    console.print(ratings_table(ladder, game, names))
    console.print(steps_table(ladder, game))
    low, high = ladder.first_move_ci
    console.print(
        f"first mover's advantage: {ladder.first_move_advantage:+.0f} Elo ({low:+.0f} to {high:+.0f})"
    )
    if args.plot is not None:
        try:
            plot_ladder(ladder, args.plot, title=get_game(game).title, names=names)
        except PlottingUnavailableError as error:
            raise CommandError(str(error)) from None
        except OSError as error:
            raise CommandError(f"cannot draw to {args.plot}: {error.strerror or error}") from None
        console.print(f"drew the ladder to {args.plot}")
    if args.write is not None:
        try:
            table = read_ratings(args.write)
            source = " ".join(shlex.quote(str(path)) for path in args.files)
            table.games[game] = shipped_ladder(ladder, source=f"plyarena ratings {source}")
            write_ratings(table, args.write)
        except (OSError, ValueError) as error:
            raise CommandError(f"cannot update {args.write}: {error}") from None
        console.print(f"stored the {game} ladder in {args.write}")
    return 0


def ratings_table(ladder: Ladder, game: str, names: dict[int, str]) -> Table:
    confidence = f"{ladder.confidence:.0%}"
    table = Table(
        "level", "name", "Elo", f"{confidence} interval", "games", "score",
        title=f"{get_game(game).title}: {ladder.games} games, {ladder.scale}",
    )  # fmt: skip
    for row in ladder.ratings:
        interval = "anchor" if row.level in ladder.fixed else f"{row.ci_low:.0f} to {row.ci_high:.0f}"
        score = f"{row.points / row.games:.0%}" if row.games else "-"
        name = names.get(row.level, "") if isinstance(row.level, int) else "held at its Elo"
        table.add_row(str(row.level), name, f"{row.rating:.0f}", interval, str(row.games), score)
    return table


def steps_table(ladder: Ladder, game: str) -> Table:
    table = Table(
        "step", "gap", "interval", "distinct", title=f"{get_game(game).title}: each level over the last"
    )
    for step in ladder.steps():
        mark = "yes" if step.distinct else "[red]no[/red]"
        table.add_row(
            f"{label(step.lower)} -> {label(step.upper)}",
            f"{step.gap:+.0f}",
            f"{step.ci_low:+.0f} to {step.ci_high:+.0f}",
            mark,
        )
    return table


def _one_game(records: list[GameRecord], files: list[Path]) -> str:
    games = sorted({record.game for record in records})
    if not games:
        raise ValueError(f"no games in {', '.join(map(str, files))}")
    if len(games) > 1:
        raise ValueError(f"the results mix games ({', '.join(games)}): rate one game at a time")
    return games[0]
