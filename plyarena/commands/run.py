"""``plyarena run``: everything a person needs to play, on one URL (what ``make run`` starts).

The server and a bot fleet, in one process: the fleet is a client of the server
like any other (it follows the lobby and plays over the WebSocket), and
announces its offer on the server's in-process bus so ``/api/bots`` lists every
level of every game. This module, the composition root, is the one place that
starts both.
"""

from __future__ import annotations

import argparse
import asyncio

from bots.fleet import Fleet
from bots.pool import SearchPool
from plyarena import options
from plyarena.commands.bots import add_fleet_options, fleet_config
from plyarena.commands.serve import prepare_server_process, started_server, stop_on_signals
from server import eventloop
from server.config import DEFAULT_HOST, DEFAULT_PORT, ServerConfig

HELP = "start Ply Arena with its defaults (SQLite in the working directory) and a bot fleet; print the URL"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"interface to listen on (default {DEFAULT_HOST})"
    )
    parser.add_argument(
        "--port", type=options.port, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})"
    )
    parser.add_argument("--no-bots", action="store_true", help="start the server alone, without a bot fleet")
    add_fleet_options(parser)


def run(args: argparse.Namespace) -> int:
    prepare_server_process()
    config = ServerConfig(host=args.host, port=args.port, instance_id=f"arena-{args.port}")
    return eventloop.run(run_arena(config, None if args.no_bots else args, tune_gc=True))


async def run_arena(
    config: ServerConfig,
    fleet_args: argparse.Namespace | None,
    stop: asyncio.Event | None = None,
    *,
    tune_gc: bool = False,
) -> int:
    """Serve (with a fleet unless ``fleet_args`` is ``None``) until ``stop`` is set, or SIGINT or SIGTERM;
    ``tune_gc`` as :func:`~plyarena.commands.serve.started_server`'s."""
    if stop is None:
        stop = stop_on_signals()
    async with started_server(config, tune_gc=tune_gc) as server:
        print(f"Ply Arena is running at {server.http_url}/", flush=True)
        print(f"  WebSocket endpoint {server.ws_url} (instance {server.config.instance_id})", flush=True)
        if fleet_args is None:
            await stop.wait()
            return 0

        async def announce(topic: str, payload: bytes) -> None:
            await server.bus.publish(topic, payload, retain=True)

        async with SearchPool(fleet_args.workers) as pool:
            await pool.warm_up()
            fleet = Fleet(pool, fleet_config(fleet_args), announce=announce)
            fleet.follow_server(server.ws_url)
            async with fleet:
                games = fleet.config.max_games
                print(f"  bot fleet: {pool.workers} workers, up to {games} games", flush=True)
                await fleet.run_until(stop)
    return 0
