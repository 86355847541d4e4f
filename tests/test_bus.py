"""The event bus, in process and over Mosquitto: wildcards, retained state, and surviving a lost broker."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.waiting import wait_until

from bots.lobby_feeds import broker_name
from server.bus import (
    EventBus,
    InProcessBus,
    MqttBus,
    Subscription,
    _Subscribers,
    bus_from_url,
    check_pattern,
    topic_matches,
)
from server.mqtt_bus import RECONNECT_DELAY_S, reconnect_waits

FAST_RECONNECT = (0.05, 0.5)
WAIT = 5.0


@pytest.fixture
def prefix() -> str:
    """A topic prefix of this test's own, so tests sharing a broker never see each other's messages."""
    return f"plyarena-test/{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["in-process", "mqtt"])
async def bus(request: pytest.FixtureRequest, prefix: str) -> AsyncIterator[EventBus]:
    if request.param == "in-process":
        bus: EventBus = InProcessBus()
    else:
        bus = MqttBus(request.getfixturevalue("mqtt_url"), reconnect_delay=FAST_RECONNECT)
    await bus.start()
    yield bus
    await clear_retained(bus, prefix)
    await bus.close()


@pytest.fixture
async def broker_prefix(mqtt_url: str, prefix: str) -> AsyncIterator[str]:
    """A prefix for a test that runs its own MQTT buses; whatever they retained is cleared afterwards."""
    yield prefix
    async with MqttBus(mqtt_url) as cleaner:
        await clear_retained(cleaner, prefix)


async def clear_retained(bus: EventBus, prefix: str) -> None:
    """Leave nothing retained on the broker under ``prefix``."""
    async with bus.subscribe(f"{prefix}/#") as messages:
        retained = await drain(messages, quiet=0.2)
    for topic, _ in retained:
        await bus.publish(topic, b"", retain=True)
    if isinstance(bus, MqttBus):
        assert await bus.flush(WAIT)


async def receive(messages: Subscription, count: int = 1) -> list[tuple[str, bytes]]:
    return [await asyncio.wait_for(anext(messages), WAIT) for _ in range(count)]


async def drain(messages: Subscription, quiet: float) -> list[tuple[str, bytes]]:
    """Everything that arrives until nothing has for ``quiet`` seconds, or the subscription ends."""
    received = []
    while True:
        try:
            received.append(await asyncio.wait_for(anext(messages), quiet))
        except (TimeoutError, StopAsyncIteration):
            return received


@pytest.mark.parametrize(
    ("pattern", "topic", "expected"),
    [
        ("a/b", "a/b", True),
        ("a/b", "a/c", False),
        ("a/+", "a/b", True),
        ("a/+", "a/b/c", False),
        ("a/+", "a", False),
        ("a/+/c", "a/b/c", True),
        ("a/#", "a", True),
        ("a/#", "a/b/c", True),
        ("a/#", "ab", False),
        ("#", "a/b", True),
        ("+/+", "/a", True),
        ("#", "$SYS/broker", False),
        ("+/broker", "$SYS/broker", False),
        ("$SYS/#", "$SYS/broker", True),
    ],
)
def test_topic_matching_follows_mqtt(pattern: str, topic: str, expected: bool) -> None:
    assert topic_matches(pattern, topic) is expected


_LEVELS = st.sampled_from(["a", "b", "ab", "", "$SYS"])
_TOPICS = st.lists(_LEVELS, min_size=1, max_size=4).map("/".join).filter(bool)
_PATTERNS = (
    st.lists(st.sampled_from(["a", "b", "ab", "", "$SYS", "+"]), min_size=1, max_size=4)
    .flatmap(lambda levels: st.sampled_from([levels, [*levels, "#"]]))
    .map("/".join)
    .filter(bool)
)


@settings(max_examples=300, deadline=None)
@given(
    patterns=st.lists(_PATTERNS, min_size=1, max_size=5, unique=True),
    removed=st.sets(st.integers(0, 4)),
    topic=_TOPICS,
)
def test_subscribers_found_for_a_topic_are_exactly_those_whose_pattern_matches(
    patterns: list[str], removed: set[int], topic: str
) -> None:
    async def nothing(subscription: Subscription) -> None:
        return None

    subscribers = _Subscribers()
    subscriptions = []
    for pattern in patterns:
        check_pattern(pattern)
        subscriptions.append(Subscription(pattern, nothing, nothing, max_queued=1))
        subscribers.add(subscriptions[-1])
    for index in removed & set(range(len(patterns))):
        subscribers.remove(subscriptions[index])
    kept = [pattern for index, pattern in enumerate(patterns) if index not in removed]
    found = {subscription.pattern for subscription in subscribers.matching(topic)}
    assert found == {pattern for pattern in kept if topic_matches(pattern, topic)}


async def test_invalid_topics_and_patterns_are_refused() -> None:
    bus = InProcessBus()
    for topic in ("", "a/+", "a/#", "a\0b"):
        with pytest.raises(ValueError, match="topic"):
            await bus.publish(topic, b"x")
    for pattern in ("a/b#", "a/#/b", "a+/b", ""):
        with pytest.raises(ValueError):
            bus.subscribe(pattern)


@pytest.mark.parametrize(
    ("topic", "fits"),
    [
        pytest.param("a" * 65_535, True, id="65535-ascii-bytes"),
        pytest.param("a" * 65_536, False, id="65536-ascii-bytes"),
        pytest.param("\U0001f600" * 16_383 + "abc", True, id="65535-bytes-of-4-byte-characters"),
        pytest.param("\U0001f600" * 16_384, False, id="65536-bytes-in-16384-characters"),
        pytest.param("\u00e9" * 32_768, False, id="65536-bytes-in-32768-characters"),
    ],
)
def test_a_topic_is_measured_in_utf8_bytes(topic: str, fits: bool) -> None:
    """MQTT caps a topic at 65,535 bytes of UTF-8, whatever its length in characters."""
    bus = InProcessBus()
    if fits:
        bus.publish_nowait(topic, b"x")
    else:
        with pytest.raises(ValueError, match="longer than 65535 bytes"):
            bus.publish_nowait(topic, b"x")


def test_bus_from_url_picks_the_implementation() -> None:
    assert isinstance(bus_from_url(None), InProcessBus)
    mqtt = bus_from_url("mqtt://broker.example:1884", client_id="alpha")
    assert isinstance(mqtt, MqttBus) and mqtt.client_id == "alpha"
    with pytest.raises(ValueError, match="http://broker"):
        bus_from_url("http://broker:1883")


async def test_wildcards_deliver_exactly_the_matching_topics(bus: EventBus, prefix: str) -> None:
    async with (
        bus.subscribe(f"{prefix}/lobby/+") as lobby,
        bus.subscribe(f"{prefix}/match/#") as match,
        bus.subscribe(f"{prefix}/match/m1/moves") as moves,
    ):
        for topic in ("lobby/m1", "lobby/m1/extra", "match/m1/moves", "match/m2", "other/x", "lobby/m2"):
            await bus.publish(f"{prefix}/{topic}", topic.encode())

        assert await receive(lobby, 2) == [
            (f"{prefix}/lobby/m1", b"lobby/m1"),
            (f"{prefix}/lobby/m2", b"lobby/m2"),
        ]
        assert await receive(match, 2) == [
            (f"{prefix}/match/m1/moves", b"match/m1/moves"),
            (f"{prefix}/match/m2", b"match/m2"),
        ]
        assert await receive(moves) == [(f"{prefix}/match/m1/moves", b"match/m1/moves")]
        assert await drain(lobby, quiet=0.2) == []
        assert await drain(match, quiet=0.0) == []


async def test_retained_messages_come_first_then_live_ones(bus: EventBus, prefix: str) -> None:
    await bus.publish(f"{prefix}/lobby/m1", b"entry 1", retain=True)
    await bus.publish(f"{prefix}/lobby/m2", b"entry 2", retain=True)
    await bus.publish(f"{prefix}/lobby/m2", b"entry 2, updated", retain=True)
    await bus.publish(f"{prefix}/lobby/m3", b"not retained")
    await asyncio.sleep(0.1)  # let the broker store them

    async with bus.subscribe(f"{prefix}/lobby/#") as lobby:
        retained = await receive(lobby, 2)
        await bus.publish(f"{prefix}/lobby/m4", b"live")
        live = await receive(lobby)
        # A second subscriber to the same pattern gets the same state.
        async with bus.subscribe(f"{prefix}/lobby/#") as second:
            assert sorted(await receive(second, 2)) == sorted(retained)

    assert sorted(retained) == [
        (f"{prefix}/lobby/m1", b"entry 1"),
        (f"{prefix}/lobby/m2", b"entry 2, updated"),
    ]
    assert live == [(f"{prefix}/lobby/m4", b"live")]


async def test_an_empty_retained_payload_clears_the_topic(bus: EventBus, prefix: str) -> None:
    await bus.publish(f"{prefix}/lobby/m1", b"entry 1", retain=True)
    async with bus.subscribe(f"{prefix}/lobby/+") as lobby:
        assert await receive(lobby) == [(f"{prefix}/lobby/m1", b"entry 1")]
        await bus.publish(f"{prefix}/lobby/m1", b"", retain=True)
        assert await receive(lobby) == [(f"{prefix}/lobby/m1", b"")]  # current subscribers see it go

    async with bus.subscribe(f"{prefix}/lobby/+") as lobby:
        await bus.publish(f"{prefix}/lobby/marker", b"live")
        assert await receive(lobby) == [(f"{prefix}/lobby/marker", b"live")]  # nothing retained before it


async def test_closing_the_bus_ends_iteration(bus: EventBus, prefix: str) -> None:
    async with bus.subscribe(f"{prefix}/#") as messages:
        reader = asyncio.create_task(drain(messages, quiet=WAIT))
        await bus.publish(f"{prefix}/a", b"1")
        await asyncio.sleep(0.2)
        await bus.close()
        assert await asyncio.wait_for(reader, WAIT) == [(f"{prefix}/a", b"1")]


async def test_a_slow_subscriber_loses_its_oldest_messages_only() -> None:
    bus = InProcessBus(max_queued=3)
    async with bus.subscribe("t/#") as slow, bus.subscribe("t/#") as other:
        for index in range(5):
            await bus.publish(f"t/{index}", b"")
        assert [topic for topic, _ in await drain(slow, quiet=0.01)] == ["t/2", "t/3", "t/4"]
        assert slow.dropped == 2 and other.dropped == 2


async def alpha_and_beta(stack: AsyncExitStack, mqtt_url: str, prefix: str) -> tuple[MqttBus, MqttBus]:
    """Two instances on the broker: ``alpha`` announces itself under ``prefix`` (and is closed by the
    test), ``beta`` listens (and is closed with ``stack``)."""
    alpha = MqttBus(mqtt_url, client_id=f"alpha-{prefix[-12:]}", status_topic=f"{prefix}/instances/alpha")
    beta = MqttBus(mqtt_url, reconnect_delay=FAST_RECONNECT)
    await stack.enter_async_context(beta)
    await alpha.start()
    return alpha, beta


async def test_instances_share_events_and_announce_themselves(mqtt_url: str, broker_prefix: str) -> None:
    prefix = broker_prefix
    async with AsyncExitStack() as stack:
        alpha, beta = await alpha_and_beta(stack, mqtt_url, prefix)
        instances = await stack.enter_async_context(beta.subscribe(f"{prefix}/instances/+"))
        status = json.loads((await receive(instances))[0][1])
        assert status == {"instance": alpha.client_id, "online": True}

        events = await stack.enter_async_context(beta.subscribe(f"{prefix}/match/#"))
        await alpha.publish(f"{prefix}/match/m1", b"move 1")
        assert await receive(events) == [(f"{prefix}/match/m1", b"move 1")]

        await alpha.close()
        assert json.loads((await receive(instances))[0][1])["online"] is False


async def test_a_disowned_bus_leaves_without_a_word(mqtt_url: str, broker_prefix: str) -> None:
    """A server whose instance another server took must neither clear the entries nor mark offline the
    instance that the other one speaks for now."""
    prefix = broker_prefix
    async with AsyncExitStack() as stack:
        alpha, beta = await alpha_and_beta(stack, mqtt_url, prefix)
        await alpha.publish(f"{prefix}/lobby/alpha/m1", b"entry", retain=True)
        seen = await stack.enter_async_context(beta.subscribe(f"{prefix}/#"))
        assert len(await receive(seen, count=2)) == 2  # the online status and the entry, retained

        alpha.disown()
        await alpha.publish(f"{prefix}/lobby/alpha/m1", b"", retain=True)  # (a withdrawal: not sent)
        await alpha.publish(f"{prefix}/match/m1", b"late event")
        await alpha.close()
        assert await drain(seen, quiet=0.5) == []
    async with MqttBus(mqtt_url) as reader, reader.subscribe(f"{prefix}/#") as retained:
        kept = dict(await receive(retained, count=2))
    assert kept[f"{prefix}/lobby/alpha/m1"] == b"entry"
    assert json.loads(kept[f"{prefix}/instances/alpha"])["online"] is True


class TcpProxy:
    """A TCP relay to the broker that a test can cut and restore, like a broker going away."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        """Stop listening and break every open connection, without a goodbye."""
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()

    async def _relay(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        broker_reader, broker_writer = await asyncio.open_connection(*self.target)
        self._writers |= {client_writer, broker_writer}
        await asyncio.gather(
            self._pipe(client_reader, broker_writer),
            self._pipe(broker_reader, client_writer),
            return_exceptions=True,
        )

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        finally:
            writer.transport.abort()


async def test_the_bus_reconnects_and_catches_up_after_losing_the_broker(
    mqtt_url: str, broker_prefix: str
) -> None:
    prefix = broker_prefix
    host, port = mqtt_url.removeprefix("mqtt://").split(":")
    proxy = TcpProxy(host, int(port))
    await proxy.start()
    alpha = MqttBus(
        f"mqtt://127.0.0.1:{proxy.port}",
        status_topic=f"{prefix}/instances/alpha",
        reconnect_delay=FAST_RECONNECT,
        keepalive=5,
    )
    beta = MqttBus(mqtt_url, reconnect_delay=FAST_RECONNECT)
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(beta)
        await stack.enter_async_context(alpha)
        assert alpha.connected
        seen_by_beta = await stack.enter_async_context(beta.subscribe(f"{prefix}/#"))
        seen_by_alpha = await stack.enter_async_context(alpha.subscribe(f"{prefix}/to-alpha/#"))
        await receive(seen_by_beta)  # alpha's "online" status
        await alpha.publish(f"{prefix}/lobby/m1", b"entry 1", retain=True)
        assert await receive(seen_by_beta) == [(f"{prefix}/lobby/m1", b"entry 1")]

        await proxy.cut()
        await wait_until(lambda: not alpha.connected, WAIT, "the bus to notice the broker is gone")
        will = await receive(seen_by_beta)
        assert will[0][0] == f"{prefix}/instances/alpha" and json.loads(will[0][1])["online"] is False
        # Meanwhile: alpha keeps publishing, and the broker loses alpha's retained entry.
        await alpha.publish(f"{prefix}/match/m1", b"move while away")
        await alpha.publish(f"{prefix}/lobby/m2", b"entry 2", retain=True)
        await beta.publish(f"{prefix}/lobby/m1", b"", retain=True)
        assert await receive(seen_by_beta) == [(f"{prefix}/lobby/m1", b"")]

        await proxy.start()
        assert await alpha.wait_connected(WAIT)
        caught_up = set(await receive(seen_by_beta, 4))
        assert caught_up == {
            (f"{prefix}/instances/alpha", json.dumps({"instance": alpha.client_id, "online": True}).encode()),
            (f"{prefix}/lobby/m1", b"entry 1"),  # re-published: alpha owns it
            (f"{prefix}/lobby/m2", b"entry 2"),
            (f"{prefix}/match/m1", b"move while away"),
        }
        await beta.publish(f"{prefix}/to-alpha/hello", b"subscriptions are back")
        assert await receive(seen_by_alpha) == [(f"{prefix}/to-alpha/hello", b"subscriptions are back")]
        assert alpha.stats.connections == 2
    await proxy.cut()


async def test_publishes_wait_for_the_broker_in_a_bounded_queue(mqtt_url: str, broker_prefix: str) -> None:
    prefix = broker_prefix
    host, port = mqtt_url.removeprefix("mqtt://").split(":")
    proxy = TcpProxy(host, int(port))
    await proxy.start()
    await proxy.cut()  # the broker is unreachable from the start
    alpha = MqttBus(
        f"mqtt://127.0.0.1:{proxy.port}", max_pending=3, connect_wait=0.1, reconnect_delay=FAST_RECONNECT
    )
    async with MqttBus(mqtt_url) as beta, beta.subscribe(f"{prefix}/#") as seen_by_beta:
        await alpha.start()
        assert not alpha.connected
        for index in range(5):
            await alpha.publish(f"{prefix}/match/{index}", b"event")
        await alpha.publish(f"{prefix}/lobby/m1", b"entry 1", retain=True)
        await alpha.publish(f"{prefix}/lobby/m1", b"entry 1, updated", retain=True)
        assert (alpha.stats.dropped_publishes, alpha.pending_publishes) == (2, 4)
        assert alpha.dropped_publishes == 2  # (what /metrics reports as plyarena_bus_dropped_total)

        await proxy.start()
        assert await alpha.wait_connected(WAIT)
        assert await alpha.flush(WAIT)
        assert await receive(seen_by_beta, 4) == [
            (f"{prefix}/lobby/m1", b"entry 1, updated"),  # only the latest state is sent
            (f"{prefix}/match/2", b"event"),  # the oldest events were dropped
            (f"{prefix}/match/3", b"event"),
            (f"{prefix}/match/4", b"event"),
        ]
        await alpha.close()
    await proxy.cut()


def test_an_mqtt_password_never_reaches_a_log_line() -> None:
    """The bus logs its broker's URL (connected, lost, unreachable); a fleet its lobby broker's."""
    bus = MqttBus("mqtt://arena:S3cret@127.0.0.1:1883")
    assert bus.url == "mqtt://arena:***@127.0.0.1:1883"
    assert MqttBus("mqtts://broker.example").url == "mqtts://broker.example"
    assert MqttBus("mqtt://:S3cret@[::1]:1883").url == "mqtt://:***@[::1]:1883"
    assert broker_name("mqtt://arena:S3cret@127.0.0.1:1883") == "mqtt://127.0.0.1:1883"


def test_the_waits_between_reconnects_double_up_to_five_seconds_and_never_past() -> None:
    waits = list(itertools.islice(reconnect_waits(*RECONNECT_DELAY_S, random.Random(7)), 12))
    assert RECONNECT_DELAY_S == (0.5, 5.0)
    assert 0.4 <= waits[0] <= 0.6
    assert all(wait <= 5.0 for wait in waits)
    assert all(later >= 0.8 / 1.2 * earlier for earlier, later in itertools.pairwise(waits[:5]))
    assert min(waits[6:]) >= 4.0  # (past the doubling, within 20% under the longest)
