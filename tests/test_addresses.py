"""Who a client is behind proxies, and the allowances one address gets (server/addresses.py)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st
from websockets.datastructures import Headers

from server import addresses
from server.addresses import (
    AddressQuota,
    Allowance,
    client_address,
    client_key,
    parse_address,
    parse_networks,
)

PROXIES = parse_networks(["10.0.0.0/8", "192.0.2.7"])


def quota(**options: object) -> AddressQuota:
    settings: dict[str, object] = {
        "max_connections": 2,
        "new_players": Allowance(1 / 60, 2),
        "api_requests": Allowance(10.0, 3),
        "uncapped": parse_networks(["127.0.0.0/8", "::1"]),
        "trusted_proxies": PROXIES,
        **options,
    }
    return AddressQuota(**settings)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("peer", "forwarded_for", "client"),
    [
        ("203.0.113.5", None, "203.0.113.5"),
        ("203.0.113.5", "198.51.100.1", "203.0.113.5"),  # not a proxy of ours: its header is its own word
        ("10.1.2.3", "198.51.100.1", "198.51.100.1"),
        ("10.1.2.3", "1.1.1.1, 198.51.100.1", "198.51.100.1"),  # the first entry is the client's to forge
        ("10.1.2.3", "198.51.100.1, 192.0.2.7", "198.51.100.1"),  # through two proxies of ours
        ("10.1.2.3", "10.9.9.9, 192.0.2.7", "10.9.9.9"),  # all ours: the farthest is the client
        # Unreadable: one shared, capped stand-in, never the proxy (which may be uncapped) nor a forgery.
        ("10.1.2.3", "198.51.100.1, not-an-address", "0.0.0.0"),
        ("10.1.2.3", "unknown", "0.0.0.0"),
        ("10.1.2.3", "198.51.100.1, ", "0.0.0.0"),
        ("10.1.2.3", "[2001:db8::1]", "2001:db8::1"),
        ("10.1.2.3", "198.51.100.1:40000", "198.51.100.1"),  # with a port, as some proxies send it
        ("10.1.2.3", "[2001:db8::1]:40000", "2001:db8::1"),
        ("10.1.2.3", "2001:db8::1", "2001:db8::1"),
        ("::ffff:203.0.113.9", None, "203.0.113.9"),  # IPv4 on an IPv6 socket is the IPv4 client
        ("10.1.2.3", "", "10.1.2.3"),
        (None, "198.51.100.1", None),
    ],
)
def test_the_client_is_the_last_address_no_proxy_of_ours_vouches_for(
    peer: str | None, forwarded_for: str | None, client: str | None
) -> None:
    found = client_address(peer, forwarded_for, PROXIES)
    assert found == (None if client is None else ipaddress.ip_address(client))


def test_the_address_comes_from_the_socket_and_every_forwarded_for_header() -> None:
    headers = Headers([("X-Forwarded-For", "1.1.1.1"), ("X-Forwarded-For", "198.51.100.1")])
    assert str(quota().client_of(("10.0.0.5", 40_000), headers)) == "198.51.100.1"
    assert str(quota().client_of(("::1", 40_000, 0, 0), Headers())) == "::1"
    assert quota().client_of("", Headers()) is None  # (a Unix socket has no address) ...
    assert quota(max_connections=1).connected(None) and quota(max_connections=1).may_connect(
        None
    )  # ... nor cap


def test_an_ipv6_client_counts_by_its_slash_64() -> None:
    first, second = parse_address("2001:db8:1:2::a"), parse_address("2001:db8:1:2:ffff::b")
    assert client_key(first) == client_key(second) == "2001:db8:1:2::/64"
    assert client_key(parse_address("2001:db8:1:3::a")) != client_key(first)
    assert client_key(parse_address("203.0.113.5")) == "203.0.113.5"


def test_one_address_holds_at_most_its_connections_and_gets_them_back() -> None:
    limits = quota()
    client, other = parse_address("203.0.113.5"), parse_address("203.0.113.6")
    assert limits.connected(client) and limits.connected(client)
    assert not limits.may_connect(client) and not limits.connected(client)
    assert limits.may_connect(other) and limits.connected(other)  # every address has its own
    limits.disconnected(client)
    assert limits.may_connect(client) and limits.connected(client)
    for _ in range(2):
        limits.disconnected(client)
    limits.disconnected(other)
    assert limits.connections.held == {}  # nothing kept for addresses that hold nothing


def test_a_handshake_counts_against_the_socket_peer_unless_it_is_a_trusted_proxy() -> None:
    limits = quota()
    assert limits.peer_key(("203.0.113.5", 40000)) == "203.0.113.5"
    assert limits.peer_key(("2001:db8:1:2:3::9", 40000, 0, 0)) == "2001:db8:1:2::/64"
    assert limits.peer_key(("::ffff:203.0.113.9", 40000, 0, 0)) == "203.0.113.9"
    assert limits.peer_key(("10.1.2.3", 40000)) is None  # a trusted proxy: its clients are told apart later
    assert limits.peer_key(("127.0.0.1", 40000)) is None  # uncapped
    assert limits.peer_key("") is None  # a Unix socket's peer
    key = limits.peer_key(("203.0.113.5", 40000))
    assert limits.openings.take(key) and limits.openings.take(key) and not limits.openings.take(key)
    assert limits.connected(parse_address("203.0.113.5"))  # connections are a count of their own
    limits.openings.give_back(key)
    assert limits.openings.held == {"203.0.113.5": 1}


def test_uncapped_networks_and_a_zero_cap_are_never_refused() -> None:
    limits, local = quota(), parse_address("127.0.0.1")
    assert all(limits.connected(local) for _ in range(100)) and limits.connections.held == {}
    assert all(limits.may_create_player(local, 0.0) for _ in range(100))
    no_cap = quota(max_connections=0)
    assert all(no_cap.connected(parse_address("203.0.113.5")) for _ in range(100))


def test_new_players_and_api_requests_come_in_a_burst_then_at_their_rate() -> None:
    limits, client = quota(), parse_address("203.0.113.5")
    assert limits.may_create_player(client, 0.0) and limits.may_create_player(client, 0.0)
    assert not limits.may_create_player(client, 30.0)
    assert limits.may_create_player(parse_address("203.0.113.6"), 30.0)
    assert limits.may_create_player(client, 61.0) and not limits.may_create_player(client, 62.0)
    assert all(limits.may_query_api(client, 0.0) for _ in range(3))  # a separate allowance
    assert not limits.may_query_api(client, 0.05) and limits.may_query_api(client, 0.15)
    assert all(limits.may_query_api(parse_address("127.0.0.1"), 0.0) for _ in range(100))


def test_new_player_allowances_stay_bounded_however_many_addresses_ask(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(addresses, "MAX_BUCKETS", 10)
    limits = quota(new_players=Allowance(1 / 60, 1))
    first = parse_address("2001:db8:ffff::1")
    assert limits.may_create_player(first, 0.0)
    for index in range(25):
        assert limits.may_create_player(parse_address(f"2001:db8:{index:x}::1"), 0.0)
        assert not limits.may_create_player(first, 0.0)  # spent, and kept: used most recently
        assert len(limits.new_players) <= 10
    assert not limits.may_create_player(parse_address("2001:db8:18::1"), 0.0)  # the newest are held
    assert limits.may_create_player(parse_address("2001:db8:0::1"), 0.0)  # the least recently used went


def test_networks_are_read_as_client_addresses_are() -> None:
    assert parse_networks(["::ffff:10.0.0.0/104"]) == parse_networks(["10.0.0.0/8"])
    assert parse_networks(["::ffff:192.0.2.7"]) == parse_networks(["192.0.2.7/32"])
    with pytest.raises(ValueError, match=r"'10\.0\.0\.x' is not an IP address"):
        parse_networks(["10.0.0.x"])


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3))))
def test_the_count_is_what_was_let_in_and_not_yet_out(steps: list[tuple[bool, int]]) -> None:
    limits = quota(max_connections=3)
    held = [0, 0, 0, 0]
    for connecting, client in steps:
        address = parse_address(f"203.0.113.{client}")
        if connecting:
            if limits.connected(address):
                held[client] += 1
        elif held[client]:
            limits.disconnected(address)
            held[client] -= 1
        assert held[client] <= 3
        assert limits.connections.held == {f"203.0.113.{index}": n for index, n in enumerate(held) if n}
