"""Plain HTTP on the WebSocket port, through ``websockets``' ``process_request`` hook.

Serves the browser client (static files), ``/healthz``, ``/metrics`` and a small
read-only JSON API over the stored matches. Everything but ``/ws`` is answered
here; ``/ws`` goes on to the WebSocket handshake. Responses never contain a
token or its hash: records crossing this boundary carry none.
"""

from __future__ import annotations

import http
import logging
import re
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import msgspec
from websockets.datastructures import Headers, MultipleValuesError
from websockets.http11 import Request, Response

from games import GAMES
from server.addresses import AddressQuota, Network, in_networks
from server.bot_catalog import BotCatalog
from server.connection import Connection
from server.errors import ErrorCode
from server.export import export_extension, export_text
from server.http_headers import SECURITY_HEADERS, content_security_policy
from server.metrics import Metrics
from server.profile_api import ProfileNotFound, profile_json
from server.query import one_value, page_size
from server.static_files import StaticFiles
from server.storage import (
    FINISHED_STATUSES,
    MATCH_STATUSES,
    MAX_LIST_LIMIT,
    EngineInfo,
    MatchRecord,
    MoveRecord,
    StorageError,
    Store,
)
from server.tokens import hash_token

log = logging.getLogger(__name__)

WEBSOCKET_PATH = "/ws"
DEFAULT_PAGE_SIZE = 20

APP_PAGES = re.compile(r"/(?:match|replay|@)/[^/]+/?|/finished/?")
"""Paths the browser client routes itself: the server answers them with its index page."""

PLACEHOLDER_PAGE = """<!doctype html>
<html lang="en">
<meta charset="utf-8">
<title>Ply Arena</title>
<h1>Ply Arena</h1>
<p>The server is running. The browser client is not installed yet; meanwhile, see
<a href="/api/games">/api/games</a>, <a href="/api/matches">/api/matches</a> and
<a href="/healthz">/healthz</a>, or connect a client to the WebSocket endpoint <code>/ws</code>.</p>
</html>
"""

_json = msgspec.json.Encoder()


def _parts(path: str) -> list[str]:
    """The segments of ``path``, empty ones dropped (``/api//games`` is ``/api/games``)."""
    return [part for part in path.split("/") if part]


def _is_api(path: str) -> bool:
    return _parts(path)[:1] == ["api"]


