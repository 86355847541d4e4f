"""The deployment files agree with each other and with the real command line.

docker-compose.yml is read with PyYAML (its ``${VARIABLE:-default}`` filled in as
docker-compose does), and each service's command is parsed by the real
``plyarena`` argument parser, so a renamed flag breaks this test, not a
deployment. Debian's ``docker-compose config`` checks the file as well where it
is installed (``apt-get install docker-compose``); CI need not have it.

The broker's access rules (deploy/mosquitto/acl) are checked twice against one
table of who may publish and read what, built from the topics the code really
uses: by a reading of the file with Mosquitto's rules, and on a real Mosquitto
started with the deployment's own configuration, password file and ACL file.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import re
import shutil
import socket
import subprocess
import tomllib
from collections.abc import AsyncIterator
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiomqtt
import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support.deploy import COMPOSE, FRONT_DOOR, ROOT, compose_file, server_services
from support.services import missing, mosquitto_binary, wait_for_port

from bots.fleet import new_fleet_id
from bots.lobby_feeds import INSTANCE_TOPICS, LOBBY_TOPICS
from bots.offer import offer_topic
from plyarena.cli import build_parser
from plyarena.commands.bots import fleet_config
from plyarena.commands.serve import config_from
from plyarena.options import FLEET_KEY_ENV
from server.accounts import LOGOUTS_PATTERN, logout_topic
from server.bot_catalog import OFFERS_TOPICS
from server.bus import BrokerAddress, MqttBus, shown_url, topic_matches
from server.config import check_fleet_key
from server.lobby import TOPIC_ROOT, lobby_topic, match_topic
from server.pool_protocol import WAITERS_PATTERN, inbox_pattern, inbox_topic, waiter_topic
from server.storage.engine import async_url

DOCKERFILE = ROOT / "Dockerfile"
LOCK = ROOT / "requirements.lock"
"""The exact versions the image installs, made by ``make lock``."""
PYPROJECT = ROOT / "pyproject.toml"
MOSQUITTO_DIR = ROOT / "deploy" / "mosquitto"
MOSQUITTO_CONF = MOSQUITTO_DIR / "mosquitto.conf"
MOSQUITTO_ACL = MOSQUITTO_DIR / "acl"
MOSQUITTO_START = MOSQUITTO_DIR / "start.sh"
HEALTHY = {"condition": "service_healthy"}
DATA_DIR = "/data"
"""The image's working directory and volume, owned by the user it runs as."""
HEALTH_USER = "health"
"""The user of the broker's health check, whose password deploy/mosquitto/start.sh makes up."""
TEST_PORTS = range(18300, 18400)
"""Where the test's own broker listens, away from the machine's Mosquitto on 1883."""


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return compose_file({})["services"]


def health_test(service: dict[str, Any]) -> str:
    test = service["healthcheck"]["test"]
    assert test[0] in ("CMD", "CMD-SHELL"), test
    return " ".join(test[1:])


def test_every_service_is_there_with_health_checks_and_starts_in_order(services: dict[str, Any]) -> None:
    assert set(services) == {"postgres", "mosquitto", "server-a", "server-b", FRONT_DOOR, "bots"}
    assert set(server_services(services)) == {"server-a", "server-b"}
    assert "pg_isready" in health_test(services["postgres"])
    assert re.search(r"mosquitto_sub .*-t '\$SYS/broker/uptime' .*-C 1", health_test(services["mosquitto"]))
    for name in server_services(services):
        assert "http://127.0.0.1:8765/healthz" in health_test(services[name])
        assert services[name]["depends_on"] == {"postgres": HEALTHY, "mosquitto": HEALTHY}
        assert "ports" not in services[name], "reached through the front door only"
        assert services[name]["build"] == services["bots"]["build"] == "."
    assert services[FRONT_DOOR]["depends_on"] == dict.fromkeys(server_services(services), HEALTHY)
    assert services[FRONT_DOOR]["ports"] == ["8765:8765"]
    assert services["bots"]["depends_on"] == [FRONT_DOOR]


