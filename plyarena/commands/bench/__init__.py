"""``plyarena bench MODE``: measure a part of Ply Arena and write the figures to docs/benchmarks.md.

Each mode measures one part (``engine``: the search and the solver; ``server``:
one server process under load; and so on) and owns one
section of the benchmarks file, between two marker comments, so that modes
rewrite their own figures and leave the others' alone (:mod:`.output`). A new mode
is a new entry in :data:`MODES`; the server's modes are in :mod:`.server`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench.bots import BotsPlan, run_bots_benchmark
from bench.bots import render_markdown as render_bots_markdown
from bench.engine import (
    EngineReport,
    Plan,
    render_markdown,
    report_tables,
    run_engine_benchmark,
)
from bench.fuzz import FuzzerMissingError, FuzzPlan, run_fuzz_benchmark
from bench.fuzz import code_rows as fuzz_code_rows
from bench.fuzz import kind_rows as fuzz_kind_rows
from bench.fuzz import render_markdown as render_fuzz_markdown
from bench.fuzz import summary_lines as fuzz_summary
from bench.moves import MovesPlan, run_moves_benchmark
from bench.moves import render_markdown as render_moves_markdown
from bench.pons import (
    PONS_SETS,
    PONS_SETS_VARIABLE,
    REFERENCE_COMMIT,
    ReferenceSolverError,
    check_reference_solver,
    pons_sets_from_environment,
    pons_sets_problem,
)
from bench.store import StorePlan, run_store_benchmark
from bench.store import render_markdown as render_store_markdown
from bench.variety import VarietyPlan, cost_table, run_variety_benchmark, summary, variety_table
from bench.variety import render_markdown as render_variety_markdown
from bots.levels import LEVEL_COUNT
from games import GAMES
from plyarena.commands.bench import server as server_modes
from plyarena.commands.bench.output import (
    add_quick_and_output,
    output_unless_quick,
    print_tables,
    write_output,
)
from plyarena.options import (
    CommandError,
    database_url,
    positive_int,
)
from server.errors import ServerStartError
from server.limits import parse_gc_thresholds

HELP = "measure a part of Ply Arena (the engine, bots, the server, the store...) and write docs/benchmarks.md"


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
        sub.set_defaults(run_mode=mode.run, command=f"bench {name}")  # errors say "plyarena bench MODE: ..."


def run(args: argparse.Namespace) -> int:
    return args.run_mode(args)


class RichTracker:
    """Shows each measurement as a rich progress bar."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def task(self, description: str, total: int) -> Callable[[], None]:
        task_id = self.progress.add_task(description, total=total or None)
        return lambda: self.progress.advance(task_id)


def _configure_engine(parser: argparse.ArgumentParser) -> None:
    add_quick_and_output(parser)
    parser.add_argument(
        "--pons-sets",
        type=Path,
        metavar="DIR",
        help=f"the directory of Pascal Pons' test sets {', '.join(PONS_SETS)} "
        f"(default: ${PONS_SETS_VARIABLE})",
    )
    parser.add_argument(
        "--pons-solver",
        type=Path,
        metavar="PATH",
        help="Pons' C++ c4solver, built from github.com/PascalPons/connect4 at commit "
        f"{REFERENCE_COMMIT}: solves the same lines for the ratio (default: not measured)",
    )


