"""Everything an operator can tune about one server instance, with the defaults we ship."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from server.addresses import LOOPBACK_NETWORKS, PRIVATE_NETWORKS, parse_networks
from server.protocol_base import MAX_FLEET_KEY_LENGTH

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MAX_PORT = 65_535
MAX_CONNECTIONS_PER_ADDRESS = 100
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})
"""Listening addresses that mean every interface."""
WEB_CLIENT_DIR = Path(__file__).resolve().parent.parent / "clients" / "web"


INSTANCE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""What an instance id may be: it is a level of MQTT topics (no ``/``, ``+`` or ``#``) and is shown in
lobby entries."""


def new_instance_id() -> str:
    return f"arena-{secrets.token_hex(4)}"


def check_instance_id(text: str) -> None:
    """Raise ``ValueError`` unless ``text`` can name an instance (see :data:`INSTANCE_ID`)."""
    if not INSTANCE_ID.fullmatch(text):
        raise ValueError(
            f"{text!r} is not an instance id: use 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )


MIN_FLEET_KEY_LENGTH = 16
"""A fleet key's shortest: long enough not to be guessed (its longest is what a ``hello`` carries)."""


def new_fleet_key() -> str:
    """A fresh random fleet key (43 URL-safe characters), e.g. for a server and fleet started together."""
    return secrets.token_urlsafe(32)


def check_fleet_key(text: str) -> None:
    """Raise ``ValueError`` unless ``text`` can be a fleet key: 16 to 256 printable ASCII characters, no
    spaces (it travels in JSON and comes from files and environment variables, which add line ends)."""
    printable = all("!" <= character <= "~" for character in text)
    if not printable or not MIN_FLEET_KEY_LENGTH <= len(text) <= MAX_FLEET_KEY_LENGTH:
        raise ValueError(
            f"a fleet key is {MIN_FLEET_KEY_LENGTH} to {MAX_FLEET_KEY_LENGTH} printable ASCII characters "
            "without spaces (make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )


@dataclass(frozen=True, slots=True)
class ServerConfig:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    """0 picks a free port (tests); :attr:`Server.port` then tells which."""
    db_url: str | None = None
    """``None``: ``$PLYARENA_DB`` or ``plyarena.sqlite3`` in the working directory."""
    mqtt_url: str | None = None
    """``None``: the in-process bus; ``mqtt://host:port``: share events through a broker."""
    instance_id: str = field(default_factory=new_instance_id)
    """Names this instance in lobby entries and in the matches it hosts; keep it across restarts."""
    public_url: str | None = None
    """How clients reach this instance (``http://...``); derived from host and port when ``None``."""

    grace_s: float = 60.0
    """How long a seated player may stay away before losing the match."""
    lease_s: float = 10.0
    """On a PostgreSQL database that instances share: how long this instance's lease on its matches
    lasts unrenewed before another instance takes them over (see server/storage/leases.py)."""
    adoption_check_s: float | None = None
    """How often this instance looks for lapsed leases whose matches it should take over; ``None``: never
    (``plyarena serve`` looks every 2 s; a server in a test shares its database with unrelated ones)."""
    max_message_bytes: int = 4096
    """Larger requests are answered ``frame_too_large`` (the connection stays open)."""
    max_frame_bytes: int = 64 * 1024
    """Larger frames close the connection (code 1009) without being read."""
    rate_per_s: float = 20.0
    """Requests per second a connection may sustain ..."""
    rate_burst: int = 40
    """... and how many it may send at once."""
    max_open_matches: int = 10
    """Matches a player may have open (waiting for an opponent) at once: more would only flood the lobby."""
    max_open_public_matches: int = 5
    """... of them public (listed in everyone's lobby, where bots look for requests; 0: no cap beyond the
    one above) ..."""
    max_open_public_matches_per_address: int = 20
    """... and public ones opened from one client address (see :attr:`max_connections_per_address`), by all
    its players together: one person with many players cannot fill the lobby either. 0: no cap."""
    max_bot_games: int = 2
    """Games a player may play against bots at once, the ones whose bot request still waits counted (one
    person must not hold a fleet's every bot); 0: no cap. A trusted fleet's connections are not held to it."""
    bot_idle_untimed_s: float | None = 120.0
    """How long the player to move in an untimed game against a bot may leave their turn unplayed before the
    game ends and frees the bot (aborted if they never moved, else lost: :mod:`server.stalls`); ``None``:
    never."""
    chat_rate_per_s: float = 1.0
    """Chat lines a player may sustain per second, from all their connections together ..."""
    chat_burst: int = 10
    """... and say at once."""
    match_chat_rate_per_s: float = 2.0
    """Chat lines a match takes per second, from both its players together ..."""
    match_chat_burst: int = 20
    """... and at once."""
    max_chat_lines: int = 1000
    """Chat lines one match stores: past them the match's chat is full (a long game says a few dozen);
    0: no cap."""
    max_connections_per_address: int = MAX_CONNECTIONS_PER_ADDRESS
    """Connections one client address (an IPv6 one by its /64) may hold at once; 0: no cap. Without it the
    rate limit above is no limit: a client opens another connection. A household or an office behind one
    address holds a few; see :attr:`uncapped_networks` for fleets and proxies."""
    new_players_per_hour: float = 120.0
    """Players one address may make (``hello`` with a name) per hour, sustained ..."""
    new_players_burst: int = 30
    """... and at once: a class joining together. Returning players (``hello`` with a token) are free."""
    api_rate_per_s: float = 20.0
    """Requests to ``/api/...`` one address may make per second, sustained (each may read the database;
    a WebSocket's requests have their own limit above) ..."""
    api_burst: int = 60
    """... and at once: the finished-games page and a replay make a few each."""
    login_rate_per_s: float = 0.2
    """Logins and registrations one address, and one name, may try per second, sustained ..."""
    login_burst: int = 10
    """... and at once."""
    login_free_failures: int = 5
    """Wrong passwords in a row a name or an address may give before each further one locks it out ..."""
    login_max_lockout_s: float = 900.0
    """... for 1 s, then 2, 4... up to this (server/login_limits.py)."""
    uncapped_networks: tuple[str, ...] = LOOPBACK_NETWORKS
    """Addresses never held to the allowances above: this host (its fleet, load generators, tests), and
    whatever else an operator names, e.g. a bot fleet on another machine."""
    trusted_proxies: tuple[str, ...] = ()
    """Reverse proxies whose ``X-Forwarded-For`` names the client. Behind one not named here, every client
    shares the proxy's address (or, on this host, is uncapped)."""
    metrics_networks: tuple[str, ...] = LOOPBACK_NETWORKS + PRIVATE_NETWORKS
    """Who may read ``/metrics``: a scraper on this host or the private network, not the internet."""
    max_write_buffer_bytes: int = 4 * 1024 * 1024
    """A client that lets this much pile up unread is dropped instead of growing memory: the transport's
    buffer and the kernel's send queue counted (its send buffer is held to a quarter of this)."""
    allowed_origins: tuple[str, ...] | None = None
    """Browser ``Origin`` values allowed to open a WebSocket; ``None``: this server's own URL only.
    Clients that send no Origin (bots, scripts) are always allowed."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names an HTTP request (and the WebSocket handshake) may name in ``Host`` besides the public
    URL's, the listening address's (and, listening on loopback or every interface, ``localhost``,
    ``127.0.0.1`` and ``::1``) and the address the request reached; ``*`` allows any."""
    pool_bot_offer_s: float = 30.0
    """How long a player waits in a quick-pairing pool before a bot of about their rating is offered."""
    event_log_size: int = 256
    """Events kept per match for clients that reconnect; older gaps get a full state."""
    finished_ttl_s: float = 600.0
    """How long a finished match stays in memory (for rematches and late watchers)."""
    max_finished_in_memory: int = 2000
    """... and how many may (the ones played here and the ones loaded for a ``match.watch``): beyond it the
    least recently used that no player is still in (one of the last 3 finished they follow) goes first, kept
    in the store and loaded again when asked for. Without it, watching every finished match id would hold
    them all. 2,000 is ten minutes of a server ending three matches a second, some 100 MB at 50 kB a match
    (15 to 200 kB: tic-tac-toe to a long checkers game, with its event log). The match just added always
    stays: 0 keeps only that one."""
    fleet_key: str | None = field(default=None, repr=False)
    """The secret a bot fleet the operator trusts says in its ``hello``: only a connection that proved it may
    post ``bot.status`` notes, which people read as the fleet's word. ``None``: no connection may (a
    ``bot: true`` hello alone proves nothing). Kept out of ``repr``, so out of logs."""
    static_dir: Path = WEB_CLIENT_DIR

    def __post_init__(self) -> None:
        if not 0 <= self.port <= MAX_PORT:  # (uvloop would quietly listen on the port modulo 65536)
            raise ValueError(f"port {self.port} is not one: use 0 to {MAX_PORT} (0: any free one)")
        check_instance_id(self.instance_id)
        for networks in (self.uncapped_networks, self.trusted_proxies, self.metrics_networks):
            parse_networks(networks)
        if self.max_connections_per_address < 0:
            raise ValueError("max_connections_per_address must be 0 (no cap) or more")
        if self.new_players_per_hour <= 0 or self.new_players_burst < 1:
            raise ValueError("new players per hour and their burst must be positive")
        if self.fleet_key is not None:
            check_fleet_key(self.fleet_key)
        if self.login_rate_per_s <= 0 or self.login_burst < 1 or self.login_free_failures < 0:
            raise ValueError("logins per second and their burst must be positive, free failures 0 or more")
        if self.api_rate_per_s <= 0 or self.api_burst < 1:
            raise ValueError("API requests per second and their burst must be positive")
        chat_rates = (self.chat_rate_per_s, self.match_chat_rate_per_s)
        if min(chat_rates) <= 0 or min(self.chat_burst, self.match_chat_burst) < 1:
            raise ValueError("chat lines per second and their bursts must be positive")
        if self.max_bot_games < 0:
            raise ValueError("the cap on a person's bot games must be 0 (no cap) or more")
        if self.bot_idle_untimed_s is not None and not self.bot_idle_untimed_s > 0:
            raise ValueError("the time a stalled bot game is given must be positive (None: no limit)")
        caps = (self.max_open_public_matches, self.max_open_public_matches_per_address, self.max_chat_lines)
        if min(caps) < 0:
            raise ValueError("caps on open public matches and stored chat lines must be 0 (no cap) or more")

    @property
    def http_url(self) -> str:
        return (self.public_url or f"http://{self.host}:{self.port}").rstrip("/")

    @property
    def ws_url(self) -> str:
        base = self.http_url
        scheme, rest = base.split("://", 1)
        return f"{'wss' if scheme == 'https' else 'ws'}://{rest}/ws"
