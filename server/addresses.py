"""Who is on the other end of a connection, and how much one address may take.

A per-connection rate limit (:class:`server.token_bucket.TokenBucket`) is
sidestepped by opening more connections, and each ``hello`` with a name makes a
stored player, and each request to the HTTP API may read the database. So one
address may hold only so many connections at once (and as many sockets that
have not sent their request yet), and make new players and API requests only
so fast. Clients behind one address share its allowances:
an IPv6 client counts by its /64, the block a single host or home is given, or
a client with a fresh address for each connection would get a fresh allowance.

Behind a reverse proxy every client arrives from the proxy's address; for
proxies named as trusted, the client is the address the proxy reports in
``X-Forwarded-For``. Networks named as uncapped (by default the loopback: this
host's own fleet, load generators and tests) are never limited.
"""

from __future__ import annotations

import ipaddress
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

from websockets.datastructures import Headers

from server.token_bucket import TokenBucket

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

FORWARDED_FOR = "X-Forwarded-For"
LOOPBACK_NETWORKS = ("127.0.0.0/8", "::1/128")
PRIVATE_NETWORKS = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7")
"""RFC 1918 and unique local addresses: a data centre's or a compose file's own network."""
IPV6_CLIENT_PREFIX = 64
"""An IPv6 client is its /64: a host or home is given one, and picks addresses in it at will."""
MAX_BUCKETS = 50_000
"""Allowances of one kind remembered at most (some 10 MB): past that the least recently used is forgotten,
in constant time, so that a client with many addresses (an IPv6 /48 holds 65,536 /64s) can neither grow
memory without bound nor make each request a pass over all of them."""
UNREADABLE_CLIENT = ipaddress.IPv4Address("0.0.0.0")
"""Who a client is when a trusted proxy names it in a way that is not an address (``unknown``, garbage):
all such clients share one allowance, capped and kept from ``/metrics``, rather than pass for the proxy."""


def parse_network(text: str) -> Network:
    """``10.0.0.0/8``, ``fd00::/8`` or one address (a network of one); ``ValueError`` that names the text.
    IPv4 written as IPv6 (``::ffff:10.0.0.0/104``) is read as IPv4, as client addresses are."""
    try:
        network = ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(f"{text!r} is not an IP address or network like 10.0.0.0/8") from None
    mapped = network.network_address.ipv4_mapped if isinstance(network, ipaddress.IPv6Network) else None
    if mapped is not None and network.prefixlen >= 96:
        return ipaddress.IPv4Network((mapped, network.prefixlen - 96))
    return network


def parse_networks(texts: Iterable[str]) -> tuple[Network, ...]:
    return tuple(parse_network(text) for text in texts)


def in_networks(address: Address | None, networks: Iterable[Network]) -> bool:
    return address is not None and any(address in network for network in networks)


def parse_address(text: str | None) -> Address | None:
    """An address as a socket or a proxy gives it, with or without a port (``1.2.3.4:5678``,
    ``[2001:db8::1]:5678``, as some proxies send it); an IPv4 client of an IPv6 socket as IPv4. ``None``
    if it is not one."""
    if not text:
        return None
    text = text.strip()
    if text.startswith("["):  # [IPv6] or [IPv6]:port
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:  # IPv4:port (an IPv6 address has two colons or more)
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def client_address(
    peer: str | None, forwarded_for: str | None, trusted_proxies: tuple[Network, ...]
) -> Address | None:
    """The client behind a connection from ``peer``: when ``peer`` is a trusted proxy, the last address
    in ``X-Forwarded-For`` that is not one (earlier entries are the client's own word, and forgeable).
    An entry that is no address is :data:`UNREADABLE_CLIENT`: never the proxy, which may be uncapped."""
    address = parse_address(peer)
    if not forwarded_for or not in_networks(address, trusted_proxies):
        return address
    for hop in reversed(forwarded_for.split(",")):
        address = parse_address(hop) or UNREADABLE_CLIENT
        if not in_networks(address, trusted_proxies):
            break
    return address


def client_key(address: Address) -> str:
    """What the allowance is counted by: the IPv4 address, or the IPv6 address's /64."""
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, IPV6_CLIENT_PREFIX), strict=False))
    return str(address)


