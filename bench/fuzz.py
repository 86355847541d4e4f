"""``plyarena bench fuzz``: the protocol fuzzer's long run, against a server in a process of its own.

The fuzzer is a test tool and lives with the tests: ``tests/support/fuzz.py``
makes the bad messages and knows how each must be answered, and
``tests/support/fuzz_arena.py`` drives a live server with them (and plays
real matches beside them). Benchmarks run from a source checkout (``bench
engine`` reads Pons' test sets from it too), so this mode finds them there
rather than shipping an attack tool in the installed package.

The server runs as ``plyarena serve`` would, in a child process (so a crash
cannot hide in the bench's own loop, and the two share the machine's cores),
with its per-connection rate limit lifted: each fuzzed connection sends its
next message as soon as the last is answered. Several fuzzed players (each
with a stranger connection that never says hello) send ``messages`` in all,
while scripted pairs play real games one after another. It reports the
answers by error code, every answer the protocol does not allow, the server's
own ``internal`` count, whether the real games finished normally, and whether
any stored row of the fuzzed players changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import random
import signal
import socket
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from bench.machine import machine_description
from server.app import running_server
from server.config import ServerConfig
from server.errors import ServerStartError
from server.storage.engine import create_engine

TESTS_DIR = Path(__file__).resolve().parents[1] / "tests"
GAMES = ("tictactoe", "connect4", "othello", "checkers")
START_TIMEOUT_S = 60.0


class FuzzerMissingError(RuntimeError):
    """Not run from a source checkout: the fuzzer (in tests/support) is not there."""


@dataclass(frozen=True, slots=True)
class FuzzPlan:
    messages: int = 100_000
    players: int = 8
    """Fuzzed players sending at once (each also speaks through a stranger connection)."""
    scripted_pairs: int = 4
    """Pairs of scripted clients playing real games beside the fuzzing, one game after another."""
    pace_s: float = 0.05
    """Pause before each scripted move."""
    seed: int = 1

    @classmethod
    def quick(cls) -> FuzzPlan:
        return cls(messages=2_000, players=2, scripted_pairs=2)


@dataclass
class FuzzReport:
    messages: int = 0
    seconds: float = 0.0
    by_code: dict[str, int] = field(default_factory=dict)
    by_kind: dict[str, int] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)
    """Answers the protocol does not allow (the first few), extra answers included."""
    wrong_count: int = 0
    server_errors: dict[str, int] = field(default_factory=dict)
    """``plyarena_errors_total`` by code, as the server counted them."""
    server_alive: bool = False
    games_played: int = 0
    game_problems: list[str] = field(default_factory=list)
    stored_rows_changed: bool = True
    database: str = ""

    @property
    def internal(self) -> int:
        return self.server_errors.get("internal", 0)

    @property
    def ok(self) -> bool:
        return (
            self.wrong_count == 0
            and self.internal == 0
            and self.server_alive
            and not self.game_problems
            and not self.stored_rows_changed
        )


def find_fuzzer() -> None:
    """Make the checkout's tests/support importable (as ``support``), as pytest does for the tests.

    The functions below import from it when they run, not when this module loads, so ``plyarena``
    works without a checkout; only this mode needs one.
    """
    if not (TESTS_DIR / "support" / "fuzz.py").is_file():
        raise FuzzerMissingError(f"the fuzzer is not in {TESTS_DIR / 'support'}: run from a source checkout")
    if str(TESTS_DIR) not in sys.path:
        sys.path.insert(0, str(TESTS_DIR))


# --------------------------------------------------------------------------- the server process


def _serve(config: ServerConfig) -> None:
    """The child process: serve until SIGTERM; a server that cannot start says why in one line."""

    async def serve() -> None:
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        async with running_server(config):
            await stop.wait()

    try:
        asyncio.run(serve())
    except ServerStartError as error:
        print(f"the fuzzed server: {error}", file=sys.stderr, flush=True)
        sys.exit(1)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _http_text(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


@contextlib.asynccontextmanager
async def server_process(db_url: str) -> AsyncIterator[tuple[BaseProcess, ServerConfig]]:
    """A server in a child process with rate limits lifted; yields the process and its config.

    Raises :class:`ServerStartError` when it does not answer; the child has said why on stderr.
    """
    config = ServerConfig(
        port=_free_port(), db_url=db_url, instance_id="bench-fuzz", rate_per_s=1e9, rate_burst=10**9
    )
    process = multiprocessing.get_context("spawn").Process(target=_serve, args=(config,), name="fuzz-server")
    process.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                await asyncio.to_thread(_http_text, f"{config.http_url}/healthz")
                break
            except OSError:
                if not process.is_alive() or time.monotonic() > deadline:
                    raise ServerStartError("the fuzzed server did not start") from None
                await asyncio.sleep(0.1)
        yield process, config
    finally:
        if process.is_alive():
            process.terminate()
        await asyncio.to_thread(process.join, 10)


def server_errors(http_url: str) -> dict[str, int]:
    """``plyarena_errors_total`` by code, from ``/metrics``."""
    errors = {}
    for line in _http_text(f"{http_url}/metrics").splitlines():
        if line.startswith('plyarena_errors_total{code="'):
            labels, value = line.rsplit(" ", 1)
            errors[labels.split('"')[1]] = int(float(value))
    return errors


# --------------------------------------------------------------------------- the run


async def run_fuzz_benchmark(
    plan: FuzzPlan, db_url: str | None = None, on_message: Callable[[], None] = lambda: None
) -> FuzzReport:
    find_fuzzer()
    from support.client import ArenaClient

    with tempfile.TemporaryDirectory(prefix="plyarena-bench-fuzz-") as scratch:
        url = db_url or f"sqlite+aiosqlite:///{Path(scratch) / 'fuzz.sqlite3'}"
        report = FuzzReport(database=url.split(":", 1)[0].split("+", 1)[0])
        async with server_process(url) as (process, config), contextlib.AsyncExitStack() as clients:

            async def open_client(ws_url: str) -> Any:
                client = await ArenaClient.connect(ws_url)
                clients.push_async_callback(client.close)
                return client

            await _fuzz(plan, open_client, config, url, report, on_message)
            report.server_alive = process.is_alive()
            report.server_errors = await asyncio.to_thread(server_errors, config.http_url)
    return report


async def _fuzz(
    plan: FuzzPlan,
    open_client: Callable[[str], Any],
    config: ServerConfig,
    db_url: str,
    report: FuzzReport,
    on_message: Callable[[], None],
) -> None:
    from support.fuzz import FuzzTally
    from support.fuzz_arena import FuzzedPlayer, ScriptedMatch, stored_rows

    pairs = []
    for index in range(plan.scripted_pairs):
        first, second = await open_client(config.ws_url), await open_client(config.ws_url)
        await first.hello(f"Scripted {index}a")
        await second.hello(f"Scripted {index}b")
        pairs.append((first, second))
    first_games = [
        await ScriptedMatch.start(*pair, GAMES[index % len(GAMES)]) for index, pair in enumerate(pairs)
    ]
    others = [match.match_id for match in first_games]
    players = [
        await FuzzedPlayer.open(
            config.ws_url, open_client, own_games=("tictactoe", "checkers"), others=others,
            watch=others[index % len(others)] if others else None, games=GAMES, label=f"Fuzz {index}",
        )
        for index in range(plan.players)
    ]  # fmt: skip
    database = create_engine(db_url)
    try:
        player_ids = [player_id for player in players for player_id in player.player_ids]
        before = await stored_rows(database, player_ids)
        fuzzing = asyncio.Event()
        fuzzing.set()
        scripted = [
            asyncio.create_task(_play_games(pair, match, plan.pace_s, fuzzing, config, report))
            for pair, match in zip(pairs, first_games, strict=True)
        ]
        tally = FuzzTally()
        started = time.perf_counter()
        quotas = [plan.messages // plan.players + (index < plan.messages % plan.players) for index in
                  range(plan.players)]  # fmt: skip
        await asyncio.gather(*(
            _send_cases(player, quota, plan.seed * 1000 + index, tally, on_message)
            for index, (player, quota) in enumerate(zip(players, quotas, strict=True))
        ))  # fmt: skip
        report.seconds = time.perf_counter() - started
        fuzzing.clear()
        await asyncio.gather(*scripted)
        report.stored_rows_changed = await stored_rows(database, player_ids) != before
    finally:
        await database.dispose()
    extra = [problem for player in players for problem in player.extra_answers]
    report.messages, report.by_code, report.by_kind = tally.sent, tally.by_code, tally.by_kind
    report.wrong = (tally.wrong + extra)[:20]
    report.wrong_count = tally.wrong_count + len(extra)


async def _send_cases(player: Any, count: int, seed: int, tally: Any, on_message: Callable[[], None]) -> None:
    from support.fuzz import fuzz_case
    from support.fuzz_values import RandomChoices

    choices = RandomChoices(random.Random(seed))
    for _ in range(count):
        case = fuzz_case(choices, player.arena)
        tally.record(case, await player.send(case))
        on_message()


async def _play_games(
    pair: tuple[Any, Any],
    match: Any,
    pace_s: float,
    fuzzing: asyncio.Event,
    config: ServerConfig,
    report: FuzzReport,
) -> None:
    """Play ``match``, then one game after another (swapping colours) until the fuzzing stops."""
    from support.fuzz_arena import ScriptedMatch, api_get

    games = 0
    while True:
        try:
            ended = await match.play(pace_s)
            _, record = await api_get(config.http_url, f"/api/matches/{match.match_id}")
            report.game_problems += match.problems(ended, record)
        except (AssertionError, ConnectionError) as error:
            report.game_problems.append(f"{match.game} match {match.match_id} did not finish: {error}")
            return
        report.games_played += 1
        games += 1
        if not fuzzing.is_set():
            return
        first, second = pair if games % 2 == 0 else pair[::-1]
        match = await ScriptedMatch.start(first, second, GAMES[games % len(GAMES)])


# --------------------------------------------------------------------------- reporting


def code_rows(report: FuzzReport) -> list[tuple[str, str]]:
    return [(code, f"{count:,}") for code, count in sorted(report.by_code.items(), key=lambda item: -item[1])]


def kind_rows(report: FuzzReport) -> list[tuple[str, str]]:
    return [(kind, f"{count:,}") for kind, count in sorted(report.by_kind.items(), key=lambda item: -item[1])]


def summary_lines(plan: FuzzPlan, report: FuzzReport) -> list[str]:
    rate = report.messages / report.seconds if report.seconds else 0.0
    return [
        f"messages: {report.messages:,} in {report.seconds:.1f} s ({rate:,.0f}/s) from {plan.players} fuzzed "
        f"players and {plan.players} strangers, server on {report.database}",
        f"wrong answers: {report.wrong_count}",
        f"internal errors counted by the server: {report.internal}",
        f"server process alive at the end: {'yes' if report.server_alive else 'no'}",
        f"real games played beside: {report.games_played}, finished normally: "
        f"{report.games_played - len(report.game_problems)}",
        f"stored rows of the fuzzed players changed: {'yes' if report.stored_rows_changed else 'none'}",
    ]


def render_markdown(plan: FuzzPlan, report: FuzzReport, command: str) -> str:
    machine = machine_description()
    lines = [
        "## Protocol fuzzing",
        "",
        f"`{command}` on {machine}, {time.strftime('%Y-%m-%d')}. One server process ({report.database}, "
        "rate limit lifted) gets malformed, truncated, oversized, wrongly typed, unknown-field and "
        "out-of-place messages (tests/support/fuzz.py) while scripted pairs play real games beside them; "
        "every answer is checked against the error codes of docs/protocol.md.",
        "",
        *(f"- {line}" for line in summary_lines(plan, report)),
        "",
        "### Answers by error code",
        "",
        "| code | answers |",
        "|---|---|",
        *(f"| {code} | {count} |" for code, count in code_rows(report)),
        "",
        "### Messages by kind",
        "",
        "| kind | sent |",
        "|---|---|",
        *(f"| {kind} | {count} |" for kind, count in kind_rows(report)),
    ]
    problems = report.wrong + report.game_problems
    if problems:
        lines += ["", "### Problems", "", *(f"- {problem}" for problem in problems)]
    return "\n".join(lines) + "\n"