def test_volumes_are_declared_mounted_and_bind_mounts_exist(services: dict[str, Any]) -> None:
    declared = set(yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["volumes"])
    mounts = [volume.split(":") for service in services.values() for volume in service.get("volumes", [])]
    named = {source: target for source, target, *_ in mounts if not source.startswith(".")}
    assert set(named) == declared == {"pgdata", "mosquitto-data", "fleet-state"}
    assert named["pgdata"] == "/var/lib/postgresql/data"
    assert named["fleet-state"] == "/data", "the image's own volume, owned by its user"
    for source, _target, *_ in mounts:
        if source.startswith("."):
            assert (ROOT / source).is_file(), source


@pytest.mark.parametrize("name", ["server-a", "server-b"])
def test_each_server_runs_plyarena_serve_on_postgresql_and_mosquitto(
    services: dict[str, Any], name: str
) -> None:
    args = build_parser().parse_args(services[name]["command"])
    assert args.command == "serve"
    assert (args.host, args.port) == ("0.0.0.0", 8765)
    database = async_url(args.db)
    postgres = services["postgres"]["environment"]
    assert database.drivername == "postgresql+asyncpg"
    assert (database.host, database.port) == ("postgres", 5432)
    assert (database.username, database.password, database.database) == (
        postgres["POSTGRES_USER"], postgres["POSTGRES_PASSWORD"], postgres["POSTGRES_DB"],
    )  # fmt: skip
    broker = BrokerAddress.parse(args.mqtt)
    assert (broker.host, broker.port, broker.tls) == ("mosquitto", 1883, False)
    assert broker.username == args.instance_id, "the ACL lets a server write the topics of its username"
    assert broker.password == broker_users(services)[broker.username]
    config = config_from(args)
    # What its lobby entries, its status and its hosted_elsewhere answers name: its path at the front door.
    assert config.ws_url == f"ws://localhost:8765/i/{args.instance_id}/ws"
    assert config.allowed_origins is None, "its own origin, the front door's, where the pages come from"
    front_door = services[FRONT_DOOR]["networks"]["default"]["ipv4_address"]
    assert config.trusted_proxies == (f"{front_door}/32",), "X-Forwarded-For names the client"


def test_the_fleet_runs_plyarena_bots_through_the_front_door(services: dict[str, Any]) -> None:
    server = server_services(services)["server-a"]
    args = build_parser().parse_args(services["bots"]["command"])
    assert args.command == "bots"
    assert args.server is None, "every instance's lobby from the broker, each entry joined at its host's URL"
    assert urlsplit(server.ws_url).hostname == "localhost"
    assert services["bots"]["network_mode"] == f"service:{FRONT_DOOR}", (
        "localhost is the front door there, so the instances' public URLs reach it"
    )
    fleet, to_server = BrokerAddress.parse(args.mqtt), BrokerAddress.parse(server.mqtt_url or "")
    assert (fleet.host, fleet.port) == (to_server.host, to_server.port)
    assert fleet.username is not None and fleet.username != to_server.username, "a user of its own"
    assert fleet.password == broker_users(services)[fleet.username]
    assert fleet_config(args).max_games == args.max_games
    volume = {
        target: source for source, target in (mount.split(":") for mount in services["bots"]["volumes"])
    }
    assert args.state.parent == Path(DATA_DIR) and volume[DATA_DIR] == "fleet-state", (
        "the bots' tokens outlive the container, so a restarted fleet plays on in its games"
    )


@pytest.mark.parametrize("given", [None, "deployed-fleet-key-0123456789"])
def test_the_servers_and_the_fleet_share_a_fleet_key_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, given: str | None
) -> None:
    """So the servers take the fleet's notes on bot requests, and no one else's."""
    services = compose_file({} if given is None else {FLEET_KEY_ENV: given})["services"]
    keys = {name: services[name]["environment"][FLEET_KEY_ENV] for name in ("server-a", "server-b", "bots")}
    (key,) = set(keys.values())
    assert key == given or given is None
    check_fleet_key(key)
    monkeypatch.setenv(FLEET_KEY_ENV, key)
    assert {config.fleet_key for config in server_services(services).values()} == {key}
    assert fleet_config(build_parser().parse_args(services["bots"]["command"])).fleet_key == key


