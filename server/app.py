"""The Ply Arena server: one port for WebSocket clients, the browser client and the HTTP API.

This is the asyncio shell. It reads frames, decodes them with
:mod:`server.protocol`, checks who is asking, and hands each request to
:class:`~server.live.MatchHost`, which runs the pure match logic and commits
before anything is broadcast. Every refused request is answered with one
``error`` message and changes nothing; no request can crash the server or
close another player's match.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hmac
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from websockets.frames import CloseCode
from websockets.http11 import Request as HttpRequest

from server import protocol
from server.accounts import Accounts
from server.addresses import AddressQuota, Allowance, parse_networks
from server.bot_catalog import BotCatalog
from server.bus import EventBus, bus_from_url
from server.clock import describe
from server.config import LOOPBACK_HOSTS, WILDCARD_HOSTS, ServerConfig
from server.connection import Connection
from server.errors import ErrorCode, ProtocolError, ServerStartError, storage_failure
from server.fair_use import BotGameCap, ChatLimits, check_open_matches, joins_a_bot
from server.http import HttpFront, host_name
from server.ids import new_match_id
from server.listener import Listener
from server.live import MatchHost, player_info
from server.lobby import TOPIC_ROOT, Lobby
from server.match import Match, requested_game
from server.match_actions import MATCH_ACTIONS
from server.metrics import Metrics, measure_loop_lag
from server.pool_service import PoolService
from server.protocol import Request, UndecodableRequest
from server.rating_updates import Rater, with_rated
from server.storage import DatabaseOpenError, InstanceTakenError, StorageError, Store
from server.storage.engine import database_url
from server.text import clean_text

log = logging.getLogger(__name__)

websockets_log = logging.getLogger("server.websockets")
"""The websockets library's log for our connections, capped at INFO: its DEBUG lines print whole frames,
and frames carry tokens."""
websockets_log.setLevel(logging.INFO)

Handler = Callable[[Connection, Any], Awaitable[object]]
"""Handles one kind of request: what it returns is awaited, as the request's task."""


