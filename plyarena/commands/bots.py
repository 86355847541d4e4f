"""``plyarena bots``: a fleet of bots that takes seats in open lobbies, sharing one process pool."""

from __future__ import annotations

import argparse
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path

from bots.engine import EngineStartError, OutsideEngine
from bots.fleet import Fleet, FleetConfig, parse_levels
from bots.fleet_state import FleetState, FleetStateError
from bots.levels import LEVEL_COUNT
from bots.lobby_feeds import broker_name
from bots.pool import SearchPool
from plyarena import options
from plyarena.commands.serve import stop_on_signals
from server import eventloop
from server.bus import BrokerAddress

HELP = "run a bot fleet: seat bots in lobbies that ask for one, or where a person waits alone"
DEFAULT_SERVER = "ws://127.0.0.1:8765/ws"


def configure(parser: argparse.ArgumentParser) -> None:
    add_fleet_options(parser, state_default="none: a restarted fleet comes back as new bot players")
    parser.add_argument(
        "--server",
        action="append",
        type=options.websocket_url,
        metavar="URL",
        help=f"WebSocket URL of a server whose lobby to follow (repeatable; default {DEFAULT_SERVER} "
        "unless --mqtt is given)",
    )
    parser.add_argument(
        "--mqtt",
        type=options.mqtt_url,
        metavar="URL",
        help="follow the lobby topics of every server on this broker (mqtt://host:port) and offer bots "
        "there; with --server as well, or instead of it",
    )


def add_fleet_options(
    parser: argparse.ArgumentParser, *, state_default: str, key_default: str | None = None
) -> None:
    """The options of a fleet, shared with ``plyarena run``; ``state_default`` and ``key_default``: what no
    ``--state`` and no ``--fleet-key-file`` mean, when not the usual."""
    options.add_fleet_key_option(
        parser,
        "the servers' fleet key, so that they take this fleet's notes on bot requests",
        **({"default": key_default} if key_default else {}),
    )
    parser.add_argument(
        "--workers", type=options.positive_int, metavar="N", help="search processes (default: one per core)"
    )
    parser.add_argument(
        "--max-games",
        type=options.positive_int,
        default=8,
        metavar="M",
        help="games played at once, at most (default 8)",
    )
    parser.add_argument(
        "--levels",
        type=_levels,
        metavar="SPEC",
        help="levels offered, e.g. 1-8 (every game) or connect4:1-5,othello:3 (default: all of every game)",
    )
    parser.add_argument(
        "--idle-wait",
        type=options.finite_float,
        default=30.0,
        metavar="S",
        help="seconds a person waits alone in a public match before a bot joins (default 30; <0: never)",
    )
    parser.add_argument(
        "--public-level",
        type=_level,
        default=3,
        metavar="N",
        help="level of the bot that joins a public match nobody joined (default 3)",
    )
    parser.add_argument(
        "--engine",
        action="append",
        type=options.engine_command,
        metavar="NAME=COMMAND",
        help="run an outside UCI engine for the levels that name it (repeatable), e.g. "
        "stockfish=/usr/games/stockfish for chess's level 8; without it those levels are not offered",
    )
    parser.add_argument(
        "--engine-processes",
        type=options.positive_int,
        default=1,
        metavar="N",
        help="processes of each engine, each thinking for one game at a time (default 1)",
    )
    parser.add_argument(
        "--state",
        type=Path,
        metavar="FILE",
        help="keep each bot's player token in FILE (JSON, mode 600: tokens are secrets), so a restarted "
        "fleet comes back as the same bot players and plays on in their unfinished games instead of "
        f"forfeiting them (default: {state_default})",
    )


_levels = options.checked_by(lambda text: parse_levels(text, engines=None))
"""A ``--levels`` spec that :func:`parse_levels` accepts (its engines are checked with ``--engine``'s)."""


def _level(text: str) -> int:
    level = options.positive_int(text)
    if level > LEVEL_COUNT:
        raise argparse.ArgumentTypeError(f"{level} is not a level: levels run from 1 to {LEVEL_COUNT}")
    return level


