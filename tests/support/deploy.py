"""docker-compose.yml as the deployment tests read it: its variables filled in as docker-compose fills
them, and its server instances' commands parsed by the real ``plyarena`` argument parser."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from plyarena.cli import build_parser
from plyarena.commands.serve import config_from
from server.config import ServerConfig

ROOT = Path(__file__).resolve().parent.parent.parent
COMPOSE = ROOT / "docker-compose.yml"
HAPROXY_CFG = ROOT / "deploy" / "haproxy" / "haproxy.cfg"
FRONT_DOOR = "frontdoor"
"""The compose service of the load balancer in front of the server instances."""

_COMPOSE_VARIABLE = re.compile(r"\$(?:\$|\{(\w+)(?::-([^}]*))?\})")


def compose_file(environ: Mapping[str, str]) -> dict[str, Any]:
    """docker-compose.yml as docker-compose reads it with ``environ``: ``${NAME:-default}`` is the
    variable unless it is unset or empty, ``$$`` a dollar sign."""

    def value(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return environ.get(match.group(1)) or match.group(2) or ""

    text = _COMPOSE_VARIABLE.sub(value, COMPOSE.read_text(encoding="utf-8"))
    assert "${" not in text, "a variable of a form compose_file does not fill in"
    return yaml.safe_load(text)


def server_services(services: dict[str, Any]) -> dict[str, ServerConfig]:
    """The services that run ``plyarena serve``, each with the configuration its command gives."""
    return {
        name: config_from(build_parser().parse_args(service["command"]))
        for name, service in services.items()
        if service.get("command", [None])[0] == "serve"
    }
