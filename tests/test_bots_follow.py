"""Bots follow a match to its host (bots/hosts.py): a server's ``hosted_elsewhere``, a server that does not
know the match, a server out of reach. The whole story, three instances and one killed, is in
tests/test_failover.py."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import pytest
from support.fixtures import Connect
from support.process import free_port
from support.services import PrivateMosquitto
from support.waiting import wait_until

from bots import wire
from bots.client import BotPlayer, BotSpec
from bots.fleet import Fleet, FleetConfig
from bots.hosts import MatchFinder
from bots.link import Backoff
from bots.lobby_feeds import MqttLobby
from bots.pool import SearchPool
from bots.session import MatchSession
from server.app import Server, running_server
from server.config import ServerConfig

SPEC = BotSpec.of("tictactoe", 1)
FAST = Backoff(initial_s=0.05, max_s=0.5)


@pytest.fixture
async def two_instances(
    arena_postgres_url: str, private_broker: PrivateMosquitto
) -> AsyncIterator[tuple[Server, Server]]:
    """Two instances sharing a database and a (private) broker; the second knows the first's URL."""
    configs = [
        ServerConfig(port=0, db_url=arena_postgres_url, mqtt_url=private_broker.url, grace_s=60.0)
        for _ in "ab"
    ]
    async with running_server(configs[0]) as host, running_server(configs[1]) as other:
        await wait_until(lambda: host.config.instance_id in other.lobby.instance_urls, 10, "the host's URL")
        yield host, other


@pytest.fixture(scope="module")
def pool() -> Iterator[SearchPool]:
    search_pool = SearchPool(1)
    yield search_pool
    search_pool.close()