def test_the_image_installs_the_project_beside_its_migrations() -> None:
    text = DOCKERFILE.read_text().replace("\\\n", " ")  # an instruction continued on the next line is one
    lines = [line.split() for line in text.splitlines() if line and line[0] != "#"]
    instructions = [(words[0], words[1:]) for words in lines if words[0].isupper()]
    assert instructions[0] == ("FROM", ["python:3.11-slim"])
    sources = {source for op, arguments in instructions if op == "COPY" for source in arguments[:-1]}
    assert {
        "migrations/",
        "alembic.ini",
        "server/",
        "games/",
        "bots/",
        "plyarena/",
        "pyproject.toml",
        "requirements.lock",
        "bench/",  # plyarena's command line imports the benchmarks' package
    } <= sources
    for source in sources:
        assert (ROOT / source).exists(), source
    workdirs = [arguments[0] for op, arguments in instructions if op == "WORKDIR"]
    assert workdirs[0] == "/app"  # sources and migrations together, so server/storage/migrate.py finds them
    runs = [arguments for op, arguments in instructions if op == "RUN"]
    assert runs[0] == ["pip", "install", "--require-hashes", "--no-deps", "-r", "requirements.lock"], runs[0]
    assert runs[1][:2] == ["apt-get", "update"] and "stockfish" in runs[1], runs[1]  # chess level 8's engine
    install = runs[2]
    # In place, so the package stays beside migrations/, with the kernels built by a compiler that goes
    # away once they are.
    project = install.index("pip")
    assert install[project - 1] == "PLYARENA_BUILD_KERNELS=required" and "gcc" in install, install
    assert install[project : project + 3] == ["pip", "install", "-e"], install
    assert "--no-deps" in install, "everything else comes from the lock"
    assert install.index("purge") > project
    assert ("ENTRYPOINT", ['["plyarena"]']) in instructions
    assert ("VOLUME", [f'["{DATA_DIR}"]']) in instructions and workdirs[-1] == DATA_DIR
    assert f"mkdir {DATA_DIR} && chown arena {DATA_DIR}" in DOCKERFILE.read_text(), "the volume is the user's"


