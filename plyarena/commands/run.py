"""``plyarena run``: everything a person needs to play, on one URL (what ``make run`` starts).

The server and a bot fleet, in one process: the fleet is a client of the server
like any other (it follows the lobby and plays over the WebSocket), and
announces its offer on the server's in-process bus so ``/api/bots`` lists every
level of every game. The fleet keeps its bots' tokens beside the database (see
:func:`default_fleet_state`), so after a restart the server restores its matches
and the fleet plays on in them. This module, the composition root, is the one
place that starts both.
"""

from __future__ import annotations

import argparse
import asyncio
from dataclasses import replace
from pathlib import Path

from bots.fleet import Fleet
from bots.pool import SearchPool
from plyarena import options
from plyarena.commands.bots import add_fleet_options, fleet_config, open_fleet_state, running_engines
from plyarena.commands.serve import prepare_server_process, started_server, stop_on_signals
from server import eventloop
from server.config import DEFAULT_HOST, DEFAULT_PORT, ServerConfig, new_fleet_key
from server.storage.engine import async_url, database_url

HELP = "start Ply Arena with its defaults (SQLite in the working directory) and a bot fleet; print the URL"
STATE_SUFFIX = ".fleet.json"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"interface to listen on (default {DEFAULT_HOST})"
    )
    parser.add_argument(
        "--port", type=options.port, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})"
    )
    parser.add_argument("--no-bots", action="store_true", help="start the server alone, without a bot fleet")
    add_fleet_options(
        parser,
        key_default=f"${options.FLEET_KEY_ENV}, else a new one at each start, given to server and fleet",
        state_default=f"beside the SQLite database and named after it, e.g. plyarena{STATE_SUFFIX} beside "
        "plyarena.sqlite3: the tokens belong to that database's players, whose games a restarted server "
        f"restores; plyarena{STATE_SUFFIX} in the working directory with PostgreSQL; none in memory",
    )


def run(args: argparse.Namespace) -> int:
    prepare_server_process()
    config = ServerConfig(
        host=args.host,
        port=args.port,
        instance_id=f"arena-{args.port}",
        fleet_key=options.fleet_key(args.fleet_key_file),
    )
    return eventloop.run(run_arena(config, None if args.no_bots else args, tune_gc=True))


async def run_arena(
    config: ServerConfig,
    fleet_args: argparse.Namespace | None,
    stop: asyncio.Event | None = None,
    *,
    tune_gc: bool = False,
) -> int:
    """Serve (with a fleet unless ``fleet_args`` is ``None``) until ``stop`` is set, or SIGINT or SIGTERM;
    ``tune_gc`` as :func:`~plyarena.commands.serve.started_server`'s. Server and fleet share the
    config's fleet key, a new one if it has none, so the server takes the fleet's notes."""
    if config.fleet_key is None:
        config = replace(config, fleet_key=new_fleet_key())
    state = None
    if fleet_args is not None:
        state = open_fleet_state(fleet_args.state or default_fleet_state(config.db_url))
    if stop is None:
        stop = stop_on_signals()
    async with started_server(config, stop, tune_gc=tune_gc) as server:
        print(f"Ply Arena is running at {server.http_url}/", flush=True)
        print(f"  WebSocket endpoint {server.ws_url} (instance {server.config.instance_id})", flush=True)
        if fleet_args is None:
            await stop.wait()
            return 0

        async def announce(topic: str, payload: bytes) -> None:
            await server.bus.publish(topic, payload, retain=True)

        async with SearchPool(fleet_args.workers) as pool, running_engines(fleet_args) as engines:
            await pool.warm_up()
            fleet_settings = replace(fleet_config(fleet_args), fleet_key=config.fleet_key)
            fleet = Fleet(pool, fleet_settings, announce=announce, state=state, engines=engines)
            fleet.follow_server(server.ws_url)
            async with fleet:
                games = fleet.config.max_games
                kept = f"; bot tokens kept in {state.path}" if state is not None else ""
                print(f"  bot fleet: {pool.workers} workers, up to {games} games{kept}", flush=True)
                await fleet.run_until(stop)
    return 0


def default_fleet_state(db_url: str | None) -> Path | None:
    """Where ``plyarena run`` keeps its fleet's tokens by default: beside its SQLite database file, named
    after it, as the tokens belong to that database (a new database, a new file); in the working directory
    for PostgreSQL; nowhere for an in-memory database, whose players end with the process."""
    try:
        url = async_url(database_url(db_url))
    except ValueError:
        return None  # the server refuses the URL, saying why
    if url.get_backend_name() != "sqlite":
        return Path(f"plyarena{STATE_SUFFIX}")
    if not url.database or url.database == ":memory:":
        return None
    return Path(url.database).with_suffix(STATE_SUFFIX)