class Recorded:
    """An :attr:`BotPlayer.elsewhere` that notes what it is told."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, bool]] = []

    def __call__(self, player: BotPlayer, session: MatchSession, url: str | None, found: bool) -> None:
        self.calls.append((session.match_id, url, found))


async def test_a_bot_told_a_match_is_hosted_elsewhere_hands_it_on_with_the_hosts_url(
    two_instances: tuple[Server, Server], connect: Connect, pool: SearchPool
) -> None:
    host, other = two_instances
    alice = await connect.player(host, "Alice")
    match_id = (await alice.request("match.create", game="tictactoe", seat=0))["match_id"]
    told = Recorded()
    async with BotPlayer(other.ws_url, SPEC, pool, backoff=FAST, elsewhere=told) as bot:
        await bot.link.wait_connected()
        bot.take_over(MatchSession(match_id))
        await wait_until(lambda: bool(told.calls), 10, "the bot told where the match is")
        assert told.calls == [(match_id, host.ws_url, True)]
        assert match_id not in bot.sessions


async def test_a_bot_asking_a_server_of_another_database_hears_it_knows_no_such_match(
    arena: Server, pool: SearchPool
) -> None:
    told = Recorded()
    async with BotPlayer(arena.ws_url, SPEC, pool, backoff=FAST, elsewhere=told) as bot:
        await bot.link.wait_connected()
        bot.take_over(MatchSession("not-in-this-database"))
        await wait_until(lambda: bool(told.calls), 10, "the bot told the match is unknown there")
        assert told.calls == [("not-in-this-database", None, False)]


async def test_a_fleet_seated_from_a_stale_lobby_entry_joins_the_match_at_its_host(
    two_instances: tuple[Server, Server], connect: Connect, pool: SearchPool
) -> None:
    """A lobby entry naming an instance that no longer hosts the match (taken over since): the bot is
    answered ``hosted_elsewhere`` there, and is seated at the host it names."""
    host, other = two_instances
    alice = await connect.player(host, "Alice")
    created = await alice.request("match.create", game="tictactoe", seat=0, bot={"level": 1})
    entry = wire.LobbyEntry(
        match_id=created["match_id"], game="tictactoe", status="open", time_control="untimed",
        seats=[wire.PlayerInfo(id=alice.player_id or "", name="Alice", bot=False), None],
        bot=wire.BotRequest(level=1), host=host.config.instance_id, url=other.ws_url,
    )  # fmt: skip
    fleet = Fleet(pool, FleetConfig(levels={"tictactoe": (1,)}, idle_wait_s=None, backoff=FAST))
    try:
        match_id = created["match_id"]
        fleet.lobby_entry("stale", entry, other.ws_url)
        await alice.expect(type_="started", match_id=match_id, timeout=10)
        assert (await alice.request("move", match_id=match_id, ply=0, move="b2"))["type"] == "moved"
        assert (await alice.expect(type_="moved", match_id=match_id, ply=1, timeout=10))["seat"] == 1
        assert [bot.url for bot in fleet.bots() if match_id in bot.sessions] == [host.ws_url]
    finally:
        await fleet.close()


class Seats:
    """A fleet as :class:`MatchFinder` sees it: bots that never connect, and where each instance is."""

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls
        self.made: dict[str, BotPlayer] = {}
        self.tokens: list[str | None] = []
        """The player each bot asked for was to be."""
        self.dropped: list[str] = []

    def bots(self) -> list[BotPlayer]:
        return list(self.made.values())

    def bot_at(self, url: str, spec: BotSpec, token: str | None) -> BotPlayer:
        self.tokens.append(token)
        if url not in self.made:
            self.made[url] = BotPlayer(url, spec, pool=None, token=token)  # type: ignore[arg-type]
        return self.made[url]

    def instance_urls(self) -> set[str]:
        return set(self.urls)

    async def drop_if_idle(self, player: BotPlayer) -> None:
        if not player.sessions:
            self.dropped.append(player.url)


async def test_the_finder_asks_each_instance_in_reach_in_turn_until_one_hosts_the_match() -> None:
    dead, first, second = "ws://dead/ws", "ws://first/ws", "ws://second/ws"
    seats = Seats([dead, first, second])
    finder = MatchFinder(seats, patience_s=1.0, every_s=0.0)
    lost = seats.bot_at(dead, SPEC, "token")
    session = MatchSession("m1", log="log", status="live")
    lost.sessions["m1"] = session
    lost.link.down_since = time.monotonic() - 2  # out of reach for longer than the patience

    await finder.look()  # taken from the bot out of reach, and asked of the first instance in reach
    assert "m1" not in lost.sessions and seats.dropped == [dead]
    asked = seats.made[first]
    assert asked.sessions["m1"] is session and session.taken_over
    asked.hand_over("m1")
    finder.elsewhere(asked, session, dead, True)  # "hosted at the dead one": not taken over yet
    assert "m1" in finder.adrift
    await finder.look()  # so the next one is asked
    assert seats.made[second].sessions["m1"] is session
    seats.made[second].hand_over("m1")
    seats.made[second].link.token = "a new player there"  # (its hello's token was refused)
    finder.elsewhere(seats.made[second], session, None, False)  # another database: never asked again
    await finder.look()
    await finder.look()
    assert seats.made[first].sessions["m1"] is session and "m1" not in finder.adrift
    assert set(seats.tokens) == {"token"}, "always asked as the player who sits in the match"

    # A welcome that lists a match looked for hands it to that connection.
    seats.made[first].hand_over("m1")
    finder.elsewhere(seats.made[first], session, dead, True)
    assert finder.give(seats.made[first], "m1") and seats.made[first].sessions["m1"] is session


async def test_a_link_says_since_when_its_server_is_out_of_reach(arena: Server, pool: SearchPool) -> None:
    nowhere = BotPlayer(f"ws://127.0.0.1:{free_port()}/ws", SPEC, pool, backoff=FAST)
    async with nowhere, BotPlayer(arena.ws_url, SPEC, pool, backoff=FAST) as there:
        await wait_until(lambda: nowhere.link.down_since is not None, 10, "a failed attempt")
        await there.link.wait_connected()
        assert there.link.down_since is None
        first_failure = nowhere.link.down_since
        await wait_until(lambda: nowhere.link.failures >= 2, 10, "a second failed attempt")
        assert nowhere.link.down_since == first_failure, "out of reach since the first failure"


async def test_a_fleet_knows_each_instance_and_its_url_from_its_status(pool: SearchPool) -> None:
    fleet = Fleet(pool, FleetConfig(levels={"tictactoe": (1,)}, backoff=FAST))
    fleet.follow_mqtt("mqtt://127.0.0.1:1")
    lobby = fleet._feeds[0]
    assert isinstance(lobby, MqttLobby)
    lobby._deliver("plyarena/v1/instances/alpha", b'{"online": true, "url": "ws://alpha/ws"}')
    lobby._deliver("plyarena/v1/instances/beta", b'{"online": true, "url": "ws://beta/ws"}')
    lobby._deliver("plyarena/v1/instances/gamma", b'{"online": true, "url": "javascript:alert(1)"}')
    assert fleet.instance_urls() == {"ws://alpha/ws", "ws://beta/ws"}
    lobby._deliver("plyarena/v1/instances/beta", b'{"online": false, "url": "ws://beta/ws"}')  # its will
    assert fleet.instance_urls() == {"ws://alpha/ws"}
    # Back under another id at the same URL (a restart with a new id): online again.
    lobby._deliver("plyarena/v1/instances/delta", b'{"online": true, "url": "ws://beta/ws"}')
    assert fleet.instance_urls() == {"ws://alpha/ws", "ws://beta/ws"}