def test_the_lock_pins_every_dependency_at_a_version_that_pyproject_allows() -> None:
    """requirements.lock is made from pyproject.toml by ``make lock``: this fails once a dependency there
    changes and the lock was not made again."""
    locked = dict(re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", LOCK.read_text(), re.MULTILINE))
    locked = {canonicalize_name(name): version for name, version in locked.items()}
    pyproject = tomllib.loads(PYPROJECT.read_text())
    wanted = [*pyproject["project"]["dependencies"], *pyproject["build-system"]["requires"]]
    image = {"sys_platform": "linux", "platform_system": "Linux", "python_version": "3.11"}
    for requirement in map(Requirement, wanted):
        if requirement.marker is not None and not requirement.marker.evaluate(image):
            continue
        version = locked.get(canonicalize_name(requirement.name))
        assert version is not None, f"{requirement.name} is not in requirements.lock: run make lock"
        assert requirement.specifier.contains(version), f"{requirement}, the lock has {version}: make lock"
    assert "--hash=sha256:" in LOCK.read_text(), "the image installs with --require-hashes"


def test_docker_compose_accepts_the_file(docker_compose: str) -> None:
    result = subprocess.run(
        [docker_compose, "-f", str(COMPOSE), "config", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


# ------------------------------------------------------------------ the broker: users and access


def broker_users(services: dict[str, Any]) -> dict[str, str]:
    """The broker's users and their passwords, as docker-compose.yml gives them to start.sh."""
    pairs = services["mosquitto"]["environment"]["PLYARENA_MQTT_USERS"].split()
    return dict(pair.split(":", 1) for pair in pairs)


def mosquitto_settings() -> dict[str, list[str]]:
    settings: dict[str, list[str]] = {}
    for line in MOSQUITTO_CONF.read_text().splitlines():
        if line and line[0] != "#":
            name, _, value = line.partition(" ")
            settings.setdefault(name, []).append(value)
    return settings


@dataclass(frozen=True)
class Rule:
    access: str
    """``read``, ``write``, ``readwrite`` or ``deny``."""
    topic: str


@dataclass
class Acl:
    """An ACL file: its patterns (every user's) and each user's own rules."""

    patterns: list[Rule]
    users: dict[str, list[Rule]]

    @classmethod
    def read(cls, text: str) -> Acl:
        acl = cls([], {})
        user: str | None = None
        for line in text.splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            keyword, *words = line.split()
            if keyword == "user":
                (user,) = words
                assert user not in acl.users, f"two blocks for user {user}"
                acl.users[user] = []
                continue
            assert keyword in ("topic", "pattern"), f"not an ACL line: {line!r}"
            access, topic = words if len(words) == 2 else ("readwrite", *words)
            assert access in ("read", "write", "readwrite", "deny"), line
            if keyword == "pattern":
                acl.patterns.append(Rule(access, topic))
            else:
                assert user is not None, f"{line!r} is for anonymous clients, whom the broker refuses"
                acl.users[user].append(Rule(access, topic))
        return acl

    def allows(self, username: str, client_id: str, access: str, topic: str) -> bool:
        """What Mosquitto decides (``mosquitto_acl_check_default`` in 2.0, the acl-file plugin in 2.1):
        the user's own rules, denials first, then the patterns, denials first; nothing else is allowed."""
        own = [rule for rule in self.users.get(username, ()) if rule.topic[0] == "$" or topic[0] != "$"]
        patterns = [
            Rule(rule.access, rule.topic.replace("%u", username).replace("%c", client_id))
            for rule in self.patterns
        ]
        for rules in (own, patterns):
            for rule in sorted(rules, key=lambda rule: rule.access != "deny"):
                if topic_matches(rule.topic, topic):
                    if rule.access == "deny":
                        return False
                    if access in rule.access:
                        return True
        return False


@dataclass(frozen=True)
class Case:
    user: str
    client_id: str
    access: str
    """``write`` (publish) or ``read`` (receive)."""
    topic: str
    allowed: bool


def access_table(services: dict[str, Any]) -> list[Case]:
    """Who may publish and read what on the compose file's broker, on the topics the code uses."""
    server = server_services(services)["server-a"]
    server_user = BrokerAddress.parse(server.mqtt_url or "").username
    fleet_args = build_parser().parse_args(services["bots"]["command"])
    fleet_user = BrokerAddress.parse(fleet_args.mqtt).username
    assert server_user is not None and fleet_user is not None
    instance, other_instance = server.instance_id, f"{server.instance_id}-other"
    fleet_id, other_fleet_id = fleet_config(fleet_args).fleet_id, new_fleet_id()
    assert fleet_id == fleet_user, "a fleet that logs in is named after its user"
    server_client, health_client = f"plyarena-server-{instance}", "health-check"

    def status(instance: str) -> str:
        return f"{TOPIC_ROOT}/instances/{instance}"  # (as server/app.py names the bus's status topic)

    def waiter(instance: str) -> str:
        return waiter_topic(instance, "p1")

    def logout(instance: str) -> str:
        return logout_topic(instance, "p1")

    def cases(user: str, client_id: str, access: str, allowed: bool, *topics: str) -> list[Case]:
        return [Case(user, client_id, access, topic, allowed) for topic in topics]

    return [
        # A server instance writes its own status, lobby entries, match events, waiters and logouts, and to
        # another instance's pool inbox under its own name, and nothing else.
        *cases(server_user, server_client, "write", True,
               status(instance), lobby_topic(instance, "m1"), match_topic(instance, "m1"), waiter(instance),
               inbox_topic(other_instance, instance), logout(instance)),
        *cases(server_user, server_client, "write", False,
               status(other_instance), lobby_topic(other_instance, "m1"), match_topic(other_instance, "m1"),
               status(fleet_user), lobby_topic(fleet_user, "m1"), offer_topic(fleet_id),
               offer_topic(server_user), waiter(other_instance), inbox_topic(instance, other_instance),
               inbox_topic(other_instance, fleet_user), logout(other_instance)),
        # A fleet writes its own offer, named after its user, and nothing else; not another fleet's
        # either under that fleet's id as its client id (the broker makes every client's id its user).
        *cases(fleet_user, fleet_id, "write", True, offer_topic(fleet_id)),
        *cases(fleet_user, other_fleet_id, "write", False, offer_topic(other_fleet_id)),
        *cases(fleet_user, fleet_id, "write", False,
               offer_topic(other_fleet_id), status(fleet_user), lobby_topic(fleet_user, "m1"),
               match_topic(fleet_user, "m1"), status(instance), lobby_topic(instance, "m1"),
               match_topic(instance, "m1"), waiter(fleet_user), waiter(instance),
               inbox_topic(instance, fleet_user), inbox_topic(fleet_user, instance), logout(fleet_user),
               logout(instance)),
        # The health check writes nothing, under any name.
        *cases(HEALTH_USER, health_client, "write", False,
               status(HEALTH_USER), lobby_topic(HEALTH_USER, "m1"), offer_topic(health_client),
               match_topic(HEALTH_USER, "m1"), match_topic(instance, "m1")),
        # Servers read the instances' status, lobby entries, the fleets' offers, the waiters, their own
        # pool inbox and the logouts; fleets the first two.
        *cases(server_user, server_client, "read", True,
               status(other_instance), lobby_topic(other_instance, "m1"), offer_topic(fleet_id),
               waiter(other_instance), inbox_topic(instance, other_instance), logout(other_instance)),
        *cases(server_user, server_client, "read", False, match_topic(other_instance, "m1"),
               "$SYS/broker/uptime", inbox_topic(other_instance, instance)),
        *cases(fleet_user, fleet_id, "read", True, status(instance), lobby_topic(instance, "m1")),
        *cases(fleet_user, fleet_id, "read", False,
               offer_topic(other_fleet_id), match_topic(instance, "m1"), "$SYS/broker/uptime",
               waiter(instance), inbox_topic(fleet_user, instance), inbox_topic(instance, fleet_user),
               logout(instance)),
        *cases(HEALTH_USER, health_client, "read", True, "$SYS/broker/uptime"),
        *cases(HEALTH_USER, health_client, "read", False, status(instance), lobby_topic(instance, "m1")),
    ]  # fmt: skip


def test_the_broker_takes_no_anonymous_clients_and_checks_passwords_and_an_acl(
    services: dict[str, Any],
) -> None:
    settings = mosquitto_settings()
    assert settings["listener"] == ["1883"]
    assert settings["allow_anonymous"] == ["false"]
    assert settings["use_username_as_clientid"] == ["true"]  # (no client takes another's id)
    mosquitto = services["mosquitto"]
    _sh, script, auth_dir, *broker = mosquitto["command"]
    assert broker == ["/usr/sbin/mosquitto", "-c", "/mosquitto/config/mosquitto.conf"]
    assert settings["password_file"] == [f"{auth_dir}/passwd"]  # (both written there by start.sh)
    assert settings["acl_file"] == [f"{auth_dir}/acl"]
    mounts = dict(volume.split(":")[:2] for volume in mosquitto["volumes"])
    config_dir = Path(script).parent
    for source in (MOSQUITTO_CONF, MOSQUITTO_ACL, MOSQUITTO_START):
        assert mounts[f"./{source.relative_to(ROOT)}"] == str(config_dir / source.name)


def test_each_broker_user_has_its_rules_and_the_health_check_logs_in(services: dict[str, Any]) -> None:
    acl = Acl.read(MOSQUITTO_ACL.read_text())
    assert set(acl.users) == {*broker_users(services), HEALTH_USER}
    check = health_test(services["mosquitto"])
    auth_dir = services["mosquitto"]["command"][2]
    assert f'-u {HEALTH_USER} -P "$(cat {auth_dir}/health.password)"' in check
    assert acl.allows(HEALTH_USER, "health-check", "read", "$SYS/broker/uptime")


def test_the_acl_keeps_each_user_to_its_own_topics(services: dict[str, Any]) -> None:
    acl = Acl.read(MOSQUITTO_ACL.read_text())
    wrong = [case for case in access_table(services) if acl.allows(*astuple(case)[:4]) != case.allowed]
    assert not wrong


def test_only_server_instances_write_instance_topics_whatever_the_user(services: dict[str, Any]) -> None:
    """Patterns apply to every user: a user that is not a server instance must take back, by its own deny
    lines, the status and lobby entries of a made-up instance of its name."""
    acl = Acl.read(MOSQUITTO_ACL.read_text())
    servers = {
        BrokerAddress.parse(config.mqtt_url or "").username for config in server_services(services).values()
    }
    assert servers, "the compose file's server instances, by their usernames"
    for user in set(acl.users) - servers:
        for topic in (f"{TOPIC_ROOT}/instances/{user}", lobby_topic(user, "m1"), match_topic(user, "m1")):
            assert not acl.allows(user, "any-client", "write", topic), (user, topic)
    for user in servers:  # (and the offer of a made-up fleet of a server's name, by its deny line)
        assert not acl.allows(user, user, "write", offer_topic(user)), user


def test_what_each_side_subscribes_to_is_what_the_acl_lets_it_read(services: dict[str, Any]) -> None:
    subscriptions = {  # (server/lobby.py, bot_catalog.py, pool_exchange.py, accounts.py; bots/lobby_feeds.py)
        "server-a": [
            f"{TOPIC_ROOT}/instances/+",
            f"{TOPIC_ROOT}/lobby/+/+",
            OFFERS_TOPICS,
            WAITERS_PATTERN,
            inbox_pattern(server_services(services)["server-a"].instance_id),
            LOGOUTS_PATTERN,
        ],
        "bots": [INSTANCE_TOPICS, LOBBY_TOPICS],
    }
    assert subscriptions["bots"] == subscriptions["server-a"][:2]
    table = access_table(services)
    for service, patterns in subscriptions.items():
        user = BrokerAddress.parse(build_parser().parse_args(services[service]["command"]).mqtt).username
        reads = [case for case in table if case.user == user and case.access == "read"]
        for pattern in patterns:
            readable = [case.topic for case in reads if case.allowed and topic_matches(pattern, case.topic)]
            assert readable, f"{service} subscribes to {pattern}, which the table never lets it read"
        for case in reads:
            assert case.allowed == any(topic_matches(pattern, case.topic) for pattern in patterns), case


def test_passwords_come_from_the_environment_into_both_ends(docker_compose: str) -> None:
    environ = {
        "PLYARENA_MQTT_ARENA_A_PASSWORD": "s3cret.1",
        "PLYARENA_MQTT_ARENA_B_PASSWORD": "s3cret.2",
        "PLYARENA_MQTT_FLEET_PASSWORD": "s3cret.3",
    }
    result = subprocess.run(
        [docker_compose, "-f", str(COMPOSE), "config"],
        cwd=ROOT, env={**os.environ, **environ}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    resolved, ours = yaml.safe_load(result.stdout)["services"], compose_file(environ)["services"]
    for name in ("server-a", "server-b", "bots"):
        assert resolved[name]["command"] == ours[name]["command"]
    assert resolved["mosquitto"]["environment"] == ours["mosquitto"]["environment"]
    users = broker_users(resolved)
    for name, password in (("server-a", "s3cret.1"), ("server-b", "s3cret.2"), ("bots", "s3cret.3")):
        url = build_parser().parse_args(resolved[name]["command"]).mqtt
        broker = BrokerAddress.parse(url)
        assert broker.password == users[broker.username or ""] == password
        assert password not in shown_url(url), "what logs show of the URL"


@pytest.mark.parametrize(
    ("users", "refusal"),
    [
        ("stranger:p4ss", "user stranger has no 'user stranger' block"),
        ("bots:p@ss", "the password of bots is empty or holds other characters"),
        ("bots", "'bots' in PLYARENA_MQTT_USERS is not name:password"),
        ("bo/ts:p4ss", "user name 'bo/ts'"),
    ],
)
def test_start_sh_refuses_users_the_broker_could_not_check(users: str, refusal: str, tmp_path: Path) -> None:
    result = subprocess.run(
        ["sh", str(MOSQUITTO_START), str(tmp_path / "auth")],
        env={**os.environ, "PLYARENA_MQTT_USERS": users}, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 1 and refusal in result.stderr, result.stderr


# ---------------------------------------------------------- the same rules on a real Mosquitto

OBSERVER = "observer"
"""A user of the test's own, who reads and writes every topic."""
TEST_RULES = f"""
user {OBSERVER}
topic readwrite #
# Where each user learns that every message the test sent it has come.
pattern read plyarena-test/%u
"""


@dataclass
class Broker:
    port: int
    passwords: dict[str, str]

    def client(self, user: str | None, client_id: str, password: str | None = None) -> aiomqtt.Client:
        password = password or (self.passwords[user] if user else None)
        return aiomqtt.Client("127.0.0.1", self.port, username=user, password=password, identifier=client_id)


def free_test_port() -> int:
    for port in TEST_PORTS:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.skip(f"no free port in {TEST_PORTS}")


@pytest.fixture
async def deployed_broker(services: dict[str, Any], tmp_path: Path) -> AsyncIterator[Broker]:
    """Mosquitto as docker-compose.yml runs it: start.sh writes the password file (with mosquitto_passwd)
    and the ACL file, and the broker runs deploy/mosquitto/mosquitto.conf, its paths and port changed."""
    binary = mosquitto_binary()
    if shutil.which("mosquitto_passwd") is None:
        missing("mosquitto_passwd", "not installed (apt-get install mosquitto)")
    config, auth = tmp_path / "config", tmp_path / "auth"
    config.mkdir()
    shutil.copy(MOSQUITTO_START, config / MOSQUITTO_START.name)
    (config / MOSQUITTO_ACL.name).write_text(MOSQUITTO_ACL.read_text() + TEST_RULES)
    passwords = {**broker_users(services), OBSERVER: "observer-password"}
    subprocess.run(
        ["sh", str(config / MOSQUITTO_START.name), str(auth)],
        env={**os.environ, "PLYARENA_MQTT_USERS": " ".join(f"{u}:{p}" for u, p in passwords.items())},
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    passwords[HEALTH_USER] = (auth / "health.password").read_text().strip()
    port = free_test_port()
    lines = []
    for line in MOSQUITTO_CONF.read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == "listener":
            line = f"listener {port} 127.0.0.1"
        elif name in ("password_file", "acl_file"):
            line = f"{name} {auth / Path(value).name}"
        elif name == "persistence":
            line = "persistence false"
        elif name in ("persistence_location", "log_dest"):
            continue
        lines.append(line)
    lines.append(f"user {pwd.getpwuid(os.getuid()).pw_name}")  # (as root, stay root: the files are ours)
    (tmp_path / "mosquitto.conf").write_text("\n".join(lines) + "\n")
    with (tmp_path / "mosquitto.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            binary, "-c", str(tmp_path / "mosquitto.conf"), stdout=log, stderr=log
        )
    try:
        await wait_for_port(port)
        yield Broker(port, passwords)
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()


async def topics_until(client: aiomqtt.Client, marker: str) -> set[str]:
    """The topics of the messages ``client`` receives before one on ``marker``."""
    topics: set[str] = set()
    async with asyncio.timeout(5):
        async for message in client.messages:
            if message.topic.value == marker:
                return topics
            topics.add(message.topic.value)
    raise AssertionError("the connection ended")


async def test_the_broker_keeps_each_user_to_its_own_topics(
    deployed_broker: Broker, services: dict[str, Any]
) -> None:
    """Mosquitto drops a publish it does not allow, without a word: the observer, who reads every topic,
    sees which came; each reader sees which of the observer's messages reach it."""
    table = access_table(services)
    seen: dict[tuple[str, str], set[str]] = {}
    async with deployed_broker.client(OBSERVER, "observer") as observer:
        await observer.subscribe("#", qos=1)
        writers = {(case.user, case.client_id) for case in table if case.access == "write"}
        for user, client_id in sorted(writers):
            async with deployed_broker.client(user, client_id) as writer:
                for case in table:
                    if (case.user, case.client_id, case.access) == (user, client_id, "write"):
                        await writer.publish(case.topic, b"{}", qos=1)  # (acknowledged: handled)
            await observer.publish(f"plyarena-test/written/{user}", qos=1)
            written = await topics_until(observer, f"plyarena-test/written/{user}")
            seen.setdefault((user, "write"), set()).update(written)  # (a user may write as two clients)
        readers = {(case.user, case.client_id) for case in table if case.access == "read"}
        for user, client_id in sorted(readers):
            async with deployed_broker.client(user, f"reader-{client_id}") as reader:
                await reader.subscribe("#", qos=1)
                await reader.subscribe("$SYS/broker/uptime", qos=1)  # (retained: sent at once if allowed)
                for case in table:
                    if (case.user, case.access) == (user, "read") and case.topic[0] != "$":
                        await observer.publish(case.topic, b"{}", qos=1)
                await observer.publish(f"plyarena-test/{user}", qos=1)
                seen[user, "read"] = await topics_until(reader, f"plyarena-test/{user}")
    expected: dict[tuple[str, str], set[str]] = {key: set() for key in seen}
    for case in table:
        if case.allowed:
            expected[case.user, case.access].add(case.topic)
    assert seen == expected


async def test_the_broker_refuses_anonymous_clients_and_wrong_passwords(deployed_broker: Broker) -> None:
    for user, password in ((None, None), ("bots", "not-the-password"), (HEALTH_USER, "guessed")):
        with pytest.raises(aiomqtt.MqttError, match=r"[Nn]ot authori"):
            async with deployed_broker.client(user, "intruder", password):
                pass


async def test_the_server_bus_announces_its_instance_on_the_deployed_broker(
    deployed_broker: Broker, services: dict[str, Any]
) -> None:
    """The server's own client (MQTT 5, with its last will) under its compose user. Another user's client
    that asks for the server's client id is given its own user's (use_username_as_clientid): the server
    is not disconnected, so no one hears its last will say it went offline."""
    server = server_services(services)["server-a"]
    login = urlsplit(server.mqtt_url).netloc.rpartition("@")[0]
    fleet_user = BrokerAddress.parse(build_parser().parse_args(services["bots"]["command"]).mqtt).username
    status_topic = f"{TOPIC_ROOT}/instances/{server.instance_id}"
    async with deployed_broker.client(OBSERVER, "observer") as observer:
        await observer.subscribe(status_topic, qos=1)
        bus = MqttBus(
            f"mqtt://{login}@127.0.0.1:{deployed_broker.port}",
            client_id=f"plyarena-server-{server.instance_id}",
            status_topic=status_topic,
        )
        await bus.start()
        try:
            assert bus.connected
            async with asyncio.timeout(5):
                message = await anext(aiter(observer.messages))
            assert json.loads(message.payload)["online"] is True
            for client_id in (f"plyarena-server-{server.instance_id}", server.instance_id):
                async with deployed_broker.client(fleet_user, client_id):
                    await asyncio.sleep(0.5)
            with pytest.raises(TimeoutError):  # (no last will: still online)
                async with asyncio.timeout(1):
                    await anext(aiter(observer.messages))
            assert (bus.connected, bus.stats.connections) == (True, 1)
        finally:
            await bus.close()
        async with asyncio.timeout(5):
            message = await anext(aiter(observer.messages))
        assert json.loads(message.payload)["online"] is False