class HttpError(Exception):
    def __init__(self, status: http.HTTPStatus, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class HttpFront:
    """Answers every HTTP request but the WebSocket upgrade on ``/ws``."""

    def __init__(
        self,
        store: Store,
        metrics: Metrics,
        instance: str,
        static_dir: Path,
        live_counts: Callable[[], dict[str, int]],
        bot_catalog: BotCatalog,
        quota: AddressQuota,
        metrics_readers: tuple[Network, ...],
        now: Callable[[], float],
        url_of: Callable[[str], str | None] = lambda instance: None,
        peer_urls: Callable[[], Iterable[str]] = tuple,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.instance = instance
        self.static_files = StaticFiles(static_dir)
        """The browser client, read into memory once, here, at start."""
        self.live_counts = live_counts
        self.bot_catalog = bot_catalog
        self.quota = quota
        """Who a request comes from, and how many connections that client may hold."""
        self.metrics_readers = metrics_readers
        """Clients that may read ``/metrics``."""
        self.now = now
        self.url_of = url_of
        """The WebSocket URL of an instance by its id, where known: where a match it hosts is played."""
        self.peer_urls = peer_urls
        """The WebSocket URLs of the other instances known: a page may follow a match to them."""
        self.allowed_origins: frozenset[str] | None = frozenset()
        """Browser origins that may open a WebSocket (``None``: any); clients that send none always may."""
        self.allowed_hosts: frozenset[str] | None = frozenset()
        """Host names a request may name in its ``Host`` header (``None``: any), besides the address it
        reached: a page of another site whose name was made to point here (DNS rebinding) names its own."""

    async def __call__(self, connection: Connection, request: Request) -> Response | None:
        url = urlsplit(request.path)
        try:
            self._check_host(connection, request)
            if url.path == WEBSOCKET_PATH:
                self._check_upgrade(connection, request.headers)
                return None
            if url.path == "/metrics":
                return self._metrics(connection, request.headers)
            if _is_api(url.path) or url.path == "/healthz":  # (each may read the database)
                self._check_api_rate(connection, request.headers)
            # Blank values kept: ``?limit=`` is present, and refused, not taken for an absent limit.
            query = parse_qs(url.query, keep_blank_values=True)
            return await self._route(url.path, query, request.headers)
        except HttpError as error:
            return _json_response({"error": {"code": error.code, "message": error.message}}, error.status)
        except StorageError as error:
            unavailable = {"code": ErrorCode.UNAVAILABLE, "message": f"storage unavailable: {error}"}
            return _json_response({"error": unavailable}, http.HTTPStatus.SERVICE_UNAVAILABLE)
        except MultipleValuesError as error:  # (``headers.get`` of a header sent twice)
            message = f"the header {error} is sent more than once: send it once"
            return _json_response(
                {"error": {"code": ErrorCode.BAD_FIELD, "message": message}}, http.HTTPStatus.BAD_REQUEST
            )
        except Exception:
            log.exception("HTTP request for %s failed", url.path)
            internal = {"code": ErrorCode.INTERNAL, "message": "a bug on the server; nothing changed"}
            return _json_response({"error": internal}, http.HTTPStatus.INTERNAL_SERVER_ERROR)

    async def _route(self, path: str, query: dict[str, list[str]], headers: Headers) -> Response:
        parts = _parts(path)
        if path == "/healthz":
            return await self._health()
        if _is_api(path):
            return await self._api(parts[1:], query, headers)
        return self._static(path, headers)

    def _check_host(self, connection: Connection, request: Request) -> None:
        """Refuse a request for a host this server is not (421), or one that names none (400; only
        HTTP/1.0 may, as load balancers' health checks do, and no browser)."""
        header = request.headers.get("Host")
        if header is None:
            if request.protocol == "HTTP/1.0":
                return
            message = "an HTTP/1.1 request must name its host: send a Host header"
            raise HttpError(http.HTTPStatus.BAD_REQUEST, ErrorCode.BAD_FIELD, message)
        name = host_name(header)
        if self.allowed_hosts is None or name in self.allowed_hosts:
            return
        reached = connection.transport.get_extra_info("sockname") if connection.transport else None
        if isinstance(reached, tuple) and name == str(reached[0]).lower():
            return
        message = f"this server does not answer for the host {header!r} (see the serve option --allow-host)"
        raise HttpError(http.HTTPStatus.MISDIRECTED_REQUEST, ErrorCode.NOT_ALLOWED, message)

    def _check_upgrade(self, connection: Connection, headers: Headers) -> None:
        """Refuse a WebSocket from a browser page of another site, or from a client holding its fill."""
        origin = headers.get("Origin")
        if origin is not None and self.allowed_origins is not None and origin not in self.allowed_origins:
            message = f"origin {origin!r} may not open a WebSocket here"
            raise HttpError(http.HTTPStatus.FORBIDDEN, ErrorCode.NOT_ALLOWED, message)
        if not self.quota.may_connect(self.quota.client_of(connection.remote_address, headers)):
            self.metrics.connections_refused_total += 1
            message = (
                f"your address holds as many connections as it may ({self.quota.max_connections}): "
                "close one, then connect again"
            )
            raise HttpError(http.HTTPStatus.TOO_MANY_REQUESTS, ErrorCode.RATE_LIMITED, message)

    def _check_api_rate(self, connection: Connection, headers: Headers) -> None:
        if not self.quota.may_query_api(self.quota.client_of(connection.remote_address, headers), self.now()):
            rate = self.quota.api_requests.rate_per_s
            message = f"more than {rate:g} API requests a second from your address: slow down"
            raise HttpError(http.HTTPStatus.TOO_MANY_REQUESTS, ErrorCode.RATE_LIMITED, message)

    def _metrics(self, connection: Connection, headers: Headers) -> Response:
        if not in_networks(self.quota.client_of(connection.remote_address, headers), self.metrics_readers):
            message = "metrics are for the operator's own network (see the serve option --metrics-from)"
            raise HttpError(http.HTTPStatus.FORBIDDEN, ErrorCode.NOT_ALLOWED, message)
        body = self.metrics.render(self.store.stats).encode()
        return _response(http.HTTPStatus.OK, body, "text/plain; version=0.0.4; charset=utf-8")

    async def _health(self) -> Response:
        try:
            await self.store.ping()
        except StorageError as error:
            body = {"status": "unavailable", "instance": self.instance, "database": str(error)}
            return _json_response(body, http.HTTPStatus.SERVICE_UNAVAILABLE)
        return _json_response({"status": "ok", "instance": self.instance, **self.live_counts()})

    async def _api(self, parts: list[str], query: dict[str, list[str]], headers: Headers) -> Response:
        if parts == ["games"]:
            return _json_response({"games": _games_json()})
        if parts == ["bots"]:
            return _json_response(self.bot_catalog.as_json())
        if parts == ["matches"]:
            return await self._list_matches(query, await self._bearer(headers))
        if len(parts) == 2 and parts[0] == "players":
            return await self._profile(parts[1], query)
        if len(parts) in (2, 3) and parts[0] == "matches":
            record = await self._stored_match(parts[1])
            if len(parts) == 2:
                return _json_response(match_json(record, with_moves=True, host_url=self.url_of(record.host)))
            if parts[2] == "export":
                return _export_response(record)
        raise HttpError(http.HTTPStatus.NOT_FOUND, ErrorCode.NOT_FOUND, f"no API at /api/{'/'.join(parts)}")

    async def _profile(self, name: str, query: dict[str, list[str]]) -> Response:
        try:
            return _json_response(await profile_json(self.store, name, query))
        except ValueError as error:
            raise _bad_query(str(error)) from None
        except ProfileNotFound as error:
            raise HttpError(http.HTTPStatus.NOT_FOUND, ErrorCode.NOT_FOUND, str(error)) from None

    async def _stored_match(self, match_id: str) -> MatchRecord:
        """The stored match ``match_id``; a 404 for one there is none of, whatever else the path asks."""
        record = await self.store.get_match(match_id)
        if record is None:
            raise HttpError(http.HTTPStatus.NOT_FOUND, ErrorCode.NOT_FOUND, f"no match {match_id!r}")
        return record

    async def _bearer(self, headers: Headers) -> str | None:
        """The player whose token ``Authorization: Bearer TOKEN`` presents, if it does; a token that
        belongs to nobody is refused rather than ignored, so a client learns its token is stale."""
        scheme, _, token = headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        player = await self.store.player_by_token_hash(hash_token(token.strip()))
        if player is None:
            raise HttpError(
                http.HTTPStatus.UNAUTHORIZED, ErrorCode.BAD_TOKEN, "this token belongs to no player"
            )
        return player.id

    async def _list_matches(self, query: dict[str, list[str]], viewer: str | None) -> Response:
        """Public matches, and the private ones ``viewer`` (the bearer's player) holds a seat in."""

        try:
            game, status = one_value(query, "game"), one_value(query, "status")
            player, before = one_value(query, "player"), one_value(query, "before")
            limit = page_size(one_value(query, "limit"), DEFAULT_PAGE_SIZE, MAX_LIST_LIMIT)
        except ValueError as error:
            raise _bad_query(str(error)) from None
        if game is not None and game not in GAMES:
            raise _bad_query(f"unknown game {game!r}; known games: {', '.join(sorted(GAMES))}")
        if status is not None and status not in MATCH_STATUSES:
            raise _bad_query(f"unknown status {status!r}; use one of {', '.join(MATCH_STATUSES)}")
        records = await self.store.list_matches(
            game=game, status=status, player_id=player, limit=limit + 1, before=before, private_of=viewer
        )
        # One more than the page: whether there is a next page, so an exactly full last page says none.
        page = [
            match_json(record, with_moves=False, host_url=self.url_of(record.host))
            for record in records[:limit]
        ]
        next_before = records[limit - 1].id if len(records) > limit else None
        return _json_response({"matches": page, "next_before": next_before})

    def _static(self, path: str, headers: Headers) -> Response:
        response = self._static_file(path, headers)
        if response.headers.get("Content-Type", "").startswith("text/html"):
            # The app follows a match hosted by another instance to its WebSocket: the page may connect
            # there as well as here.
            del response.headers["Content-Security-Policy"]
            response.headers["Content-Security-Policy"] = content_security_policy(self.peer_urls())
        return response

    def _static_file(self, path: str, headers: Headers) -> Response:
        app_page = path in ("", "/") or APP_PAGES.fullmatch(path) is not None
        files = self.static_files
        found = files.get("index.html" if app_page else path.lstrip("/"))
        if found is not None:
            return files.response(found, headers)
        if app_page or _wants_page(headers):
            # A browser following a mistyped or stale link gets the app all the same, whose router
            # shows its "Not found" page; the status still says so.
            index = files.get("index.html")
            if index is not None:
                return files.response(index, headers, http.HTTPStatus.NOT_FOUND)
            status = http.HTTPStatus.OK if app_page else http.HTTPStatus.NOT_FOUND
            return _response(status, PLACEHOLDER_PAGE.encode(), "text/html; charset=utf-8")
        raise HttpError(http.HTTPStatus.NOT_FOUND, ErrorCode.NOT_FOUND, f"nothing at {path}")


def host_name(host: str) -> str:
    """The name in a ``Host`` header or a URL's authority, as compared: no port, no brackets around an
    IPv6 address, lower case, no trailing dot (``Arena.Example.:443`` is ``arena.example``); ``""`` for
    one that is not a host and port."""
    try:
        name = urlsplit(f"//{host}").hostname
    except ValueError:  # (an unclosed bracket)
        return ""
    return (name or "").rstrip(".")


def _games_json() -> list[dict[str, Any]]:
    """The games this server plays, as ``/api/games`` lists them."""
    return [
        {
            "name": game.name,
            "title": game.title,
            "sides": list(game.sides),
            "notation": game.notation,
            "display_notation": game.display_notation,
            "pieces": {mark: {"seat": piece.seat, "name": piece.name} for mark, piece in game.pieces.items()},
        }
        for game in GAMES.values()
    ]


def _export_response(record: MatchRecord) -> Response:
    """``/api/matches/{id}/export``: the match as text in its game's notation (PDN for checkers), to read
    or save; a 404 for a match of a game this server no longer has."""
    game = GAMES.get(record.game)
    if game is None:
        raise HttpError(http.HTTPStatus.NOT_FOUND, ErrorCode.NOT_FOUND, f"no game {record.game!r}")
    extension = export_extension(game)
    response = _response(http.HTTPStatus.OK, export_text(record, game).encode(), "text/plain; charset=utf-8")
    filename = f"plyarena-{record.game}-{record.id}.{extension}"
    response.headers["Content-Disposition"] = f'inline; filename="{filename}"'
    return response


def _wants_page(headers: Headers) -> bool:
    """Whether the request is a browser's navigation (it accepts HTML), not a script's or an API's."""
    return "text/html" in ",".join(headers.get_all("Accept"))


def match_json(record: MatchRecord, *, with_moves: bool, host_url: str | None = None) -> dict[str, Any]:
    """A stored match as the API shows it: players by id and name, never a token; ``host_url`` is where
    its host instance serves, if known."""
    body: dict[str, Any] = {
        "id": record.id,
        "game": record.game,
        "status": record.status,
        "options": record.options,
        "host": record.host,
        "host_url": host_url,
        "created_at": _iso(record.created_at),
        "started_at": _iso(record.started_at),
        "finished_at": _iso(record.finished_at),
        "winner": record.winner,
        "reason": record.reason,
        "rematch_of": record.rematch_of,
        "seats": [
            {
                "seat": seat.seat,
                "player": {"id": seat.player_id, "name": seat.player_name, "bot": seat.is_bot},
            }
            for seat in sorted(record.seats, key=lambda seat: seat.seat)
        ],
    }
    if with_moves:
        body["rematch_id"] = record.rematch_id
        moves = sorted(record.moves, key=lambda move: move.ply)
        # A bot's search only once the match is over: until then its opponent would read the bot's plan.
        over = record.status in FINISHED_STATUSES
        body["moves"] = [_move_json(move, with_engine=over) for move in moves]
        game = GAMES.get(record.game)
        if game is not None:
            notation = [move.notation for move in moves]
            positions = game.history(notation)
            # Every position of the game, start first: replay viewers draw them without rules.
            body["boards"] = [list(p.grid()) for p in positions]
            # And each move as people write it (SAN), where the game writes it otherwise than the wire.
            for row, shown in zip(body["moves"], game.displayed(positions, notation) or (), strict=False):
                row["display"] = shown
    return body


def _move_json(move: MoveRecord, *, with_engine: bool) -> dict[str, Any]:
    engine = move.engine if with_engine else None
    return {
        "ply": move.ply,
        "seat": move.seat,
        "move": move.notation,
        "think_ms": move.think_ms,
        "played_at": _iso(move.played_at),
        "clocks_ms": list(move.clocks_ms) if move.clocks_ms is not None else None,
        "engine": None if engine is None else _engine_json(engine),
    }


def _engine_json(engine: EngineInfo) -> dict[str, Any]:
    """A bot's word on its move, as it gave it: ``null`` for what it did not say (a book move's depth)."""
    return {
        "source": engine.source,
        "score": engine.score,
        "depth": engine.depth,
        "nodes": engine.nodes,
        "pv": list(engine.pv),
        "time_ms": engine.time_ms,
    }


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _bad_query(message: str) -> HttpError:
    return HttpError(http.HTTPStatus.BAD_REQUEST, ErrorCode.BAD_FIELD, message)


def _response(status: http.HTTPStatus, body: bytes, content_type: str) -> Response:
    headers = Headers(
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            *SECURITY_HEADERS,
        ]
    )
    return Response(status.value, status.phrase, headers, body)


def _json_response(body: object, status: http.HTTPStatus = http.HTTPStatus.OK) -> Response:
    return _response(status, _json.encode(body), "application/json")
