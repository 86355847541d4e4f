"""``plyarena bench MODE``: measure a part of Ply Arena and write the figures to docs/benchmarks.md.

Each mode measures one part (``engine``: the search and the solver) and owns one
section of the benchmarks file, between two marker comments, so that modes
rewrite their own figures and leave the others' alone. A new mode is a new entry
in :data:`MODES`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bots.benchmark import PONS_DIR, EngineReport, Plan, render_markdown, report_tables, run_engine_benchmark
from plyarena.bench_bots import BotsPlan, run_bots_benchmark
from plyarena.bench_bots import render_markdown as render_bots_markdown

HELP = "measure a part of Ply Arena (engine: search and solver) and write docs/benchmarks.md"
DEFAULT_OUTPUT = Path("docs/benchmarks.md")
FILE_HEADER = "# Benchmarks\n\nWritten by `plyarena bench MODE`; each mode rewrites only its own section.\n"


@dataclass(frozen=True, slots=True)
class Mode:
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def configure(parser: argparse.ArgumentParser) -> None:
    modes = parser.add_subparsers(dest="mode", required=True, metavar="MODE")
    for name, mode in MODES.items():
        sub = modes.add_parser(name, help=mode.help, description=mode.help)
        mode.configure(sub)
        sub.set_defaults(run_mode=mode.run)


def run(args: argparse.Namespace) -> int:
    return args.run_mode(args)


def write_section(path: Path, mode: str, markdown: str) -> None:
    """Put ``markdown`` in ``mode``'s section of the benchmarks file, replacing what was there."""
    start, end = f"<!-- plyarena bench {mode}: start -->", f"<!-- plyarena bench {mode}: end -->"
    section = f"{start}\n{markdown.rstrip()}\n{end}\n"
    text = path.read_text(encoding="utf-8") if path.exists() else FILE_HEADER
    if start in text and end in text:
        before, rest = text.split(start, 1)
        text = before + section + rest.split(end, 1)[1].lstrip("\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class RichTracker:
    """Shows each measurement as a rich progress bar."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def task(self, description: str, total: int) -> Callable[[], None]:
        task_id = self.progress.add_task(description, total=total or None)
        return lambda: self.progress.advance(task_id)


def _configure_engine(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="a small run that checks the command works")
    parser.add_argument(
        "--output",
        type=Path,
        help=f"benchmarks file to update (default {DEFAULT_OUTPUT}; with --quick: none)",
    )
    parser.add_argument("--pons-dir", type=Path, default=PONS_DIR, help="where Pons' test sets are")


def _run_engine(args: argparse.Namespace) -> int:
    plan = Plan.quick() if args.quick else Plan()
    command = "plyarena bench engine" + (" --quick" if args.quick else "")
    console = Console()
    if not (args.pons_dir / "Test_L3_R1").exists():
        console.print(f"[red]plyarena bench: no Pons test sets in {args.pons_dir}[/red]")
        return 2
    columns = (TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        report = run_engine_benchmark(plan, RichTracker(progress), command, args.pons_dir)
    _show(console, report)
    output = args.output if args.output is not None else (None if args.quick else DEFAULT_OUTPUT)
    if output is not None:
        write_section(output, "engine", render_markdown(report))
        console.print(f"wrote the engine section of {output}")
    wrong = sum(row.wrong for row in report.pons) + sum(row.positions - row.agree for row in report.easyai)
    return 1 if wrong else 0


def _show(console: Console, report: EngineReport) -> None:
    """The report as rich tables."""
    for text_table in report_tables(report):
        table = Table(*text_table.header, title=text_table.title)
        for row in text_table.rows:
            table.add_row(*row)
        console.print(table)
    for note in report.notes:
        console.print(f"[yellow]{note}[/yellow]")


def _configure_bots(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="a small run that checks the command works")
    parser.add_argument("--games", type=int, help="games played at once (default 8; --quick: 2)")
    parser.add_argument("--game", help="the game the bots play (default connect4)")
    parser.add_argument("--level", type=int, help="the level of both bots (default 5; --quick: 3)")
    parser.add_argument(
        "--output",
        type=Path,
        help=f"benchmarks file to update (default {DEFAULT_OUTPUT}; with --quick: none)",
    )


def _run_bots(args: argparse.Namespace) -> int:
    plan = BotsPlan.quick() if args.quick else BotsPlan()
    changes = {"games": args.games, "game": args.game, "level": args.level}
    plan = replace(plan, **{name: value for name, value in changes.items() if value is not None})
    command = "plyarena bench bots" + (" --quick" if args.quick else "")
    console = Console()
    logging.getLogger("bots").setLevel(logging.ERROR)  # "fleet full" is the point here, not news
    workers = " and ".join(map(str, plan.worker_counts))
    with console.status(f"playing {plan.games} bot games with {workers} workers"):
        runs = asyncio.run(run_bots_benchmark(plan))
    markdown = render_bots_markdown(plan, runs, command)
    console.print(markdown)
    output = args.output if args.output is not None else (None if args.quick else DEFAULT_OUTPUT)
    if output is not None:
        write_section(output, "bots", markdown)
        console.print(f"wrote the bots section of {output}")
    return 0


MODES: dict[str, Mode] = {
    "engine": Mode(
        "search speed per game, Connect Four solving on Pons' sets, minimax vs alpha-beta, easyAI alongside",
        _configure_engine,
        _run_engine,
    ),
    "bots": Mode(
        "bot moves per second with 1 and 2 search workers, and the server's event-loop lag meanwhile",
        _configure_bots,
        _run_bots,
    ),
}
"""Every benchmark mode by name; ``bots`` and ``server`` join as their parts land."""
