"""``plyarena bench broker``: how many match events a Mosquitto broker takes from N server instances, and
what each costs the broker's CPU.

Every move an instance commits is published on the broker (QoS 0, on
``plyarena/v1/match/{instance}/{match_id}``), so the broker's load grows with the
moves of every instance together. This bench starts a Mosquitto of its own, then
for each count of instances starts that many processes, each the server's own
:class:`~server.bus.MqttBus` under an instance id of its own, subscribed as a
server is (instances' status and lobby entries), publishing a real ``moved``
event of Connect Four as fast as its bus sends them; one reader in this process
subscribes to every match event and counts them. It reports events published
and delivered a second, and the broker's CPU for them (from ``/proc``). The
broker and every client share the machine's cores, so the figures are what those
cores gave, not what the broker alone could.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.queues import Queue
from pathlib import Path

import aiomqtt

from bench.machine import cpu_seconds, machine_description
from games import GAMES
from server.bus import MqttBus
from server.lobby import TOPIC_ROOT, match_topic
from server.protocol import Moved, encode

MOSQUITTO_PATHS = ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto")
BATCH = 500
"""Events an instance hands its bus at once before it waits for them to be sent."""
MATCHES_PER_INSTANCE = 1_000
CONNECT_TIMEOUT_S = 10.0
START_TIMEOUT_S = 120.0
"""How long the instances' processes may take to start and connect, or to end, on a busy machine."""


@dataclass(frozen=True, slots=True)
class BrokerPlan:
    instances: tuple[int, ...] = (1, 2, 4)
    duration_s: float = 5.0

    @classmethod
    def quick(cls) -> BrokerPlan:
        return cls(instances=(2,), duration_s=0.5)


@dataclass(frozen=True, slots=True)
class BrokerRow:
    instances: int
    published: int
    """Events the instances' buses sent within the window."""
    delivered: int
    """Events the reader received within the window."""
    seconds: float
    broker_cpu_s: float
    instances_cpu_s: float
    dropped: int
    """Events the instances' buses dropped (their queue full): none, as each waits for its batch."""
    event_bytes: int

    @property
    def published_per_s(self) -> float:
        return self.published / self.seconds

    @property
    def delivered_per_s(self) -> float:
        return self.delivered / self.seconds

    @property
    def broker_cores(self) -> float:
        return self.broker_cpu_s / self.seconds

    @property
    def broker_us_per_event(self) -> float:
        return 1e6 * self.broker_cpu_s / max(1, self.published)

    @property
    def instance_us_per_event(self) -> float:
        return 1e6 * self.instances_cpu_s / max(1, self.published)


class BrokerMissingError(Exception):
    """No Mosquitto binary to start."""


def mosquitto_path() -> str:
    found = shutil.which("mosquitto") or next((p for p in MOSQUITTO_PATHS if Path(p).exists()), None)
    if found is None:
        raise BrokerMissingError("no mosquitto binary: apt-get install mosquitto")
    return found


def moved_event() -> bytes:
    """A ``moved`` event as an instance publishes it: Connect Four's third ply, its board and legal moves."""
    game = GAMES["connect4"]
    position = game.replay(["4", "4", "3"])
    event = Moved(
        match_id="m0123456789ab", seq=7, ply=2, seat=0, move="3", think_ms=2400, clocks_ms=(297_600, 300_000),
        board=position.grid(), legal=tuple(position.legal_notation()),
    )  # fmt: skip
    return encode(event)


def _instance(
    url: str, instance: str, duration_s: float, payload: bytes, ready: Queue, go: Queue, done: Queue
) -> None:
    """One instance's process: once its bus is connected it says so on ``ready``, waits for the window's
    start (wall clock) on ``go``, publishes ``payload`` flat out until the window ends, and puts on ``done``
    what it sent in the window, what it dropped, and its CPU meanwhile."""

    async def run() -> dict[str, float]:
        bus = MqttBus(url, client_id=instance, status_topic=f"{TOPIC_ROOT}/instances/{instance}")
        async with (
            bus,
            bus.subscribe(f"{TOPIC_ROOT}/instances/+"),  # (as a server subscribes)
            bus.subscribe(f"{TOPIC_ROOT}/lobby/+/+"),
        ):
            await bus.wait_connected(CONNECT_TIMEOUT_S)
            topics = [match_topic(instance, f"m{index}") for index in range(MATCHES_PER_INSTANCE)]
            ready.put(instance)
            start_at = await asyncio.to_thread(go.get)
            await asyncio.sleep(max(0.0, start_at - time.time()))
            sent, cpu = bus.stats.published, time.process_time()
            deadline, index = start_at + duration_s, 0
            while time.time() < deadline:
                for _ in range(BATCH):
                    bus.publish_nowait(topics[index % MATCHES_PER_INSTANCE], payload)
                    index += 1
                await bus.flush()
            return {
                "published": bus.stats.published - sent,
                "cpu_s": time.process_time() - cpu,
                "dropped": bus.dropped_publishes,
            }

    done.put(asyncio.run(run()))