class Server:
    """One server instance around an open store and a started bus (both owned by the caller)."""

    def __init__(
        self,
        config: ServerConfig,
        store: Store,
        bus: EventBus,
        *,
        now: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.bus = bus
        self.now = now
        self.rng = rng or random.SystemRandom()
        self.metrics = Metrics(bus_dropped=lambda: bus.dropped_publishes)
        self.lobby = Lobby(config.instance_id, bus.publish_nowait)
        self.host = MatchHost(
            config,
            store,
            self.lobby,
            bus.publish_nowait,
            self.metrics,
            now,
            lambda: self.ws_url,
        )
        self.bot_catalog = BotCatalog()
        self.rater = Rater(store, self.bot_catalog)
        self.host.on_finished = self.rater.notice
        self.chat_limits = ChatLimits.of(config)
        self.bot_games = BotGameCap(self.host, config.max_bot_games)
        self.pool = PoolService(
            config,
            self.host,
            bus,
            self.bot_catalog,
            self.rng,
            rating_of=store.rating_of,
            bot_games=self.bot_games,
        )
        self.quota = AddressQuota(
            config.max_connections_per_address,
            new_players=Allowance(config.new_players_per_hour / 3600, config.new_players_burst),
            api_requests=Allowance(config.api_rate_per_s, config.api_burst),
            uncapped=parse_networks(config.uncapped_networks),
            trusted_proxies=parse_networks(config.trusted_proxies),
        )
        self.http = HttpFront(
            store,
            self.metrics,
            config.instance_id,
            config.static_dir,
            self.host.counts,
            self.bot_catalog,
            self.quota,
            parse_networks(config.metrics_networks),
            now,
            self._url_of,
            lambda: self.lobby.instance_urls.values(),
        )
        self.accounts = Accounts(config, store, self.quota, bus, now)
        self._listener: Listener | None = None
        self._lobby_task: asyncio.Task[None] | None = None
        self._bot_catalog_task: asyncio.Task[None] | None = None
        self._logouts_task: asyncio.Task[None] | None = None
        self._loop_lag_task: asyncio.Task[None] | None = None
        self._adoption_task: asyncio.Task[None] | None = None
        self._rating_task: asyncio.Task[None] | None = None
        self._handlers: dict[type[Request], Handler] = {
            protocol.LobbySubscribe: self._lobby_subscribe,
            protocol.LobbyUnsubscribe: self._lobby_unsubscribe,
            protocol.CreateMatch: self._create,
            protocol.JoinMatch: self._join,
            protocol.WatchMatch: self._watch,
            protocol.LeaveMatch: self._leave,
            protocol.SetBotStatus: self._bot_status,
            protocol.Register: self.accounts.register,
            protocol.Logout: self.accounts.logout,
            **dict.fromkeys(MATCH_ACTIONS, self._act),
            **self.pool.handlers(),
        }

    # ----------------------------------------------------------------- lifecycle

    @property
    def port(self) -> int:
        return self.config.port

    @property
    def http_url(self) -> str:
        return self.config.http_url

    @property
    def ws_url(self) -> str:
        return self.config.ws_url

    async def start(self) -> None:
        """Bind, restore the matches this instance hosted, then start accepting connections."""
        self._listener = listener = await Listener.start(
            self.config.host,
            self.config.port,
            process_request=self.http,
            opened=self._opened,
            received=self._receive,
            closed=self._closed,
            quota=self.quota,
            refused=self._refused_at_accept,
            max_size=self.config.max_frame_bytes,
            max_buffer=self.config.max_write_buffer_bytes,
            rate_per_s=self.config.rate_per_s,
            rate_burst=self.config.rate_burst,
            server_header="Ply Arena",
            logger=websockets_log,
        )
        if self.config.port == 0:
            port = listener.sockets[0].getsockname()[1]
            self.config = replace(self.config, port=port)
            self.host.config = self.config
        self.http.allowed_origins = self._allowed_origins()
        self.http.allowed_hosts = self._allowed_hosts()
        self.bus.announce_url(self.ws_url)
        restored = await self.host.restore()
        if restored:
            log.info("restored %d matches hosted by %s", restored, self.config.instance_id)
        self._lobby_task = asyncio.create_task(self._follow_bus_lobby(), name="plyarena-lobby")
        self._bot_catalog_task = asyncio.create_task(self.bot_catalog.follow(self.bus), name="plyarena-bots")
        self._logouts_task = asyncio.create_task(self.accounts.follow_logouts(), name="plyarena-logouts")
        self._loop_lag_task = asyncio.create_task(
            measure_loop_lag(self.metrics.loop_lag_seconds), name="plyarena-loop-lag"
        )
        if self.config.adoption_check_s is not None:
            self._adoption_task = asyncio.create_task(
                self._adopt_lapsed(self.config.adoption_check_s), name="plyarena-adoption"
            )
        self._rating_task = asyncio.create_task(self.rater.run(), name="plyarena-ratings")
        gc.callbacks.append(self.metrics.time_collections)
        self.pool.start()
        await listener.start_serving()

    async def close(self) -> None:
        """Stop accepting and close connections (code 1001); the bus, closed after, sends what waits for
        its broker. Unless another server took this instance, and speaks for it on the bus now: then
        say nothing there."""
        if self.store.claim_lost.is_set():
            self.bus.disown()  # (withdrawn entries and an offline status would be the other server's)
        if self._listener is not None:
            self._listener.close()
            await self._listener.wait_closed()
        await self.pool.close()
        await self.host.close()
        self.lobby.withdraw()
        with contextlib.suppress(ValueError):  # (not there if start failed)
            gc.callbacks.remove(self.metrics.time_collections)
        tasks = (
            self._lobby_task,
            self._bot_catalog_task,
            self._logouts_task,
            self._loop_lag_task,
            self._adoption_task,
        )
        for task in (*tasks, self._rating_task):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        await self.rater.close()

    async def _adopt_lapsed(self, every_s: float) -> None:
        """Every ``every_s`` seconds, take over the matches of instances whose lease
        lapsed (on PostgreSQL; there is none on SQLite) and play them on here; the first check at once, so
        that the first instance up adopts the matches of those that never came back."""
        while True:
            try:
                adopted = await self.store.adopt_lapsed()
                if adopted:
                    restored = await self.host.restore(only=set(adopted))
                    log.warning("took over %d matches of instances whose lease lapsed", restored)
            except Exception:
                log.exception("taking over the matches of lapsed instances failed; trying again")
            await asyncio.sleep(every_s)

    def _url_of(self, instance: str) -> str | None:
        """The WebSocket URL of ``instance``: this server's, or another's as its status on the bus says."""
        return self.ws_url if instance == self.config.instance_id else self.lobby.instance_urls.get(instance)

    async def _follow_bus_lobby(self) -> None:
        try:
            await self.lobby.follow_bus(self.bus, self.host.is_open_here)
        except Exception:
            log.exception("stopped following the lobby on the bus; local matches are still listed")

    def _allowed_origins(self) -> frozenset[str] | None:
        """Browser origins that may open a WebSocket; ``None`` allows any (configured with ``*``)."""
        if self.config.allowed_origins is not None:
            if "*" in self.config.allowed_origins:
                return None
            return frozenset(origin.rstrip("/") for origin in self.config.allowed_origins)
        own = urlsplit(self.http_url)
        origins = {f"{own.scheme}://{own.netloc}"}
        if self.config.host in LOOPBACK_HOSTS:
            origins |= {f"http://localhost:{self.port}", f"http://127.0.0.1:{self.port}"}
        return frozenset(origins)

    def _allowed_hosts(self) -> frozenset[str] | None:
        """Host names requests may name (see :attr:`ServerConfig.allowed_hosts`); ``None``: any."""
        if "*" in self.config.allowed_hosts:
            return None
        names = {host_name(urlsplit(self.http_url).netloc), host_name(self.config.host)}
        if self.config.host in LOOPBACK_HOSTS | WILDCARD_HOSTS:
            names |= LOOPBACK_HOSTS
        names |= {host_name(name) for name in self.config.allowed_hosts}
        return frozenset(names - {""})

    # ----------------------------------------------------------------- connections

    def _refused_at_accept(self) -> None:
        self.metrics.connections_refused_total += 1

    def _opened(self, connection: Connection, request: HttpRequest) -> bool:
        """Count a connection in once upgraded (its request's headers are let go after); ``False`` if
        its address holds its fill: handshakes at once may all have passed the HTTP check."""
        address = self.quota.client_of(connection.remote_address, request.headers)
        if not self.quota.connected(address):
            self.metrics.connections_refused_total += 1
            connection.close(CloseCode.TRY_AGAIN_LATER, "too many connections from your address")
            return False
        connection.address = address
        self.metrics.connections += 1
        self.metrics.connections_total += 1
        return True

    async def _closed(self, connection: Connection) -> None:
        """Count a connection out once closed and every message before the close is handled."""
        self.metrics.connections -= 1
        self.quota.disconnected(connection.address)
        self.lobby.subscribers.discard(connection)
        self.pool.disconnected(connection)
        self.accounts.closed(connection)
        await self.host.disconnected(connection)

    async def _receive(self, connection: Connection, frame: str | bytes) -> None:
        """Handle a message (in the connection's task, its next message waiting for this one): a text
        frame as ``str``, its UTF-8 checked by the connection, a binary one as ``bytes``. A refused
        request is answered with one ``error`` and changes nothing."""
        self.metrics.requests_total += 1
        request = self._admit(connection, frame)
        if request is None:
            return
        try:
            await self._dispatch(connection, request)
        except Exception as error:
            self._refuse_error(connection, error, request.id)

    def _admit(self, connection: Connection, frame: str | bytes) -> Request | None:
        """The request in ``frame``, within the connection's rate limit; ``None`` once refused."""
        if not connection.bucket.take(self.now()):
            self._refuse(
                connection,
                ErrorCode.RATE_LIMITED,
                f"more than {self.config.rate_per_s:g} requests per second: request dropped",
                protocol.peek_request_id(frame, self.config.max_message_bytes),
            )
            return None
        try:
            return protocol.decode_request(
                frame, self.config.max_message_bytes, binary=isinstance(frame, bytes)
            )
        except UndecodableRequest as error:
            self._refuse(connection, error.code, error.message, error.request_id)
            return None

    def _dispatch(self, connection: Connection, request: Request) -> Awaitable[object]:
        """The handling of ``request``: its handler's, once the connection has said hello (watching
        needs no hello: see :data:`READ_ONLY`)."""
        if isinstance(request, protocol.Hello):
            return self._hello(connection, request)
        if connection.player is None and type(request) not in READ_ONLY:
            raise ProtocolError(
                ErrorCode.HELLO_REQUIRED,
                "say hello first (with a name, or your token): only watching needs none",
            )
        return self._handlers[type(request)](connection, request)

    def _refuse_error(self, connection: Connection, error: Exception, request_id: protocol.RequestId) -> None:
        """Refuse a request that failed with ``error``: as the refusal or the store's failure says, or else
        as an internal error, logged."""
        if isinstance(error, StorageError):
            error = storage_failure(error)
        elif not isinstance(error, ProtocolError):
            log.error("request %r failed", request_id, exc_info=error)
            error = ProtocolError(ErrorCode.INTERNAL, "internal error: nothing was changed")
        self._refuse(connection, error.code, error.message, request_id, error.url)

    def _refuse(
        self,
        connection: Connection,
        code: ErrorCode,
        message: str,
        request_id: protocol.RequestId,
        url: str | None = None,
    ) -> None:
        self.metrics.errors_total[code] += 1
        connection.send(protocol.error_message(code, message, request_id, url))

    # ----------------------------------------------------------------- identity

    async def _hello(self, connection: Connection, request: protocol.Hello) -> None:
        if connection.player is not None:
            raise ProtocolError(
                ErrorCode.NOT_ALLOWED, f"this connection is already {connection.player.name!r}"
            )
        if request.fleet_key is not None:
            self._check_fleet_key(request.fleet_key)
        player, token = await self.accounts.identify(connection, request)
        connection.player = player
        connection.trusted_fleet = request.fleet_key is not None
        connection.send(
            protocol.Welcome(
                player=player_info(player),
                token=token,
                protocol=protocol.PROTOCOL_VERSION,
                instance=self.config.instance_id,
                matches=self.host.unfinished_of(player.id),
                claimed=player.claimed,
                id=request.id,
            )
        )

    def _check_fleet_key(self, given: str) -> None:
        """Refuse a ``hello`` whose fleet key is not the one this server was given (compared in constant
        time, and never logged nor echoed)."""
        expected = self.config.fleet_key
        if expected is None:
            raise ProtocolError(
                ErrorCode.BAD_FLEET_KEY, "this server trusts no fleet key: say hello without one"
            )
        if not hmac.compare_digest(given.encode(), expected.encode()):
            raise ProtocolError(
                ErrorCode.BAD_FLEET_KEY, "that is not this server's fleet key: ask its operator for it"
            )

    # ----------------------------------------------------------------- lobby

    async def _lobby_subscribe(self, connection: Connection, request: protocol.LobbySubscribe) -> None:
        self.lobby.subscribers.add(connection)
        connection.send(self.lobby.snapshot(request.id))

    async def _lobby_unsubscribe(self, connection: Connection, request: protocol.LobbyUnsubscribe) -> None:
        self.lobby.subscribers.discard(connection)
        connection.send(protocol.Ok(id=request.id))

    # ----------------------------------------------------------------- matches

    async def _create(self, connection: Connection, request: protocol.CreateMatch) -> None:
        game, control = requested_game(request.game, request.time_control)
        if request.bot is not None and request.visibility == "private":
            # Bots find matches in the lobby, which lists no private match: it would wait for ever.
            raise ProtocolError(
                ErrorCode.BAD_FIELD, "a private match is listed nowhere, so no bot finds it: make it public"
            )
        options = protocol.MatchOptions(
            time_control=describe(control), visibility=request.visibility, bot=request.bot
        )
        options = with_rated(options, request, self.bot_catalog)
        assert connection.player is not None
        address_key = self.quota.key_of(connection.address)
        public = request.visibility == "public"
        check_open_matches(self.config, self.host, connection.player.id, public, address_key)
        seat = self.rng.choice((0, 1)) if request.seat == "random" else request.seat
        match = Match.open(new_match_id(), game, options, self.config.grace_s)
        with self.bot_games.asked(connection, request.bot is not None):
            await self.host.create(match, connection, seat, request.id, address_key)

    async def _join(self, connection: Connection, request: protocol.JoinMatch) -> None:
        live = await self.host.get(request.match_id)
        assert connection.player is not None
        with self.bot_games.asked(connection, joins_a_bot(live.match, connection.player.is_bot)):
            await self.host.join(live, connection, request.seat, request.id)

    async def _watch(self, connection: Connection, request: protocol.WatchMatch) -> None:
        live = await self.host.get(request.match_id)
        await self.host.watch(live, connection, request.log, request.since, request.id)

    async def _leave(self, connection: Connection, request: protocol.LeaveMatch) -> None:
        live = self.host.matches.get(request.match_id)
        if live is None or request.match_id not in connection.matches:
            raise ProtocolError(ErrorCode.NOT_FOUND, f"you do not follow match {request.match_id!r}")
        await self.host.leave(live, connection)
        connection.send(protocol.Ok(id=request.id))

    async def _bot_status(self, connection: Connection, request: protocol.SetBotStatus) -> None:
        assert connection.player is not None
        if not connection.trusted_fleet:  # (people read a note as the fleet's word: only a trusted fleet's)
            raise ProtocolError(
                ErrorCode.NOT_A_FLEET,
                "only a fleet this server trusts (hello with its fleet_key) posts notes on bot requests",
            )
        reason = clean_text(request.reason, "reason", protocol.MAX_BOT_STATUS_LENGTH)
        live = await self.host.get(request.match_id)
        note = protocol.BotStatus(state=request.state, reason=reason, by=connection.player.name)
        await self.host.note_bot_status(live, note)
        connection.send(protocol.Ok(id=request.id))

    def _act(self, connection: Connection, request: Any) -> Awaitable[None]:
        """Every request that a seated player makes within a match (see :data:`MATCH_ACTIONS`): the
        host's one path, whose coroutine :meth:`_receive` awaits."""
        player = connection.player
        assert player is not None
        resend = (request.ply, request.move) if isinstance(request, protocol.PlayMove) else None
        intent = MATCH_ACTIONS[type(request)](request, player.id)
        if isinstance(request, protocol.SendChat):
            intent = self.chat_limits.guard(intent, player.id, request.match_id)
        elif isinstance(request, protocol.OfferRematch | protocol.AcceptRematch):
            intent = self.bot_games.guard_rematch(intent, connection)
        return self.host.act(request.match_id, intent, connection, request.id, resend)


READ_ONLY: frozenset[type[Request]] = frozenset(
    {protocol.LobbySubscribe, protocol.LobbyUnsubscribe, protocol.WatchMatch, protocol.LeaveMatch}
)
"""The requests a connection may make before ``hello``: following the lobby and watching matches, which
change nothing, so that anyone with a link can watch without picking a name."""


@contextlib.asynccontextmanager
async def running_server(config: ServerConfig, **server_options: Any) -> AsyncIterator[Server]:
    """Open the store and the bus, start a :class:`Server`, and close all three on exit.

    Raises :class:`ServerStartError` when the database cannot be opened, another server runs as its
    instance on it (or, on an SQLite file, the instance's lock file cannot be taken), or the port
    cannot be listened on.
    """
    url = database_url(config.db_url)
    await _check_port(config)  # first: a port in use is said before the database is opened or migrated
    try:
        store = await Store.open(url, migrate=True)
    except DatabaseOpenError as error:
        raise ServerStartError(str(error)) from error
    try:
        try:
            await store.claim_instance(config.instance_id, lease_s=config.lease_s)
        except InstanceTakenError as error:
            raise ServerStartError(f"{error}: give each server its own --instance-id") from error
        except DatabaseOpenError as error:  # (an SQLite file's lock file cannot be opened or locked)
            raise ServerStartError(str(error)) from error
        bus = bus_from_url(
            config.mqtt_url,
            client_id=f"plyarena-server-{config.instance_id}",
            status_topic=f"{TOPIC_ROOT}/instances/{config.instance_id}",
        )
        await bus.start()
        try:
            server = Server(config, store, bus, **server_options)
            try:
                await server.start()
            except OSError as error:
                await server.close()
                raise _cannot_listen(config, error) from error
            try:
                yield server
            finally:
                await server.close()
        finally:
            await bus.close()
    finally:
        await store.close()


async def _check_port(config: ServerConfig) -> None:
    """Raise :class:`ServerStartError` if ``config``'s port cannot be listened on (taken, privileged, an
    unknown host): bound as :meth:`Server.start` binds it (the loop's ``create_server``, not listening),
    then let go at once. Not a reservation: a port taken after this fails :meth:`Server.start` with the
    same error, only later."""
    if config.port == 0:
        return  # any free port: none to find taken
    try:
        probe = await asyncio.get_running_loop().create_server(
            asyncio.Protocol, config.host, config.port, start_serving=False
        )
    except OSError as error:
        raise _cannot_listen(config, error) from error
    probe.close()
    await probe.wait_closed()


def _cannot_listen(config: ServerConfig, error: OSError) -> ServerStartError:
    return ServerStartError(f"cannot listen on {config.host}:{config.port}: {error.strerror or error}")
