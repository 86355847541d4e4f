"""``plyarena tournament --game G --levels 1-8``: bot levels play each other; every game goes to a file.

Games run in a process pool, one game per task (:mod:`bots.tournament`), under a
rich progress bar; each finished game is appended to the results file at once,
so an interrupted tournament keeps what it played. ``plyarena ratings FILE``
turns the file into Elo ratings.
"""

from __future__ import annotations

import argparse
import os
import signal
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from bots.anchors import DEFAULT_ANCHOR_MS, Player, label, parse_anchors, player_order
from bots.levels import LEVEL_COUNT
from bots.tournament import (
    DEFAULT_OPENING_PLIES,
    GameRecord,
    parse_levels,
    play_all,
    schedule,
    write_record,
)
from games import GAMES
from plyarena.options import CommandError, checked_by, engine_command, non_negative_int, positive_int

HELP = "play bot levels against each other in a process pool and write every game to a JSON-lines file"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--game", required=True, choices=sorted(GAMES))
    parser.add_argument(
        "--levels",
        default=f"1-{LEVEL_COUNT}",
        help=f"levels that play: 1-8, 2,4,6 or 1-3,7 (default 1-{LEVEL_COUNT})",
    )
    parser.add_argument(
        "--games-per-pair",
        type=positive_int,
        default=10,
        metavar="K",
        help="games each pair plays (default 10)",
    )
    parser.add_argument(
        "--span",
        type=positive_int,
        metavar="D",
        help="only pairs at most D levels apart (default: every pair; 2 is enough for a ladder)",
    )
    parser.add_argument(
        "--involving",
        type=int,
        metavar="L",
        help="only pairs that include level L (to replay a level after changing it)",
    )
    parser.add_argument(
        "--anchors",
        type=checked_by(parse_anchors),
        metavar="ENGINE@ELO,...",
        help="play every level against each of these instead of each other: an outside engine held at a "
        "UCI_Elo, whose rating the fit holds there (e.g. stockfish@1350,stockfish@1500; needs --engine)",
    )
    parser.add_argument(
        "--engine",
        action="append",
        type=engine_command,
        metavar="NAME=COMMAND",
        help="an outside UCI engine for anchors and engine levels (repeatable), e.g. "
        "stockfish=/usr/games/stockfish",
    )
    parser.add_argument(
        "--anchor-ms",
        type=positive_int,
        default=DEFAULT_ANCHOR_MS,
        metavar="T",
        help=f"an anchor's time a move (default {DEFAULT_ANCHOR_MS})",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=os.cpu_count() or 1,
        metavar="N",
        help="processes (default: every core)",
    )
    parser.add_argument(
        "--output", type=Path, metavar="FILE", help="results file (default tournament-GAME.jsonl)"
    )
    parser.add_argument("--append", action="store_true", help="add to FILE instead of replacing it")
    parser.add_argument("--seed", type=int, default=1, help="seeds openings and noise (default 1)")
    parser.add_argument(
        "--time-ms",
        type=positive_int,
        metavar="T",
        help="cap every move's time budget (default: each level's own)",
    )
    parser.add_argument(
        "--untimed",
        action="store_true",
        help="levels with a depth play to it, and an exact solver to the end, without their time budgets: "
        "the games then do not depend on the machine's load (the shipped ladders are measured so)",
    )
    parser.add_argument(
        "--opening-plies",
        type=non_negative_int,
        metavar="P",
        help="random plies before the bots play (default: "
        + ", ".join(f"{game} {plies}" for game, plies in sorted(DEFAULT_OPENING_PLIES.items()))
        + ")",
    )


def run(args: argparse.Namespace) -> int:
    console = Console()
    try:
        anchors = parse_anchors(args.anchors) if args.anchors else ()
        levels = parse_levels(args.levels, minimum=1 if anchors else 2)
        specs = schedule(
            args.game, levels, args.games_per_pair, seed=args.seed, span=args.span,
            involving=args.involving, opening_plies=args.opening_plies, time_ms=args.time_ms,
            anchors=anchors, engines=dict(args.engine or ()), anchor_ms=args.anchor_ms,
            untimed=args.untimed,
        )  # fmt: skip
    except ValueError as error:
        raise CommandError(str(error)) from None
    output: Path = args.output or Path(f"tournament-{args.game}.jsonl")
    against = f" and anchors {', '.join(anchors)}" if anchors else ""
    console.print(
        f"{args.game}: {len(specs)} games between levels {', '.join(map(str, levels))}{against}, "
        f"on {args.workers} worker(s), seed {args.seed} -> {output}"
    )
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[latest]}"),
    )
    records: list[GameRecord] = []
    signal.signal(signal.SIGTERM, _interrupt)  # stop as on Ctrl-C: finish the games in progress, keep them
    try:
        with (
            output.open("a" if args.append else "w", encoding="utf-8") as stream,
            Progress(*columns, console=console) as progress,
        ):
            task = progress.add_task(f"{args.game} games", total=len(specs), latest="")

            def finished(record: GameRecord) -> None:
                write_record(stream, record)
                records.append(record)
                latest = f"{label(record.first)} vs {label(record.second)}: {record.result} ({record.reason})"
                progress.update(task, advance=1, latest=latest)

            play_all(specs, args.workers, finished)
    except OSError as error:
        raise CommandError(f"cannot write {output}: {error.strerror or error}") from None
    except KeyboardInterrupt:
        console.print(f"interrupted: {len(records)} of {len(specs)} games written to {output}")
        return 130
    console.print(summary_table(records, args.game))
    short = sum(sum(record.short_searches) for record in records)
    if short:
        console.print(
            f"[yellow]{short} searches stopped short of their level's depth under a time budget: "
            "these results depend on the machine's load[/yellow]"
        )
    console.print(f"wrote {len(records)} games to {output}; rate them with: plyarena ratings {output}")
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def summary_table(records: list[GameRecord], game: str) -> Table:
    """Wins, draws and losses of the lower player of each pair (a level before an anchor), and its score."""
    tally: dict[tuple[Player, Player], list[int]] = defaultdict(lambda: [0, 0, 0])
    for record in records:
        low, high = sorted((record.first, record.second), key=player_order)
        points = record.points_of(low)
        tally[low, high][0 if points == 1 else 1 if points == 0.5 else 2] += 1
    table = Table(
        "pair", "games", "lower wins", "draws", "higher wins", "higher's score", title=f"{game} results"
    )
    for (low, high), (wins, draws, losses) in sorted(
        tally.items(), key=lambda item: [player_order(p) for p in item[0]]
    ):
        games = wins + draws + losses
        score = (losses + draws / 2) / games
        table.add_row(
            f"{label(low)} vs {label(high)}", str(games), str(wins), str(draws), str(losses), f"{score:.0%}"
        )
    return table
