"""``plyarena serve``: run one server instance until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator

from plyarena import options
from plyarena.options import CommandError
from server import eventloop
from server.addresses import LOOPBACK_NETWORKS, parse_network
from server.app import Server, running_server
from server.config import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    MAX_CONNECTIONS_PER_ADDRESS,
    WILDCARD_HOSTS,
    ServerConfig,
    check_instance_id,
    new_instance_id,
)
from server.errors import ServerStartError
from server.limits import gc_thresholds, raise_open_files_limit, tune_garbage_collector
from server.storage.claims import CLAIM_CHECK_S
from server.storage.engine import DEFAULT_DATABASE_URL

HELP = "serve the WebSocket protocol, the HTTP API and the browser client on one port"


NETWORK_OPTIONS = (
    (
        "--uncapped-network",
        "uncapped_networks",
        LOOPBACK_NETWORKS,
        "clients never held to the per-address caps, e.g. a bot fleet's host (repeatable; this host's "
        "loopback always is)",
    ),
    (
        "--trusted-proxy",
        "trusted_proxies",
        (),
        "a reverse proxy whose X-Forwarded-For names the client (repeatable; default: none)",
    ),
    (
        "--metrics-from",
        "metrics_networks",
        LOOPBACK_NETWORKS,
        "clients that may read /metrics besides this host's loopback (repeatable; default: private networks)",
    ),
)
"""Options naming networks (each repeatable): the :class:`ServerConfig` field each sets, the networks it
always keeps (this host's loopback, not to be locked out by naming another), and its help."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default=DEFAULT_HOST, help=f"interface to listen on (default {DEFAULT_HOST})"
    )
    parser.add_argument(
        "--port", type=options.port, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any)"
    )
    parser.add_argument(
        "--db",
        type=options.database_url,
        metavar="URL",
        help=f"database URL (default $PLYARENA_DB, else {DEFAULT_DATABASE_URL})",
    )
    parser.add_argument(
        "--mqtt",
        type=options.mqtt_url,
        metavar="URL",
        help="MQTT broker, e.g. mqtt://127.0.0.1:1883 (default: none)",
    )
    parser.add_argument(
        "--instance-id",
        type=options.checked_by(check_instance_id),
        metavar="ID",
        help="name of this instance (letters, digits, '.', '_', '-'); keep it across restarts to restore "
        "its matches",
    )
    parser.add_argument(
        "--public-url",
        type=options.http_url,
        metavar="URL",
        help="how clients reach this instance (http[s]://...)",
    )
    parser.add_argument(
        "--grace",
        type=options.non_negative_float,
        default=60.0,
        metavar="SECONDS",
        help="how long a player may be away (default 60)",
    )
    parser.add_argument(
        "--pool-bot-offer",
        type=options.non_negative_float,
        default=30.0,
        metavar="SECONDS",
        help="how long a player waits in a quick-pairing pool before a bot is offered (default 30)",
    )
    parser.add_argument(
        "--lease",
        type=lease_seconds,
        default=10.0,
        metavar="SECONDS",
        help="on a PostgreSQL database shared by instances: how long this instance's matches stay its own "
        "once it cannot renew its lease (killed, or cut off), before another instance takes them over "
        f"(default 10; at least {MIN_LEASE_S:g}, as an idle instance renews it every {CLAIM_CHECK_S:g} s)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="a browser origin allowed to connect (repeatable; '*' for any; default: this server's URL)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="a host name requests may name in their Host header besides the public URL's and the "
        "listening address's (repeatable; '*' for any)",
    )
    parser.add_argument(
        "--max-connections-per-address",
        type=options.non_negative_int,
        default=MAX_CONNECTIONS_PER_ADDRESS,
        metavar="N",
        help="connections one client address (IPv6: its /64) may hold at once, and as many again opening; "
        f"0: no cap (default {MAX_CONNECTIONS_PER_ADDRESS})",
    )
    parser.add_argument(
        "--max-bot-games",
        type=options.non_negative_int,
        default=2,
        metavar="N",
        help="games a person may play against bots at once, those waiting for their bot counted; 0: no cap "
        "(default 2)",
    )
    parser.add_argument(
        "--bot-idle-untimed",
        type=options.non_negative_float,
        default=120.0,
        metavar="SECONDS",
        help="how long the player to move in an untimed game against a bot may leave their turn unplayed "
        "before the game ends and frees the bot (aborted before their first move, else lost); 0: never "
        "(default 120)",
    )
    options.add_fleet_key_option(
        parser, "the secret of the bot fleets this server trusts to post notes on bot requests (none: no one)"
    )
    for flag, field, _, what in NETWORK_OPTIONS:
        parser.add_argument(
            flag,
            dest=field,
            action="append",
            type=options.checked_by(parse_network),
            metavar="CIDR",
            help=what,
        )


ADOPTION_CHECK_S = 2.0
"""How often a served instance looks for lapsed leases whose matches it should take over."""
MIN_LEASE_S = 1.5 * CLAIM_CHECK_S
"""A lease shorter than this could lapse between two renewals of an idle instance."""


def lease_seconds(text: str) -> float:
    """``--lease``: a number of seconds, long enough to outlast the wait between two renewals."""
    value = options.finite_float(text)
    if value < MIN_LEASE_S:
        raise argparse.ArgumentTypeError(f"{text} is too short: use at least {MIN_LEASE_S:g}")
    return value


def config_from(args: argparse.Namespace) -> ServerConfig:
    return ServerConfig(
        host=args.host,
        port=args.port,
        db_url=args.db,
        mqtt_url=args.mqtt,
        instance_id=args.instance_id or _default_instance_id(args),
        public_url=args.public_url,
        grace_s=args.grace,
        pool_bot_offer_s=args.pool_bot_offer,
        lease_s=args.lease,
        adoption_check_s=ADOPTION_CHECK_S,
        allowed_origins=tuple(args.allow_origin) if args.allow_origin else None,
        allowed_hosts=tuple(args.allow_host or ()),
        max_connections_per_address=args.max_connections_per_address,
        max_bot_games=args.max_bot_games,
        bot_idle_untimed_s=args.bot_idle_untimed or None,
        fleet_key=options.fleet_key(args.fleet_key_file),
        **_networks_given(args),
    )


def _networks_given(args: argparse.Namespace) -> dict[str, tuple[str, ...]]:
    """The network options given, as config fields; those not given keep the config's defaults."""
    given = ((field, kept, getattr(args, field)) for _, field, kept, _ in NETWORK_OPTIONS)
    return {field: (*kept, *networks) for field, kept, networks in given if networks}


def _default_instance_id(args: argparse.Namespace) -> str:
    """Stable across restarts of a server on the same port, so its matches come back; random with port 0."""
    return f"arena-{args.port}" if args.port else new_instance_id()


def run(args: argparse.Namespace) -> int:
    prepare_server_process()
    config = config_from(args)
    if (warning := unreachable_url_warning(config)) is not None:
        logging.getLogger("plyarena.serve").warning(warning)
    return eventloop.run(serve_until_stopped(config))


def unreachable_url_warning(config: ServerConfig) -> str | None:
    """What to say when the server would name itself by a URL nobody can use: listening on every
    interface without ``--public-url``, its lobby entries and allowed origin say ``0.0.0.0``."""
    if config.public_url is None and config.host in WILDCARD_HOSTS:
        return (
            f"listening on {config.host or 'every interface'} without --public-url: lobby entries will name "
            f"{config.http_url}, which no fleet can reach, and browsers are refused as other origins; "
            "pass --public-url http://THIS-HOST:PORT"
        )
    return None


def prepare_server_process() -> None:
    """What a process that serves needs before it starts: logging, descriptors, and its settings from
    the environment checked, so that a bad one stops it here, in one line, not once serving."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("websockets").setLevel(logging.WARNING)
    raise_open_files_limit()  # one descriptor per connection
    try:
        gc_thresholds()
        eventloop.loop_factory()
    except ValueError as error:
        raise CommandError(str(error)) from None


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM: a clean shutdown instead of a traceback."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signum, stop.set)
    return stop


@contextlib.asynccontextmanager
async def started_server(
    config: ServerConfig, stop: asyncio.Event, *, tune_gc: bool
) -> AsyncIterator[Server]:
    """:func:`running_server`, its start-up failures (a port in use, a database not found) told in one
    line; with ``tune_gc``, the process's garbage collector tuned once it has started (see
    server/limits.py: for a server's own process, not a test's).

    Sets ``stop`` if the server loses its instance to another server (see ``Store.claim_lost``), and
    then fails with :class:`CommandError` once shut down: two servers must not host the same matches,
    and a supervisor that restarts this one sees it refused while the other runs."""
    async with contextlib.AsyncExitStack() as stack:
        try:
            server = await stack.enter_async_context(running_server(config))
        except ServerStartError as error:
            raise CommandError(str(error)) from None
        if tune_gc:
            tune_garbage_collector()
        lost = server.store.claim_lost
        watch = asyncio.create_task(lost.wait(), name="plyarena-claim")
        watch.add_done_callback(lambda _: stop.set() if lost.is_set() else None)
        stack.callback(watch.cancel)
        yield server
    if lost.is_set():
        raise CommandError(
            f"stopped: another server took instance {config.instance_id!r} while this one was cut off "
            "from the database"
        )


async def serve_until_stopped(config: ServerConfig) -> int:
    """Serve until SIGINT or SIGTERM, printing where; then shut down cleanly."""
    stop = stop_on_signals()
    async with started_server(config, stop, tune_gc=True) as server:
        print(f"Ply Arena is serving at {server.http_url}/", flush=True)
        print(f"  WebSocket endpoint {server.ws_url} (instance {server.config.instance_id})", flush=True)
        await stop.wait()
    return 0
