"""The deployment files agree with each other and with the real command line.

docker-compose.yml is read with PyYAML, and each service's command is parsed by
the real ``plyarena`` argument parser, so a renamed flag breaks this test, not a
deployment. Debian's ``docker-compose config`` checks the file as well where it
is installed (``apt-get install docker-compose``); CI need not have it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from plyarena.cli import build_parser
from plyarena.commands.bots import fleet_config
from plyarena.commands.serve import config_from
from server.storage.engine import async_url

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
MOSQUITTO_CONF = ROOT / "deploy" / "mosquitto" / "mosquitto.conf"
HEALTHY = {"condition": "service_healthy"}
DATA_DIR = "/data"
"""The image's working directory and volume, owned by the user it runs as."""


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))["services"]


def health_test(service: dict[str, Any]) -> str:
    test = service["healthcheck"]["test"]
    assert test[0] in ("CMD", "CMD-SHELL"), test
    return " ".join(test[1:])


def test_every_service_is_there_with_health_checks_and_starts_in_order(services: dict[str, Any]) -> None:
    assert set(services) == {"postgres", "mosquitto", "server", "bots"}
    assert "pg_isready" in health_test(services["postgres"])
    assert re.search(r"mosquitto_sub .*-t \$\$SYS/# .*-C 1", health_test(services["mosquitto"]))
    assert "http://127.0.0.1:8765/healthz" in health_test(services["server"])
    assert services["server"]["depends_on"] == {"postgres": HEALTHY, "mosquitto": HEALTHY}
    assert services["bots"]["depends_on"] == {"server": HEALTHY}
    assert services["server"]["ports"] == ["8765:8765"]
    assert services["server"]["build"] == services["bots"]["build"] == "."


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


def test_the_server_runs_plyarena_serve_on_postgresql_and_mosquitto(services: dict[str, Any]) -> None:
    args = build_parser().parse_args(services["server"]["command"])
    assert args.command == "serve"
    assert (args.host, args.port) == ("0.0.0.0", 8765)
    database = async_url(args.db)
    postgres = services["postgres"]["environment"]
    assert database.drivername == "postgresql+asyncpg"
    assert (database.host, database.port) == ("postgres", 5432)
    assert (database.username, database.password, database.database) == (
        postgres["POSTGRES_USER"], postgres["POSTGRES_PASSWORD"], postgres["POSTGRES_DB"],
    )  # fmt: skip
    assert args.mqtt == "mqtt://mosquitto:1883"
    config = config_from(args)
    assert config.ws_url == "ws://server:8765/ws"  # what its lobby entries tell fleets on the network
    assert "http://localhost:8765" in (config.allowed_origins or ())


def test_the_fleet_runs_plyarena_bots_against_that_server(services: dict[str, Any]) -> None:
    server = config_from(build_parser().parse_args(services["server"]["command"]))
    args = build_parser().parse_args(services["bots"]["command"])
    assert args.command == "bots"
    assert args.server == [server.ws_url]
    assert args.mqtt == server.mqtt_url
    assert fleet_config(args).max_games == args.max_games
    volume = {
        target: source for source, target in (mount.split(":") for mount in services["bots"]["volumes"])
    }
    assert args.state.parent == Path(DATA_DIR) and volume[DATA_DIR] == "fleet-state", (
        "the bots' tokens outlive the container, so a restarted fleet plays on in its games"
    )


def test_mosquitto_takes_anonymous_clients_on_1883() -> None:
    settings = [line.split() for line in MOSQUITTO_CONF.read_text().splitlines() if line and line[0] != "#"]
    assert ["listener", "1883"] in settings
    assert ["allow_anonymous", "true"] in settings


def test_the_image_installs_the_project_beside_its_migrations() -> None:
    lines = [line.split() for line in DOCKERFILE.read_text().splitlines() if line and line[0] != "#"]
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
    } <= sources
    for source in sources:
        assert (ROOT / source).exists(), source
    workdirs = [arguments[0] for op, arguments in instructions if op == "WORKDIR"]
    assert workdirs[0] == "/app"  # sources and migrations together, so server/storage/migrate.py finds them
    install = next(arguments for op, arguments in instructions if op == "RUN")
    assert install[:3] == ["pip", "install", "-e"], install  # in place: the package stays beside migrations/
    assert ("ENTRYPOINT", ['["plyarena"]']) in instructions
    assert ("VOLUME", [f'["{DATA_DIR}"]']) in instructions and workdirs[-1] == DATA_DIR
    assert f"mkdir {DATA_DIR} && chown arena {DATA_DIR}" in DOCKERFILE.read_text(), "the volume is the user's"


def test_docker_compose_accepts_the_file(docker_compose: str) -> None:
    result = subprocess.run(
        [docker_compose, "-f", str(COMPOSE), "config", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