async def _count_deliveries(port: int, window: asyncio.Future[float], duration_s: float) -> int:
    """Every match event the broker delivers within the window (its start set in ``window`` once the
    instances are connected), to one reader subscribed to them all."""
    async with aiomqtt.Client("127.0.0.1", port, identifier="bench-reader") as client:
        await client.subscribe(f"{TOPIC_ROOT}/match/#", qos=0)
        counted, messages = 0, aiter(client.messages)
        start_at = await window
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, start_at + duration_s - time.time())):
                async for _ in messages:
                    if time.time() >= start_at:
                        counted += 1
        return counted


async def _one_count(
    port: int, broker_pid: int, instances: int, plan: BrokerPlan, payload: bytes
) -> BrokerRow:
    url, context = f"mqtt://127.0.0.1:{port}", get_context("spawn")
    ready, go, done = context.Queue(), context.Queue(), context.Queue()
    window: asyncio.Future[float] = asyncio.get_running_loop().create_future()
    reader = asyncio.create_task(_count_deliveries(port, window, plan.duration_s))
    processes = [
        context.Process(
            target=_instance,
            args=(url, f"bench-{instances}-{index}", plan.duration_s, payload, ready, go, done),
        )
        for index in range(instances)
    ]
    for process in processes:
        process.start()
    try:
        for _ in processes:
            await asyncio.to_thread(ready.get, timeout=START_TIMEOUT_S)
        start_at = time.time() + 0.2
        window.set_result(start_at)
        for _ in processes:
            go.put(start_at)
        await asyncio.sleep(max(0.0, start_at - time.time()))
        broker_cpu = cpu_seconds(broker_pid)
        await asyncio.sleep(plan.duration_s)
        broker_cpu = cpu_seconds(broker_pid) - broker_cpu
        results = [await asyncio.to_thread(done.get, timeout=START_TIMEOUT_S) for _ in processes]
        delivered = await reader
    finally:
        reader.cancel()
        for process in processes:
            process.join(START_TIMEOUT_S)
            if process.is_alive():
                process.kill()
    return BrokerRow(
        instances, sum(r["published"] for r in results), delivered, plan.duration_s, broker_cpu,
        sum(r["cpu_s"] for r in results), sum(r["dropped"] for r in results), len(payload),
    )  # fmt: skip


async def _run(plan: BrokerPlan, port: int) -> list[BrokerRow]:
    binary = mosquitto_path()
    broker = subprocess.Popen(
        [binary, "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )  # (local connections only: Mosquitto 2 without a configuration file)
    try:
        for _ in range(100):
            with contextlib.suppress(OSError):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                break
            await asyncio.sleep(0.05)
        payload = moved_event()
        return [await _one_count(port, broker.pid, count, plan, payload) for count in plan.instances]
    finally:
        broker.terminate()
        broker.wait()


def run_broker_benchmark(plan: BrokerPlan) -> list[BrokerRow]:
    """Measure each count of instances of ``plan`` against a Mosquitto of its own, on a free port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    return asyncio.run(_run(plan, port))


def render_markdown(plan: BrokerPlan, rows: Sequence[BrokerRow], command: str) -> str:
    version = subprocess.run([mosquitto_path(), "-h"], capture_output=True, text=True).stdout.split("\n")[0]
    lines = [
        "## Broker: match events from N instances through one Mosquitto",
        "",
        f"`{command}` on {machine_description()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"{version.strip()}. Each instance is a process of its own running the server's `MqttBus`, "
        "subscribed as a server is, publishing a Connect Four `moved` event "
        f"({rows[0].event_bytes if rows else 0} bytes, QoS 0, over {MATCHES_PER_INSTANCE:,} match "
        f"topics) as fast as its bus sends them, for {plan.duration_s:g} s after they all connected; one "
        "reader subscribed to every match event counts what the broker delivers (no instance reads "
        "match events: a worst case of one; a Python process, it reads no faster than it can). The "
        "broker's CPU is read from `/proc`. The broker, the "
        "instances and the reader share the machine's cores with other work, so these are what the "
        "machine gave, not the broker's ceiling.",
        "",
        "| instances | events published/s | delivered/s to the reader | broker CPU, cores | broker CPU per "
        "event, us | instance CPU per event, us | dropped |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row.instances} | {row.published_per_s:,.0f} | {row.delivered_per_s:,.0f} "
            f"| {row.broker_cores:.2f} | {row.broker_us_per_event:.1f} | {row.instance_us_per_event:.1f} "
            f"| {row.dropped} |"
        )
    return "\n".join(lines) + "\n"
