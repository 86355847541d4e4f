"""``plyarena bench MODE``: measure a part of Ply Arena and write the figures to docs/benchmarks.md.

Each mode measures one part (``engine``: the search and the solver; ``server``:
one server process under load; and so on) and owns one
section of the benchmarks file, between two marker comments, so that modes
rewrite their own figures and leave the others' alone. A new mode is a new entry
in :data:`MODES`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bench import broker, commits
from bench.bots import BotsPlan, run_bots_benchmark
from bench.bots import render_markdown as render_bots_markdown
from bench.engine import (
    EngineReport,
    Plan,
    TextTable,
    render_markdown,
    report_tables,
    run_engine_benchmark,
)
from bench.fuzz import FuzzerMissingError, FuzzPlan, run_fuzz_benchmark
from bench.fuzz import code_rows as fuzz_code_rows
from bench.fuzz import kind_rows as fuzz_kind_rows
from bench.fuzz import render_markdown as render_fuzz_markdown
from bench.fuzz import summary_lines as fuzz_summary
from bench.loadgen import report as server_report
from bench.loadgen.failover import FailoverPlan, run_failover
from bench.loadgen.failover import render_markdown as render_failover_markdown
from bench.loadgen.run import MAX_NICENESS, ServerBenchPlan, run_server_benchmark
from bench.loadgen.run import MODES as SERVER_MODES
from bench.loadgen.target import TargetStartError
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
from plyarena.options import (
    CommandError,
    check_writable,
    database_url,
    mqtt_url,
    non_negative_int,
    positive_float,
    positive_int,
    time_control,
)
from server.errors import ServerStartError
from server.limits import parse_gc_thresholds
from server.storage.engine import safe_url
from server.storage.errors import DatabaseOpenError

HELP = "measure a part of Ply Arena (the engine, bots, the server, the store...) and write docs/benchmarks.md"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUTPUT = PROJECT_ROOT / "docs" / "benchmarks.md"
"""The repository's benchmarks file, wherever the command runs from (``docs/performance.md`` reads it)."""
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
        sub.set_defaults(run_mode=mode.run, command=f"bench {name}")  # errors say "plyarena bench MODE: ..."


def run(args: argparse.Namespace) -> int:
    return args.run_mode(args)


def write_section(path: Path, mode: str, markdown: str) -> None:
    """Put ``markdown`` in ``mode``'s section of the benchmarks file, replacing what was there."""
    start, end = f"<!-- plyarena bench {mode}: start -->", f"<!-- plyarena bench {mode}: end -->"
    section = f"{start}\n{markdown.rstrip()}\n{end}\n"
    text = path.read_text(encoding="utf-8") if path.exists() else FILE_HEADER
    if start in text and end in text:
        before, rest = text.split(start, 1)
        after = rest.split(end, 1)[1].lstrip("\n")
        text = before + section + ("\n" + after if after else "")  # (one blank line before what follows)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _add_quick_and_output(parser: argparse.ArgumentParser) -> None:
    """The options every mode that has a quick form shares."""
    parser.add_argument("--quick", action="store_true", help="a small run that checks the command works")
    parser.add_argument(
        "--output",
        type=Path,
        help=f"benchmarks file to update (default {DEFAULT_OUTPUT}; with --quick: none)",
    )


def _output_unless_quick(args: argparse.Namespace) -> Path | None:
    """Where the mode's section goes: ``--output``, by default the benchmarks file, but nowhere for
    ``--quick``; checked writable now, so that a run of minutes does not end in a traceback."""
    output = args.output if args.output is not None else (None if args.quick else DEFAULT_OUTPUT)
    if output is not None:
        check_writable(output)
    return output


def _write(output: Path | None, console: Console, mode: str, markdown: str) -> None:
    """Write ``mode``'s section to ``output``, if there is one."""
    if output is not None:
        write_section(output, mode, markdown)
        console.print(f"wrote the {mode} section of {output}")


