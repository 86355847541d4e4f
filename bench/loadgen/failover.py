"""One failover run: several instances share a PostgreSQL database and an MQTT broker, one is SIGKILLed
while every match is live, and the others take its matches over.

``instances`` ``plyarena serve`` processes (short leases) host ``matches`` matches between them, in turn;
in a share of them a person plays a level-1 bot of one fleet that follows the broker's lobby (this
process's :class:`bots.fleet.Fleet`), in the rest two people play (:mod:`bench.loadgen.following`). Each
person plays its first moves, then waits; once every one waits, they all go on and the first instance is
killed a moment later, with moves in flight. Then every game is played to its end, wherever it is hosted.

Measured from outside, as an operator would: when the killed instance's lease lapses (the database's own
expiry, read at the kill), when each of its matches names another host in the database (polled), when
each person has its match's state again from the new host, and when each bot moves again there (the
matches' moves on the broker, which also tell which instance published each move). At the end, every move
a person saw acknowledged is compared with the stored game: a move missing or different is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import sqlalchemy
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from bench.loadgen.following import Followed, FollowingPerson
from bench.loadgen.target import ServerUnderTest
from bench.machine import machine_description
from bots.fleet import Fleet, FleetConfig
from bots.link import Backoff
from bots.lobby_feeds import mqtt_client
from bots.pool import SearchPool

BOT_LEVEL = 1
MOVES_BEFORE_THE_KILL = 1
"""Each person's moves before the instances are all live and the kill comes."""
KILL_AFTER_GO_S = 0.1
"""From letting the people go on to the kill: their next moves are in flight."""
POLL_S = 0.05
"""How often the database is asked which instance hosts each match."""
_LEASE_LEFT = sqlalchemy.text(
    "SELECT extract(epoch FROM expires_at - now()) FROM instance_leases WHERE instance = :instance"
)
_HOSTS = sqlalchemy.text("SELECT id, host FROM matches WHERE id = ANY(:ids)")
_MOVES = sqlalchemy.text("SELECT match_id, ply, notation FROM moves WHERE match_id = ANY(:ids) ORDER BY ply")

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class FailoverPlan:
    instances: int = 3
    matches: int = 60
    bot_share: float = 0.5
    """The share of matches in which a person plays a bot; in the others two people play."""
    game: str = "tictactoe"
    lease_s: float = 3.0
    pace_s: float = 0.3
    """A person's mean thinking time before each move."""
    timeout_s: float = 120.0
    """How long the games may take to finish after the kill."""

    def __post_init__(self) -> None:
        if self.instances < 2:
            raise ValueError("a failover run needs at least 2 instances")
        if self.matches < self.instances:
            raise ValueError(f"give each of the {self.instances} instances a match at least")


@dataclass(slots=True)
class FailoverReport:
    plan: FailoverPlan
    killed_matches: int
    """Matches hosted by the killed instance when it died."""
    killed_bot_matches: int
    lease_left_s: float
    """From the kill to its lease's lapse, by the database's clock."""
    adopted_after_lapse_s: list[float]
    """For each of the killed instance's matches: from the lapse to the database naming another host."""
    people_back_after_lapse_s: list[float]
    """For each person of those matches: from the lapse to having the match's state from its new host."""
    bots_back_after_lapse_s: list[float]
    """For each bot of those matches: from the lapse to its first move published by the new host."""
    acknowledged_moves: int
    lost_moves: int
    finished: int
    double_hosted: list[str]
    """Matches whose moves two instances published over the same stretch of plies: none, ever."""
    host_changes: int
    """Changes of a match's host seen in the database: one per match of the killed instance."""
    duration_s: float
    problems: list[str] = field(default_factory=list)
    machine: str = field(default_factory=machine_description)
    date: str = field(default_factory=lambda: time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))

    @property
    def adoption_s(self) -> float:
        """From the lapse until the last of the killed instance's matches had another host."""
        return max(self.adopted_after_lapse_s, default=0.0)


@dataclass(slots=True)
class _Match:
    match_id: str
    home: str
    people: list[FollowingPerson]
    bot_seat: int | None