def _run_engine(args: argparse.Namespace) -> int:
    plan = Plan.quick() if args.quick else Plan()
    pons_sets = args.pons_sets or pons_sets_from_environment()
    if pons_sets is None:
        raise CommandError(
            f"no Pons test sets: give the directory holding {', '.join(PONS_SETS)} with --pons-sets DIR "
            f"or {PONS_SETS_VARIABLE}=DIR"
        )
    problem = pons_sets_problem(pons_sets)
    if problem is not None:
        raise CommandError(f"no Pons test sets: {problem}")
    if args.pons_solver is not None:
        try:
            check_reference_solver(args.pons_solver)
        except ReferenceSolverError as error:
            raise CommandError(str(error)) from None
    command = " ".join(
        ["plyarena bench engine", *(["--quick"] if args.quick else []), f"--pons-sets {pons_sets}",
         *([f"--pons-solver {args.pons_solver}"] if args.pons_solver is not None else [])]
    )  # fmt: skip
    console = Console()
    output = output_unless_quick(args)
    columns = (TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        tracker = RichTracker(progress)
        try:
            report = run_engine_benchmark(plan, tracker, command, pons_sets, args.pons_solver)
        except ReferenceSolverError as error:
            raise CommandError(str(error)) from None
    _show(console, report)
    write_output(output, console, "engine", render_markdown(report))
    wrong = sum(row.wrong for row in report.pons) + sum(row.positions - row.agree for row in report.easyai)
    wrong += report.kernel.mismatches if report.kernel is not None else 0
    return 1 if wrong else 0


def _show(console: Console, report: EngineReport) -> None:
    """The report as rich tables."""
    print_tables(console, report_tables(report), report.notes)


def _configure_bots(parser: argparse.ArgumentParser) -> None:
    add_quick_and_output(parser)
    parser.add_argument("--games", type=positive_int, help="games played at once (default 6; --quick: 2)")
    parser.add_argument("--game", choices=sorted(GAMES), help="the game the bots play (default connect4)")
    parser.add_argument(
        "--level",
        type=int,
        choices=range(1, LEVEL_COUNT + 1),
        metavar="N",
        help=f"the level of both bots, 1-{LEVEL_COUNT} (default 7; --quick: 3)",
    )


def _run_bots(args: argparse.Namespace) -> int:
    plan = BotsPlan.quick() if args.quick else BotsPlan()
    changes = {"games": args.games, "game": args.game, "level": args.level}
    plan = replace(plan, **{name: value for name, value in changes.items() if value is not None})
    chosen = [f" --{name} {value}" for name, value in changes.items() if value is not None]
    command = "plyarena bench bots" + (" --quick" if args.quick else "") + "".join(chosen)
    output = output_unless_quick(args)
    console = Console()
    workers = " and ".join(map(str, plan.worker_counts))
    bots_log = logging.getLogger("bots")
    level = bots_log.level
    bots_log.setLevel(logging.ERROR)  # "fleet full" is the point here, not news
    try:
        with console.status(f"playing {plan.games} bot games with {workers} workers"):
            runs = asyncio.run(run_bots_benchmark(plan))
    finally:
        bots_log.setLevel(level)  # (the command also runs inside other programs: the tests)
    markdown = render_bots_markdown(plan, runs, command)
    console.print(markdown)
    write_output(output, console, "bots", markdown)
    return 0


def _configure_fuzz(parser: argparse.ArgumentParser) -> None:
    add_quick_and_output(parser)
    parser.add_argument(
        "--messages", type=positive_int, help="bad messages to send (default 100,000; --quick: 2,000)"
    )
    parser.add_argument(
        "--players", type=positive_int, help="fuzzed players sending at once (default 8; --quick: 2)"
    )
    parser.add_argument(
        "--db", type=database_url, metavar="URL", help="the server's database (default: SQLite, scratch)"
    )


def _run_fuzz(args: argparse.Namespace) -> int:
    plan = FuzzPlan.quick() if args.quick else FuzzPlan()
    changes = {"messages": args.messages, "players": args.players}
    plan = replace(plan, **{name: value for name, value in changes.items() if value is not None})
    command = " ".join(
        ["plyarena bench fuzz", *(["--quick"] if args.quick else []),
         *([f"--messages {args.messages}"] if args.messages is not None else [])]
    )  # fmt: skip
    output = output_unless_quick(args)
    console = Console()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    try:
        with Progress(*columns, console=console) as progress:
            task = progress.add_task("fuzzing", total=plan.messages)
            report = asyncio.run(run_fuzz_benchmark(plan, args.db, lambda: progress.advance(task)))
    except (FuzzerMissingError, ServerStartError) as error:
        raise CommandError(str(error)) from None
    for line in fuzz_summary(plan, report):
        console.print(line)
    for title, column, rows in (("Answers by error code", "code", fuzz_code_rows(report)),
                                ("Messages by kind", "kind", fuzz_kind_rows(report))):  # fmt: skip
        table = Table(column, "count", title=title)
        for row in rows:
            table.add_row(*row)
        console.print(table)
    for problem in report.wrong + report.game_problems:
        console.print(problem, style="red", markup=False)  # fuzzed text is full of [brackets]
    write_output(output, console, "fuzz", render_fuzz_markdown(plan, report, command))
    return 0 if report.ok else 1


def _configure_store(parser: argparse.ArgumentParser) -> None:
    add_quick_and_output(parser)


def _run_store(args: argparse.Namespace) -> int:
    plan = StorePlan.quick() if args.quick else StorePlan()
    command = "plyarena bench store" + (" --quick" if args.quick else "")
    output = output_unless_quick(args)
    console = Console()
    with (
        console.status("committing moves three ways"),
        tempfile.TemporaryDirectory(prefix="plyarena-") as scratch,
    ):
        results = run_store_benchmark(plan, Path(scratch))
    markdown = render_store_markdown(plan, results, command)
    console.print(markdown)
    write_output(output, console, "store", markdown)
    return 0


def _configure_moves(parser: argparse.ArgumentParser) -> None:
    add_quick_and_output(parser)
    parser.add_argument(
        "--gc",
        action="append",
        type=_thresholds,
        metavar="G0,G1,G2",
        help="GC thresholds to measure, repeatable (default: Python's and the server's)",
    )


def _thresholds(text: str) -> tuple[int, int, int]:
    try:
        return parse_gc_thresholds(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _run_moves(args: argparse.Namespace) -> int:
    plan = MovesPlan.quick() if args.quick else MovesPlan()
    if args.gc:
        plan = replace(plan, thresholds=tuple(args.gc))
    command = " ".join(
        ["plyarena bench moves", *(["--quick"] if args.quick else []),
         *(f"--gc {','.join(map(str, thresholds))}" for thresholds in args.gc or ())]
    )  # fmt: skip
    output = output_unless_quick(args)
    console = Console()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("runs", total=plan.repeats * len(plan.thresholds))
        runs = run_moves_benchmark(plan, lambda: progress.advance(task))
    markdown = render_moves_markdown(plan, runs, command)
    console.print(markdown)
    write_output(output, console, "moves", markdown)
    return 0


def _configure_variety(parser: argparse.ArgumentParser) -> None:
    add_quick_and_output(parser)
    parser.add_argument(
        "--matches", type=positive_int, help="games per level and seat (default 20; --quick: 3)"
    )


def _run_variety(args: argparse.Namespace) -> int:
    plan = VarietyPlan.quick() if args.quick else VarietyPlan()
    if args.matches is not None:
        plan = replace(plan, matches=args.matches)
    command = "plyarena bench variety" + (" --quick" if args.quick else "")
    command += f" --matches {args.matches}" if args.matches is not None else ""
    output = output_unless_quick(args)
    console = Console()
    columns = (TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        report = run_variety_benchmark(plan, command, RichTracker(progress).task)
    print_tables(console, [variety_table(report), cost_table(report)], [summary(report.rows)])
    write_output(output, console, "variety", render_variety_markdown(report))
    return 1 if any(row.score_mismatches for row in report.costs) else 0


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
    "server": Mode(
        "connections, live matches, durable moves/s and round trips of one server process, "
        "against a raw websockets echo; or several instances, one killed (--mode failover)",
        server_modes.configure_server,
        server_modes.run_server,
    ),
    "fuzz": Mode(
        "100,000 malformed and out-of-place messages to a live server: answers by error code, no crash",
        _configure_fuzz,
        _run_fuzz,
    ),
    "moves": Mode(
        "the server's CPU per move in one process, without sockets, and the GC's share, per GC thresholds",
        _configure_moves,
        _run_moves,
    ),
    "broker": Mode(
        "match events a second from 1, 2 and 4 instances through a Mosquitto of its own, and its CPU",
        server_modes.configure_broker,
        server_modes.run_broker,
    ),
    "commits": Mode(
        "durable moves a second through the store's group commits on a database, by matches moving at once",
        server_modes.configure_commits,
        server_modes.run_commits,
    ),
    "store": Mode(
        "CPU per commit and per move, and batches on a busy loop: SQLite on the loop, in a thread, "
        "or through SQLAlchemy",
        _configure_store,
        _run_store,
    ),
    "variety": Mode(
        "distinct games per level against a scripted human who replays one line (bots that vary)",
        _configure_variety,
        _run_variety,
    ),
}
"""Every benchmark mode by name."""
