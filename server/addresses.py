"""Who is on the other end of a connection, and how much one address may take.

A per-connection rate limit (:class:`server.connection.TokenBucket`) is
sidestepped by opening more connections, and each ``hello`` with a name makes a
stored player, and each request to the HTTP API may read the database. So one
address may hold only so many connections at once, and make new players and
API requests only so fast. Clients behind one address share its allowances:
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

from server.connection import TokenBucket

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
class AddressQuota:
    """Connections held, players made and API requests, by client address (see :func:`client_key`)."""

    max_connections: int
    """At once, per address; 0: no cap."""
    new_players: Allowance
    api_requests: Allowance
    uncapped: tuple[Network, ...]
    trusted_proxies: tuple[Network, ...] = ()
    connections: dict[str, int] = field(default_factory=dict)

    def client_of(self, remote_address: object, headers: Headers) -> Address | None:
        """The client of a request from ``remote_address`` (a socket's ``(host, port, ...)``)."""
        peer = remote_address[0] if isinstance(remote_address, tuple) and remote_address else None
        forwarded_for = ",".join(headers.get_all(FORWARDED_FOR))
        return client_address(peer if isinstance(peer, str) else None, forwarded_for, self.trusted_proxies)

    def key_of(self, address: Address | None) -> str | None:
        """What ``address``'s allowances are counted by (see :func:`client_key`); ``None`` if it has no
        limits: an uncapped network, or no address at all (a Unix socket's client, on this host)."""
        if address is None or in_networks(address, self.uncapped):
            return None
        return client_key(address)

    def may_connect(self, address: Address | None) -> bool:
        """Whether one more connection from ``address`` fits in its allowance."""
        key = self.key_of(address)
        return key is None or not self.max_connections or self.connections.get(key, 0) < self.max_connections

    def connected(self, address: Address | None) -> bool:
        """Count a connection in; ``False`` (and not counted) if it is over the cap: handshakes under way
        at once all passed :meth:`may_connect`, and only the first ones may stay."""
        key = self.key_of(address)
        if key is None:
            return True
        held = self.connections.get(key, 0)
        if self.max_connections and held >= self.max_connections:
            return False
        self.connections[key] = held + 1
        return True

    def disconnected(self, address: Address | None) -> None:
        """Count out a connection that :meth:`connected` counted in."""
        key = self.key_of(address)
        if key is None:
            return
        held = self.connections.get(key, 0) - 1
        if held > 0:
            self.connections[key] = held
        else:
            self.connections.pop(key, None)

    def may_create_player(self, address: Address | None, now: float) -> bool:
        """Spend one of the address's new players, if it has one left."""
        key = self.key_of(address)
        return key is None or self.new_players.take(key, now)

    def may_query_api(self, address: Address | None, now: float) -> bool:
        """Spend one of the address's API requests (each may read the database), if it has one left."""
        key = self.key_of(address)
        return key is None or self.api_requests.take(key, now)