class _Observer:
    """The matches' hosts in the database, polled; and each move's publishing instance, on the broker."""

    def __init__(self, engine: AsyncEngine, mqtt_url: str) -> None:
        self.engine = engine
        self.mqtt_url = mqtt_url
        self.hosts: dict[str, list[tuple[float, str]]] = defaultdict(list)
        """Each match's hosts in the database, with when each was first seen."""
        self.published: dict[str, list[tuple[float, int, str]]] = defaultdict(list)
        """Each match's moves on the broker: when, the ply, the instance that published it."""
        self.match_ids: list[str] = []

    async def poll(self) -> None:
        while True:
            if self.match_ids:
                async with self.engine.connect() as connection:
                    rows = (await connection.execute(_HOSTS, {"ids": self.match_ids})).all()
                now = time.monotonic()
                for match_id, host in rows:
                    seen = self.hosts[match_id]
                    if not seen or seen[-1][1] != host:
                        seen.append((now, host))
            await asyncio.sleep(POLL_S)

    async def listen(self, subscribed: asyncio.Event) -> None:
        async with mqtt_client(self.mqtt_url, f"failover-observer-{secrets.token_hex(3)}") as client:
            await client.subscribe("plyarena/v1/match/+/+", qos=0)
            subscribed.set()
            async for message in client.messages:
                *_, instance, match_id = str(message.topic).split("/")
                payload = message.payload
                if not isinstance(payload, bytes | bytearray):
                    continue
                with contextlib.suppress(msgspec.DecodeError, TypeError, KeyError):
                    event = msgspec.json.decode(payload)
                    if event.get("type") == "moved":
                        self.published[match_id].append((time.monotonic(), int(event["ply"]), instance))

    def double_hosted(self) -> list[str]:
        """Matches whose published plies of two instances overlap, or that one instance published twice."""
        found = []
        for match_id, moves in self.published.items():
            spans: dict[str, tuple[int, int]] = {}
            plies = [ply for _, ply, _ in moves]
            for _, ply, instance in moves:
                low, high = spans.get(instance, (ply, ply))
                spans[instance] = (min(low, ply), max(high, ply))
            ordered = sorted(spans.values())
            if len(set(plies)) != len(plies) or any(a[1] >= b[0] for a, b in itertools.pairwise(ordered)):
                found.append(match_id)
        return found


async def run_failover(
    plan: FailoverPlan, db_url: str, mqtt_url: str, workdir: Path, progress: Progress = lambda _: None
) -> FailoverReport:
    """One run (see the module docstring); ``db_url`` is a PostgreSQL database the instances share."""
    run_id = secrets.token_hex(3)
    servers = [
        ServerUnderTest(db_url, workdir, f"failover-{run_id}-{number}",
                        ("--mqtt", mqtt_url, "--lease", f"{plan.lease_s:g}"))
        for number in range(plan.instances)
    ]  # fmt: skip
    engine = create_async_engine(db_url)
    observer = _Observer(engine, mqtt_url)
    config = FleetConfig(
        levels={plan.game: (BOT_LEVEL,)}, max_games=plan.matches, idle_wait_s=None,
        backoff=Backoff(initial_s=0.05, max_s=0.5), fleet_id=f"failover-{run_id}",
    )  # fmt: skip
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(engine.dispose)
        progress(f"starting {plan.instances} instances")
        for server in servers:
            await server.start()
            stack.push_async_callback(server.stop)
        tasks: list[asyncio.Task[None]] = []
        stack.callback(lambda: [task.cancel() for task in tasks])
        subscribed = asyncio.Event()
        tasks += [asyncio.create_task(observer.poll()), asyncio.create_task(observer.listen(subscribed))]
        await asyncio.wait_for(subscribed.wait(), 10)
        pool = await stack.enter_async_context(SearchPool(1))
        fleet = Fleet(pool, config)
        fleet.follow_mqtt(mqtt_url)
        await stack.enter_async_context(fleet)
        progress(f"opening {plan.matches} matches")
        urls = [server.ws_url for server in servers]
        matches = await _open_matches(plan, urls)
        for match in matches:
            stack.push_async_callback(asyncio.gather, *(person.close() for person in match.people))
        observer.match_ids = [match.match_id for match in matches]
        people = [person for match in matches for person in match.people]
        playing = [asyncio.create_task(person.play()) for person in people]
        stack.callback(lambda: [task.cancel() for task in playing])
        await _until(
            lambda: all(any(person.holding.is_set() for person in match.people) for match in matches),
            playing, plan.timeout_s, "every match live, with its person to move waiting",
        )  # fmt: skip
        progress("every match live; killing one instance")
        for person in people:
            person.go.set()
        await asyncio.sleep(KILL_AFTER_GO_S)
        doomed = servers[0]
        async with engine.connect() as connection:
            await doomed.kill()
            killed_at = time.monotonic()
            lease_left = float(await connection.scalar(_LEASE_LEFT, {"instance": doomed.instance_id}) or 0.0)
        lapsed_at = killed_at + max(0.0, lease_left)
        progress("playing every game to its end")
        await _until(
            lambda: all(task.done() for task in playing), playing, plan.timeout_s, "every game's end"
        )
        records = [task.result() for task in playing]
        duration = time.monotonic() - killed_at
        stored = await _stored_moves(engine, observer.match_ids)
        return _report(plan, matches, records, observer, stored, doomed, lapsed_at, lease_left, duration)
    raise AssertionError("unreachable")  # (for mypy: the stack does not swallow exceptions)