@dataclass(slots=True)
class Allowance:
    """A rate limit per client key (:class:`TokenBucket`: ``burst`` at once, ``rate_per_s`` after)."""

    rate_per_s: float
    burst: int
    _buckets: OrderedDict[str, TokenBucket] = field(default_factory=OrderedDict)
    """Least recently used first, at most :data:`MAX_BUCKETS`."""

    def take(self, key: str, now: float) -> bool:
        """Spend one of ``key``'s, if it has one left."""
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= MAX_BUCKETS:
                self._buckets.popitem(last=False)
            bucket = self._buckets[key] = TokenBucket(self.rate_per_s, self.burst)
        else:
            self._buckets.move_to_end(key)
        return bucket.take(now)

    def __len__(self) -> int:
        return len(self._buckets)


@dataclass(slots=True)
class Holdings:
    """How many of something each client key holds at once: at most ``cap`` (0: no cap)."""

    cap: int
    held: dict[str, int] = field(default_factory=dict)
    """Only keys that hold one or more."""

    def fits(self, key: str | None) -> bool:
        """Whether ``key`` may take one more (``None``: uncounted, always)."""
        return key is None or not self.cap or self.held.get(key, 0) < self.cap

    def take(self, key: str | None) -> bool:
        """Count one in; ``False`` (and not counted) if ``key`` holds its cap already: checks made at
        once by :meth:`fits` may all have passed, and only the first ones may stay."""
        if key is None:
            return True
        held = self.held.get(key, 0)
        if self.cap and held >= self.cap:
            return False
        self.held[key] = held + 1
        return True

    def give_back(self, key: str | None) -> None:
        """Count out one that :meth:`take` counted in."""
        if key is None:
            return
        held = self.held.get(key, 0) - 1
        if held > 0:
            self.held[key] = held
        else:
            self.held.pop(key, None)


@dataclass(slots=True)
class AddressQuota:
    """Connections held, handshakes under way, players made and API requests, by client address (see
    :func:`client_key`)."""

    max_connections: int
    """At once, per address, and as many handshakes under way besides; 0: no cap."""
    new_players: Allowance
    api_requests: Allowance
    uncapped: tuple[Network, ...]
    trusted_proxies: tuple[Network, ...] = ()
    connections: Holdings = field(init=False)
    """WebSocket connections open, by client (behind a trusted proxy, the client it names)."""
    openings: Holdings = field(init=False)
    """Sockets whose HTTP request is not read yet, by the socket's peer (see
    :meth:`server.connection.Connection.connection_made`)."""

    def __post_init__(self) -> None:
        self.connections = Holdings(self.max_connections)
        self.openings = Holdings(self.max_connections)

    def client_of(self, remote_address: object, headers: Headers) -> Address | None:
        """The client of a request from ``remote_address`` (a socket's ``(host, port, ...)``)."""
        forwarded_for = ",".join(headers.get_all(FORWARDED_FOR))
        return client_address(_host_of(remote_address), forwarded_for, self.trusted_proxies)

    def key_of(self, address: Address | None) -> str | None:
        """What ``address``'s allowances are counted by (see :func:`client_key`); ``None`` if it has no
        limits: an uncapped network, or no address at all (a Unix socket's client, on this host)."""
        if address is None or in_networks(address, self.uncapped):
            return None
        return client_key(address)

    def peer_key(self, remote_address: object) -> str | None:
        """What a socket's handshake counts against before its request is read: its peer's key, or
        ``None`` for a trusted proxy (its clients are told apart only by the request's headers)."""
        peer = parse_address(_host_of(remote_address))
        return None if in_networks(peer, self.trusted_proxies) else self.key_of(peer)

    def may_connect(self, address: Address | None) -> bool:
        """Whether one more connection from ``address`` fits in its allowance."""
        return self.connections.fits(self.key_of(address))

    def connected(self, address: Address | None) -> bool:
        """Count a connection in; ``False`` (and not counted) if it is over the cap: handshakes under way
        at once all passed :meth:`may_connect`, and only the first ones may stay."""
        return self.connections.take(self.key_of(address))

    def disconnected(self, address: Address | None) -> None:
        """Count out a connection that :meth:`connected` counted in."""
        self.connections.give_back(self.key_of(address))

    def may_create_player(self, address: Address | None, now: float) -> bool:
        """Spend one of the address's new players, if it has one left."""
        key = self.key_of(address)
        return key is None or self.new_players.take(key, now)

    def may_query_api(self, address: Address | None, now: float) -> bool:
        """Spend one of the address's API requests (each may read the database), if it has one left."""
        key = self.key_of(address)
        return key is None or self.api_requests.take(key, now)


def _host_of(remote_address: object) -> str | None:
    """The host of a socket's ``(host, port, ...)``; ``None`` for anything else (a Unix socket's ``""``)."""
    host = remote_address[0] if isinstance(remote_address, tuple) and remote_address else None
    return host if isinstance(host, str) else None