def fleet_config(args: argparse.Namespace) -> FleetConfig:
    named = fleet_id_on(getattr(args, "mqtt", None))
    try:
        levels = parse_levels(args.levels, engines=[name for name, _ in args.engine or ()])
    except ValueError as error:
        raise options.CommandError(str(error)) from None
    return FleetConfig(
        levels=levels,
        max_games=args.max_games,
        idle_wait_s=None if args.idle_wait < 0 else args.idle_wait,
        public_level=args.public_level,
        fleet_key=options.fleet_key(args.fleet_key_file),
        **({"fleet_id": named} if named else {}),
    )


def fleet_id_on(mqtt_url: str | None) -> str | None:
    """The fleet's id on a broker it logs in to: its user's name, else ``None`` (a new id each run).

    A broker that binds each client id to its user, as docker-compose.yml's does, lets a fleet write
    only the offer named after its user (``plyarena/v1/bots/{user}``, deploy/mosquitto/acl); another
    fleet's offer cannot be written under a client id made up to match it.
    """
    username = BrokerAddress.parse(mqtt_url).username if mqtt_url else None
    if username is not None and any(character in username for character in "/+#\0"):
        raise options.CommandError(
            f"MQTT user {username!r} cannot name a fleet: its offer's topic level may hold no / + # or NUL"
        )
    return username


@contextlib.asynccontextmanager
async def running_engines(args: argparse.Namespace) -> AsyncIterator[dict[str, OutsideEngine]]:
    """The fleet's outside engines (``--engine``, ``--engine-processes``) by name, each started once now,
    so that a command that is no UCI engine is refused in one line before any game; stopped on leaving."""
    async with contextlib.AsyncExitStack() as stack:
        engines: dict[str, OutsideEngine] = {}
        for name, command in args.engine or ():
            if name in engines:
                raise options.CommandError(f"--engine {name} is given twice")
            engine = await stack.enter_async_context(
                OutsideEngine(name, command, processes=args.engine_processes)
            )
            try:
                await engine.start()
            except EngineStartError as error:
                raise options.CommandError(f"--engine: {error}") from None
            engines[name] = engine
        yield engines


def open_fleet_state(path: Path | None) -> FleetState | None:
    """The fleet's state file, read and written back at once (``None``: no file): one that cannot be
    read or written is refused here, in one line, before the fleet starts."""
    if path is None:
        return None
    try:
        return FleetState.open(path)
    except FleetStateError as error:
        raise options.CommandError(str(error)) from None


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("websockets").setLevel(logging.WARNING)
    servers = args.server or ([] if args.mqtt else [DEFAULT_SERVER])
    state = open_fleet_state(args.state)
    return eventloop.run(run_fleet(args, fleet_config(args), servers, args.mqtt, state))


async def run_fleet(
    args: argparse.Namespace,
    config: FleetConfig,
    servers: list[str],
    mqtt_url: str | None,
    state: FleetState | None = None,
) -> int:
    """Run a fleet until SIGINT or SIGTERM (its pool's ``--workers`` and its ``--engine``s from ``args``)."""
    stop = stop_on_signals()
    async with SearchPool(args.workers) as pool, running_engines(args) as engines:
        await pool.warm_up()
        fleet = Fleet(pool, config, state=state, engines=engines)
        for url in servers:
            fleet.follow_server(url)
        if mqtt_url:
            fleet.follow_mqtt(mqtt_url)
        async with fleet:
            where = ", ".join([*servers, *([broker_name(mqtt_url)] if mqtt_url else [])])
            offered = ", ".join(f"{game} {_ranges(levels)}" for game, levels in config.levels.items())
            print(f"Bot fleet {config.fleet_id}: {pool.workers} workers, up to {config.max_games} games, "
                  f"following {where}; offering {offered}", flush=True)  # fmt: skip
            if state is not None:
                print(f"  bot tokens kept in {state.path}", flush=True)
            await fleet.run_until(stop)
    return 0


def _ranges(levels: tuple[int, ...]) -> str:
    if len(levels) == 1:
        return f"L{levels[0]}"
    if levels == tuple(range(levels[0], levels[-1] + 1)):
        return f"L{levels[0]}-{levels[-1]}"
    return ",".join(f"L{level}" for level in levels)