async def _open_matches(plan: FailoverPlan, urls: list[str]) -> list[_Match]:
    """Every match, opened at its home instance in turn; those with a bot wait for it to be seated."""
    bot_matches = round(plan.matches * plan.bot_share)
    matches = []
    for number in range(plan.matches):
        home = urls[number % len(urls)]
        creator = FollowingPerson(f"P{number}a", plan.game, urls, home, pace_s=plan.pace_s, seed=number)
        if number < bot_matches:
            match_id = await creator.start(game=plan.game, seat=0, bot={"level": BOT_LEVEL})
            matches.append(_Match(match_id, home, [creator], bot_seat=1))
        else:
            match_id = await creator.start(game=plan.game, seat=0)
            joiner = FollowingPerson(f"P{number}b", plan.game, urls, home, pace_s=plan.pace_s, seed=-number)
            await joiner.join(match_id)
            matches.append(_Match(match_id, home, [creator, joiner], bot_seat=None))
    for match in matches:
        for person in match.people:
            person.moves_allowed = MOVES_BEFORE_THE_KILL
    return matches


async def _until(
    condition: Callable[[], bool], people: list[asyncio.Task[Followed]], timeout_s: float, what: str
) -> None:
    """Wait until ``condition`` holds; raise at once what a person's task raised, or after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        for task in people:
            if task.done() and not task.cancelled() and task.exception() is not None:
                task.result()
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {timeout_s:g} s")
        await asyncio.sleep(0.05)


async def _stored_moves(engine: AsyncEngine, match_ids: list[str]) -> dict[str, dict[int, str]]:
    async with engine.connect() as connection:
        rows = (await connection.execute(_MOVES, {"ids": match_ids})).all()
    stored: dict[str, dict[int, str]] = defaultdict(dict)
    for match_id, ply, move in rows:
        stored[match_id][int(ply)] = str(move)
    return stored


def _report(
    plan: FailoverPlan,
    matches: list[_Match],
    records: list[Followed],
    observer: _Observer,
    stored: dict[str, dict[int, str]],
    doomed: ServerUnderTest,
    lapsed_at: float,
    lease_left: float,
    duration: float,
) -> FailoverReport:
    by_person = iter(records)
    killed = [match for match in matches if match.home == doomed.ws_url]
    adopted, people_back, bots_back, problems = [], [], [], []
    acknowledged = lost = finished = host_changes = 0
    for match in matches:
        followed = [next(by_person) for _ in match.people]
        finished += all(record.status == "finished" for record in followed)
        hosts = observer.hosts[match.match_id]
        host_changes += len(hosts) - 1
        moves = stored[match.match_id]
        for record in followed:
            acknowledged += len(record.acknowledged)
            missing = {ply: move for ply, move in record.acknowledged.items() if moves.get(ply) != move}
            lost += len(missing)
            if missing:
                problems.append(f"match {match.match_id}: acknowledged but not stored: {missing}")
        if match.home != doomed.ws_url:
            continue
        new_host = next(((at, host) for at, host in hosts if host != doomed.instance_id), None)
        if new_host is None:
            problems.append(f"match {match.match_id} of the killed instance was never taken over")
            continue
        adopted.append(new_host[0] - lapsed_at)
        people_back += [record.back_at - lapsed_at for record in followed if record.back_at is not None]
        if match.bot_seat is not None:
            bot_moves = [
                at for at, ply, instance in observer.published[match.match_id]
                if instance == new_host[1] and ply % 2 == match.bot_seat
            ]  # fmt: skip
            if bot_moves:
                bots_back.append(min(bot_moves) - lapsed_at)
            elif len(moves) % 2 != match.bot_seat:  # (the game ended on the person's move: nothing to show)
                problems.append(f"the bot of match {match.match_id} never moved at its new host")
    return FailoverReport(
        plan=plan,
        killed_matches=len(killed),
        killed_bot_matches=sum(match.bot_seat is not None for match in killed),
        lease_left_s=lease_left,
        adopted_after_lapse_s=adopted,
        people_back_after_lapse_s=people_back,
        bots_back_after_lapse_s=bots_back,
        acknowledged_moves=acknowledged,
        lost_moves=lost,
        finished=finished,
        double_hosted=observer.double_hosted(),
        host_changes=host_changes,
        duration_s=duration,
        problems=problems,
    )


def render_markdown(report: FailoverReport, command: str) -> str:
    """The report as the failover section of docs/benchmarks.md."""
    plan = report.plan

    def spread(values: list[float]) -> str:
        if not values:
            return "-"
        return f"median {statistics.median(values):.2f} s, max {max(values):.2f} s"

    rows = [
        ("instances (PostgreSQL, Mosquitto)", f"{plan.instances}, lease {plan.lease_s:g} s"),
        ("matches", f"{plan.matches} of {plan.game}, {round(plan.matches * plan.bot_share)} against a "
                    f"level-{BOT_LEVEL} bot of one fleet"),
        ("killed (SIGKILL) with its matches live", f"1 instance, {report.killed_matches} matches "
                                                   f"({report.killed_bot_matches} with a bot)"),
        ("kill to lease lapse", f"{report.lease_left_s:.2f} s"),
        ("lapse to taken over (database)", spread(report.adopted_after_lapse_s)),
        ("lapse to each person back at the new host", spread(report.people_back_after_lapse_s)),
        ("lapse to each bot's first move at the new host", spread(report.bots_back_after_lapse_s)),
        ("moves acknowledged to people / lost", f"{report.acknowledged_moves} / {report.lost_moves}"),
        ("matches finished", f"{report.finished} of {plan.matches}"),
        ("matches published by two instances at once", str(len(report.double_hosted))),
        ("kill to the last game's end", f"{report.duration_s:.1f} s"),
    ]  # fmt: skip
    lines = [
        "## Failover: one of several instances killed",
        "",
        f"`{command}` on {report.machine}, {report.date}. The instances are `plyarena serve` processes "
        "sharing the database and the broker; one fleet in the bench's process seats the bots; each person "
        "plays its first move, and once every match is live with its person to move waiting, they go on "
        "and the first instance is killed 0.1 s later. Times are from when its lease lapsed (the database's "
        "expiry, read at the kill): to the database naming another host for each of its matches, to each "
        "person having its match's state from the new host, to each bot's first move there (as the broker "
        "carries the matches' moves). A move is lost if a person saw it acknowledged and the stored game "
        "lacks it.",
        "",
        "| | |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in rows),
    ]
    lines += [f"- {problem}" for problem in report.problems]
    return "\n".join(lines) + "\n"
