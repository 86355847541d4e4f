"""``plyarena schema [--output FILE] [--check]``: the JSON Schema of protocol v1, from server/protocol.py.

The schema (JSON Schema 2020-12) is what msgspec derives from the Structs the
server decodes requests and encodes its messages with, so it cannot drift from
the server: ``$defs/ClientMessage`` is every request, ``$defs/ServerMessage``
every message the server sends, each told apart by ``type``. Two changes make it
portable: JSON Schema's patterns are ECMA-262 regular expressions, so Python's
``\\A`` and ``\\Z`` anchors are written ``^`` and ``$`` (which ECMA-262 anchors at
the ends of the text only), and the ``$defs`` are sorted so the file changes only
when the protocol does. docs/protocol.md describes the messages for people.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import msgspec

from plyarena.options import CommandError
from server.protocol import PROTOCOL_VERSION, AnyServerMessage, ClientMessage

HELP = "write the JSON Schema of every protocol message (docs/protocol.schema.json), or --check it is current"
DEFAULT_OUTPUT = Path(__file__).resolve().parents[2] / "docs" / "protocol.schema.json"
"""The repository's schema file, wherever the command runs from."""
REF_TEMPLATE = "#/$defs/{name}"

_PYTHON_ANCHORS = re.compile(r"\A\\A|\\Z\Z")
"""A ``\\A`` that opens a pattern or a ``\\Z`` that closes it."""


def protocol_schema() -> dict[str, Any]:
    """The schema document: every message either way, and the parts they are made of."""
    (client, server), components = msgspec.json.schema_components(
        (ClientMessage, AnyServerMessage), ref_template=REF_TEMPLATE
    )
    unions = {
        "ClientMessage": {
            "title": "ClientMessage",
            "description": "A request, from a client (a browser, a bot) to the server.",
            **client,
        },
        "ServerMessage": {
            "title": "ServerMessage",
            "description": "A message from the server: a reply (it echoes the request's id), or news.",
            **server,
        },
    }
    assert not unions.keys() & components.keys(), "a Struct is named like a union of messages"
    definitions = {name: _portable(components[name]) for name in sorted(components)}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Ply Arena protocol v{PROTOCOL_VERSION}",
        "description": (
            "Every WebSocket text frame holds one JSON object: a ClientMessage from client to server, a "
            "ServerMessage from server to client. LobbyEntry is also the payload of the MQTT lobby topics. "
            "Generated from server/protocol.py by `plyarena schema`; docs/protocol.md explains the rules."
        ),
        "x-protocol-version": PROTOCOL_VERSION,
        "anyOf": [{"$ref": REF_TEMPLATE.format(name=name)} for name in unions],
        "$defs": {**unions, **definitions},
    }


def _portable(fragment: Any) -> Any:
    """``fragment`` with each ``pattern`` anchored as ECMA-262 reads it (see the module's docstring)."""
    if isinstance(fragment, dict):
        return {
            key: _ecma_pattern(value) if key == "pattern" else _portable(value)
            for key, value in fragment.items()
        }
    if isinstance(fragment, list):
        return [_portable(item) for item in fragment]
    return fragment


def _ecma_pattern(pattern: str) -> str:
    return _PYTHON_ANCHORS.sub(lambda anchor: "^" if anchor.group() == "\\A" else "$", pattern)


def rendered() -> str:
    """The schema as the text of docs/protocol.schema.json."""
    return json.dumps(protocol_schema(), indent=2, ensure_ascii=False) + "\n"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output",
        type=Path,
        default=DEFAULT_OUTPUT,
        metavar="FILE",
        help="where to write it (default: docs/protocol.schema.json in the repository)",
    )
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if the file is not what would be written"
    )


def run(args: argparse.Namespace) -> int:
    text = rendered()
    output: Path = args.output
    if args.check:
        try:
            current = output.read_text(encoding="utf-8")
        except OSError as error:
            raise CommandError(f"cannot read {output}: {error.strerror}") from None
        if current != text:
            raise CommandError(f"{output} is stale: run `plyarena schema --output {output}`")
        print(f"{output} is current")
        return 0
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as error:
        raise CommandError(f"cannot write {output}: {error.strerror}") from None
    print(f"wrote {output}")
    return 0