class RichTracker:
    """Shows each measurement as a rich progress bar."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def task(self, description: str, total: int) -> Callable[[], None]:
        task_id = self.progress.add_task(description, total=total or None)
        return lambda: self.progress.advance(task_id)


def _configure_engine(parser: argparse.ArgumentParser) -> None:
    _add_quick_and_output(parser)
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
    output = _output_unless_quick(args)
    columns = (TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        tracker = RichTracker(progress)
        try:
            report = run_engine_benchmark(plan, tracker, command, pons_sets, args.pons_solver)
        except ReferenceSolverError as error:
            raise CommandError(str(error)) from None
    _show(console, report)
    _write(output, console, "engine", render_markdown(report))
    wrong = sum(row.wrong for row in report.pons) + sum(row.positions - row.agree for row in report.easyai)
    wrong += report.kernel.mismatches if report.kernel is not None else 0
    return 1 if wrong else 0


def _show(console: Console, report: EngineReport) -> None:
    """The report as rich tables."""
    _print_tables(console, report_tables(report), report.notes)


def _print_tables(console: Console, tables: list[TextTable], notes: Sequence[str]) -> None:
    for text_table in tables:
        table = Table(*text_table.header, title=text_table.title)
        for row in text_table.rows:
            table.add_row(*row)
        console.print(table)
    for note in notes:
        console.print(f"[yellow]{note}[/yellow]")


def _configure_bots(parser: argparse.ArgumentParser) -> None:
    _add_quick_and_output(parser)
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
    output = _output_unless_quick(args)
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
    _write(output, console, "bots", markdown)
    return 0


def _configure_server(parser: argparse.ArgumentParser) -> None:
    defaults = ServerBenchPlan()
    parser.add_argument(
        "--clients",
        type=positive_int,
        default=defaults.clients,
        metavar="N",
        help=f"connections held, each saying hello (default {defaults.clients:,})",
    )
    parser.add_argument(
        "--matches",
        type=positive_int,
        metavar="M",
        help=f"matches played at once, two clients each (default {defaults.matches:,}; failover: "
        f"{FailoverPlan().matches})",
    )
    parser.add_argument(
        "--duration",
        type=positive_float,
        default=defaults.duration_s,
        metavar="S",
        help=f"measured seconds of each window, after a warm-up (default {defaults.duration_s:g})",
    )
    parser.add_argument(
        "--db",
        type=database_url,
        metavar="URL",
        help="database of the server under test (default: SQLite in a scratch directory)",
    )
    parser.add_argument(
        "--mode",
        choices=(*SERVER_MODES, "failover"),
        default=defaults.mode,
        help="scripted clients playing random legal moves, or level-1 bots (default scripted); failover: "
        "--instances servers sharing a PostgreSQL --db and an --mqtt broker, one killed while --matches "
        "games are live, its adoption time and lost moves measured (a section of its own)",
    )
    failover = FailoverPlan()
    parser.add_argument(
        "--instances",
        type=positive_int,
        default=failover.instances,
        metavar="N",
        help=f"failover: servers sharing the database (default {failover.instances})",
    )
    parser.add_argument("--mqtt", type=mqtt_url, metavar="URL", help="failover: the broker they share")
    parser.add_argument(
        "--rate",
        type=positive_float,
        action="append",
        metavar="MOVES_PER_S",
        help="moves per second asked in the paced window (default: one per match per second); repeat it "
        "for one paced window per rate, in the order given",
    )
    parser.add_argument(
        "--game",
        choices=sorted(GAMES),
        help=f"the game played (default {defaults.game}; failover: {FailoverPlan().game})",
    )
    parser.add_argument(
        "--time-control",
        type=time_control,
        default=defaults.time_control,
        help=f"of every match (default {defaults.time_control})",
    )
    parser.add_argument(
        "--processes",
        type=positive_int,
        default=defaults.processes,
        metavar="P",
        help=f"load-generator processes (default {defaults.processes})",
    )
    parser.add_argument(
        "--loadgen-nice",
        type=non_negative_int,
        default=defaults.loadgen_niceness,
        metavar="N",
        help="how much nicer than the server the load generators run, so that they take the cores it "
        f"leaves, as clients on machines of their own would (0 to {MAX_NICENESS}; default "
        f"{defaults.loadgen_niceness})",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        help=f"benchmarks file whose server section gets this run (default {DEFAULT_OUTPUT})",
    )
    parser.add_argument("--no-output", action="store_true", help="print the figures only")  # fmt: skip


def _run_server(args: argparse.Namespace) -> int:
    if args.mode == "failover":
        return _run_failover(args)
    defaults = ServerBenchPlan()
    args.matches = args.matches or defaults.matches
    args.game = args.game or defaults.game
    console = Console()
    try:
        plan = ServerBenchPlan(
            clients=args.clients, matches=args.matches, duration_s=args.duration, mode=args.mode,
            db_url=args.db, game=args.game, time_control=args.time_control, rates=tuple(args.rate or ()),
            processes=args.processes, loadgen_niceness=args.loadgen_nice,
        )  # fmt: skip
    except ValueError as error:
        raise CommandError(str(error)) from None
    if not args.no_output:
        check_writable(args.output)
    command = _server_command(args)
    with console.status("starting the load generators") as status:
        try:
            report = asyncio.run(run_server_benchmark(plan, command, lambda text: status.update(text)))
        except TargetStartError as error:
            raise CommandError(str(error)) from None
    _print_tables(console, server_report.report_tables(report), report.notes)
    if not args.no_output:
        write_section(args.output, "server", server_report.render_markdown(report))
        console.print(f"wrote the server section of {args.output}")
    return 0


def _run_failover(args: argparse.Namespace) -> int:
    """``--mode failover``: one of several instances killed (:mod:`bench.loadgen.failover`)."""
    if args.db is None or not args.db.startswith("postgresql") or args.mqtt is None:
        raise CommandError("--mode failover needs a PostgreSQL --db and an --mqtt broker for its instances")
    defaults = FailoverPlan()
    try:
        plan = FailoverPlan(
            instances=args.instances,
            matches=args.matches or defaults.matches,
            game=args.game or defaults.game,
        )
    except ValueError as error:
        raise CommandError(str(error)) from None
    if not args.no_output:
        check_writable(args.output)
    command = (f"plyarena bench server --mode failover --instances {plan.instances} --matches {plan.matches} "
               f"--game {plan.game} --db {safe_url(args.db)} --mqtt {args.mqtt}")  # fmt: skip
    console = Console()
    with console.status("starting the instances") as status, tempfile.TemporaryDirectory() as scratch:
        try:
            report = asyncio.run(run_failover(plan, args.db, args.mqtt, Path(scratch), status.update))
        except TargetStartError as error:
            raise CommandError(str(error)) from None
    markdown = render_failover_markdown(report, command)
    console.print(markdown)
    if not args.no_output:
        write_section(args.output, "server failover", markdown)
        console.print(f"wrote the server failover section of {args.output}")
    return 0 if not report.problems and report.lost_moves == 0 and not report.double_hosted else 1


def _server_command(args: argparse.Namespace) -> str:
    """The command line of this run, as recorded with its figures (the database URL's password hidden)."""
    parts = ["plyarena bench server", f"--clients {args.clients}", f"--matches {args.matches}",
             f"--duration {args.duration:g}", f"--mode {args.mode}"]  # fmt: skip
    if args.db:
        parts.append(f"--db {safe_url(args.db)}")
    parts.extend(f"--rate {rate:g}" for rate in args.rate or ())
    defaults = ServerBenchPlan()
    for flag, value, default in (
        ("--game", args.game, defaults.game),
        ("--time-control", args.time_control, defaults.time_control),
        ("--processes", args.processes, defaults.processes),
        ("--loadgen-nice", args.loadgen_nice, defaults.loadgen_niceness),
    ):
        if value != default:
            parts.append(f"{flag} {value}")
    return " ".join(parts)


def _configure_fuzz(parser: argparse.ArgumentParser) -> None:
    _add_quick_and_output(parser)
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
    output = _output_unless_quick(args)
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
    _write(output, console, "fuzz", render_fuzz_markdown(plan, report, command))
    return 0 if report.ok else 1


def _configure_store(parser: argparse.ArgumentParser) -> None:
    _add_quick_and_output(parser)


def _run_store(args: argparse.Namespace) -> int:
    plan = StorePlan.quick() if args.quick else StorePlan()
    command = "plyarena bench store" + (" --quick" if args.quick else "")
    output = _output_unless_quick(args)
    console = Console()
    with (
        console.status("committing moves three ways"),
        tempfile.TemporaryDirectory(prefix="plyarena-") as scratch,
    ):
        results = run_store_benchmark(plan, Path(scratch))
    markdown = render_store_markdown(plan, results, command)
    console.print(markdown)
    _write(output, console, "store", markdown)
    return 0


def _configure_moves(parser: argparse.ArgumentParser) -> None:
    _add_quick_and_output(parser)
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
    output = _output_unless_quick(args)
    console = Console()
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        task = progress.add_task("runs", total=plan.repeats * len(plan.thresholds))
        runs = run_moves_benchmark(plan, lambda: progress.advance(task))
    markdown = render_moves_markdown(plan, runs, command)
    console.print(markdown)
    _write(output, console, "moves", markdown)
    return 0


def _configure_broker(parser: argparse.ArgumentParser) -> None:
    _add_quick_and_output(parser)
    parser.add_argument("--duration", type=positive_float, metavar="S", help="seconds a count is measured")


def _run_broker(args: argparse.Namespace) -> int:
    plan = broker.BrokerPlan.quick() if args.quick else broker.BrokerPlan()
    plan = replace(plan, duration_s=args.duration or plan.duration_s)
    command = " ".join(
        ["plyarena bench broker", *(["--quick"] if args.quick else []),
         *([f"--duration {args.duration:g}"] if args.duration else [])]
    )  # fmt: skip
    output, console = _output_unless_quick(args), Console()
    try:
        with console.status("publishing match events from 1, 2 and 4 instances"):
            rows = broker.run_broker_benchmark(plan)
    except broker.BrokerMissingError as error:
        raise CommandError(str(error)) from None
    markdown = broker.render_markdown(plan, rows, command)
    console.print(markdown)
    _write(output, console, "broker", markdown)
    return 0


def _configure_commits(parser: argparse.ArgumentParser) -> None:
    _add_quick_and_output(parser)
    parser.add_argument(
        "--db", type=database_url, required=True, metavar="URL", help="a scratch database (PostgreSQL)"
    )
    parser.add_argument("--duration", type=positive_float, metavar="S", help="seconds a count is measured")


def _run_commits(args: argparse.Namespace) -> int:
    plan = commits.CommitsPlan.quick() if args.quick else commits.CommitsPlan()
    plan = replace(plan, duration_s=args.duration or plan.duration_s)
    command = " ".join(
        ["plyarena bench commits", *(["--quick"] if args.quick else []), f"--db {safe_url(args.db)}",
         *([f"--duration {args.duration:g}"] if args.duration else [])]
    )  # fmt: skip
    output, console = _output_unless_quick(args), Console()
    try:
        with console.status("committing moves"):
            settings, rows = commits.run_commits_benchmark(args.db, plan)
    except DatabaseOpenError as error:
        raise CommandError(str(error)) from None
    markdown = commits.render_markdown(args.db, settings, plan, rows, command)
    console.print(markdown)
    _write(output, console, "commits", markdown)
    return 0


def _configure_variety(parser: argparse.ArgumentParser) -> None:
    _add_quick_and_output(parser)
    parser.add_argument(
        "--matches", type=positive_int, help="games per level and seat (default 20; --quick: 3)"
    )


def _run_variety(args: argparse.Namespace) -> int:
    plan = VarietyPlan.quick() if args.quick else VarietyPlan()
    if args.matches is not None:
        plan = replace(plan, matches=args.matches)
    command = "plyarena bench variety" + (" --quick" if args.quick else "")
    command += f" --matches {args.matches}" if args.matches is not None else ""
    output = _output_unless_quick(args)
    console = Console()
    columns = (TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console) as progress:
        report = run_variety_benchmark(plan, command, RichTracker(progress).task)
    _print_tables(console, [variety_table(report), cost_table(report)], [summary(report.rows)])
    _write(output, console, "variety", render_variety_markdown(report))
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
        _configure_server,
        _run_server,
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
        _configure_broker,
        _run_broker,
    ),
    "commits": Mode(
        "durable moves a second through the store's group commits on a database, by matches moving at once",
        _configure_commits,
        _run_commits,
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
