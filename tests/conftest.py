"""Shared fixtures: real services where the machine has them.

A test that needs PostgreSQL, Mosquitto, Chromium, Stockfish, docker-compose or Pascal Pons' Connect Four
test sets skips, saying why, when the service is missing; with ``PLYARENA_REQUIRE_SERVICES=1`` (or
``PLYARENA_REQUIRE_BROWSER=1`` for Chromium, ``PLYARENA_REQUIRE_PONS_SETS=1`` for Pons' sets), as CI
sets, it fails instead (:func:`support.services.missing`).
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest
from support.pons import pons_sets_directory
from support.services import SERVICES_REQUIRED, missing

POSTGRES_HOST, POSTGRES_PORT = "127.0.0.1", 5432
MQTT_HOST, MQTT_PORT = "127.0.0.1", 1883
CHROMIUM = "/usr/bin/chromium"
STOCKFISH = "/usr/games/stockfish"
BROWSER_REQUIRED = "PLYARENA_REQUIRE_BROWSER"

# Servers and clients over real sockets, for end-to-end tests; a server, a bot fleet and Chromium per module
# of browser tests.
pytest_plugins = ["support.fixtures", "support.web_fixtures"]


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """URL of the local PostgreSQL test database."""
    if not _port_open(POSTGRES_HOST, POSTGRES_PORT):
        missing("PostgreSQL", f"nothing listens on {POSTGRES_HOST}:{POSTGRES_PORT}", SERVICES_REQUIRED)
    return f"postgresql+asyncpg://postgres@{POSTGRES_HOST}:{POSTGRES_PORT}/test"


@pytest.fixture(scope="session")
def mqtt_url() -> str:
    """URL of the local Mosquitto broker."""
    if not _port_open(MQTT_HOST, MQTT_PORT):
        missing("Mosquitto", f"nothing listens on {MQTT_HOST}:{MQTT_PORT}", SERVICES_REQUIRED)
    return f"mqtt://{MQTT_HOST}:{MQTT_PORT}"


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Path of Debian's Chromium, for Playwright."""
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        missing("Chromium", f"{CHROMIUM} does not exist (apt-get install chromium)", BROWSER_REQUIRED)
    return CHROMIUM if os.path.exists(CHROMIUM) else str(shutil.which("chromium"))


@pytest.fixture(scope="session")
def stockfish_path() -> str:
    """Path of Debian's Stockfish, an outside UCI engine for the chess bots (apt-get install stockfish)."""
    found = shutil.which("stockfish") or (STOCKFISH if os.path.exists(STOCKFISH) else None)
    if found is None:
        missing("Stockfish", f"{STOCKFISH} does not exist (apt-get install stockfish)", SERVICES_REQUIRED)
    assert found is not None
    return found


@pytest.fixture(scope="session")
def docker_compose() -> str:
    """Path of Debian's docker-compose (v1), which validates a compose file without a Docker engine."""
    executable = shutil.which("docker-compose")
    if executable is None:
        missing("docker-compose", "not installed (apt-get install docker-compose)", SERVICES_REQUIRED)
    assert executable is not None
    return executable


@pytest.fixture(scope="session")
def pons_sets() -> Path:
    """The directory of Pascal Pons' Connect Four test sets, named by ``PLYARENA_PONS_SETS``."""
    return pons_sets_directory()
