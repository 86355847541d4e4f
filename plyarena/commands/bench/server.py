"""The server's ``plyarena bench`` modes: ``server`` (one process under load, or several with one killed),
``broker`` (match events through Mosquitto) and ``commits`` (durable moves through PostgreSQL)."""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from bench import broker, commits
from bench.loadgen import report as server_report
from bench.loadgen.failover import FailoverPlan, run_failover
from bench.loadgen.failover import render_markdown as render_failover_markdown
from bench.loadgen.run import MAX_NICENESS, ServerBenchPlan, run_server_benchmark
from bench.loadgen.run import MODES as SERVER_MODES
from bench.loadgen.target import TargetStartError
from games import GAMES
from plyarena.commands.bench.output import (
    DEFAULT_OUTPUT,
    add_quick_and_output,
    output_unless_quick,
    print_tables,
    write_output,
    write_section,
)
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
from server.storage.engine import safe_url
from server.storage.errors import DatabaseOpenError


def configure_server(parser: argparse.ArgumentParser) -> None:
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


def run_server(args: argparse.Namespace) -> int:
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
    print_tables(console, server_report.report_tables(report), report.notes)
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


def configure_broker(parser: argparse.ArgumentParser) -> None:
    add_quick_and_output(parser)
    parser.add_argument("--duration", type=positive_float, metavar="S", help="seconds a count is measured")


def run_broker(args: argparse.Namespace) -> int:
    plan = broker.BrokerPlan.quick() if args.quick else broker.BrokerPlan()
    plan = replace(plan, duration_s=args.duration or plan.duration_s)
    command = " ".join(
        ["plyarena bench broker", *(["--quick"] if args.quick else []),
         *([f"--duration {args.duration:g}"] if args.duration else [])]
    )  # fmt: skip
    output, console = output_unless_quick(args), Console()
    try:
        with console.status("publishing match events from 1, 2 and 4 instances"):
            rows = broker.run_broker_benchmark(plan)
    except broker.BrokerMissingError as error:
        raise CommandError(str(error)) from None
    markdown = broker.render_markdown(plan, rows, command)
    console.print(markdown)
    write_output(output, console, "broker", markdown)
    return 0


def configure_commits(parser: argparse.ArgumentParser) -> None:
    add_quick_and_output(parser)
    parser.add_argument(
        "--db", type=database_url, required=True, metavar="URL", help="a scratch database (PostgreSQL)"
    )
    parser.add_argument("--duration", type=positive_float, metavar="S", help="seconds a count is measured")


def run_commits(args: argparse.Namespace) -> int:
    plan = commits.CommitsPlan.quick() if args.quick else commits.CommitsPlan()
    plan = replace(plan, duration_s=args.duration or plan.duration_s)
    command = " ".join(
        ["plyarena bench commits", *(["--quick"] if args.quick else []), f"--db {safe_url(args.db)}",
         *([f"--duration {args.duration:g}"] if args.duration else [])]
    )  # fmt: skip
    output, console = output_unless_quick(args), Console()
    try:
        with console.status("committing moves"):
            settings, rows = commits.run_commits_benchmark(args.db, plan)
    except DatabaseOpenError as error:
        raise CommandError(str(error)) from None
    markdown = commits.render_markdown(args.db, settings, plan, rows, command)
    console.print(markdown)
    write_output(output, console, "commits", markdown)
    return 0
