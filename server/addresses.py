"""Who is on the other end of a connection, and how much one address may take.

A per-connection rate limit (:class:`server.connection.TokenBucket`) is
sidestepped by opening more connections, and each ``hello`` with a name makes a
stored player. So one address may hold only so many connections at once and
make new players only so fast. Clients behind one address share its allowance:
an IPv6 client counts by its /64, the block a single host or home is given, or
a client with a fresh address for each connection would get a fresh allowance.

Behind a reverse proxy every client arrives from the proxy's address; for
proxies named as trusted, the client is the address the proxy reports in
``X-Forwarded-For``. Networks named as uncapped (by default the loopback: this
host's own fleet, load generators and tests) are never limited.
"""

from __future__ import annotations

import ipaddress
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
MAX_NEW_PLAYER_BUCKETS = 10_000
"""New-player allowances remembered at most: past that the full ones (which hold nothing) are forgotten,
then the oldest, so that a client with many addresses cannot grow memory without bound."""


def parse_network(text: str) -> Network:
    """``10.0.0.0/8``, ``fd00::/8`` or one address (a network of one); ``ValueError`` that names the text."""
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ValueError(f"{text!r} is not an IP address or network like 10.0.0.0/8") from None


def parse_networks(texts: Iterable[str]) -> tuple[Network, ...]:
    return tuple(parse_network(text) for text in texts)


def in_networks(address: Address | None, networks: Iterable[Network]) -> bool:
    return address is not None and any(address in network for network in networks)


def parse_address(text: str | None) -> Address | None:
    """An address as a socket or a proxy gives it (an IPv4 client of an IPv6 socket as IPv4); ``None``
    if it is not one, so that a proxy's garbage counts as the proxy itself, never as a forged client."""
    if not text:
        return None
    try:
        address = ipaddress.ip_address(text.strip().removeprefix("[").removesuffix("]"))
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def client_address(
    peer: str | None, forwarded_for: str | None, trusted_proxies: tuple[Network, ...]
) -> Address | None:
    """The client behind a connection from ``peer``: when ``peer`` is a trusted proxy, the last address
    in ``X-Forwarded-For`` that is not one (earlier entries are the client's own word, and forgeable)."""
    address = parse_address(peer)
    if not forwarded_for or not in_networks(address, trusted_proxies):
        return address
    for hop in reversed(forwarded_for.split(",")):
        forwarded = parse_address(hop)
        if forwarded is None:
            break
        address = forwarded
        if not in_networks(address, trusted_proxies):
            break
    return address


def client_key(address: Address) -> str:
    """What the allowance is counted by: the IPv4 address, or the IPv6 address's /64."""
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, IPV6_CLIENT_PREFIX), strict=False))
    return str(address)


@dataclass(slots=True)
class AddressQuota:
    """Connections held and players made, by client address (see :func:`client_key`)."""

    max_connections: int
    """At once, per address; 0: no cap."""
    new_players_per_hour: float
    new_players_burst: int
    uncapped: tuple[Network, ...]
    trusted_proxies: tuple[Network, ...] = ()
    connections: dict[str, int] = field(default_factory=dict)
    _new_players: dict[str, TokenBucket] = field(default_factory=dict)

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
        if key is None:
            return True
        bucket = self._new_players.get(key)
        if bucket is None:
            if len(self._new_players) >= MAX_NEW_PLAYER_BUCKETS:
                self._forget(now)
            rate_per_s = self.new_players_per_hour / 3600
            bucket = self._new_players[key] = TokenBucket(rate_per_s, self.new_players_burst)
        return bucket.take(now)

    def _forget(self, now: float) -> None:
        """Drop the allowances that have refilled (a fresh one is the same), then the oldest ones."""
        refill_s = self.new_players_burst * 3600 / self.new_players_per_hour
        for key, bucket in list(self._new_players.items()):
            if bucket.updated is None or now - bucket.updated >= refill_s:
                del self._new_players[key]
        while len(self._new_players) >= MAX_NEW_PLAYER_BUCKETS:
            del self._new_players[next(iter(self._new_players))]
