"""docs/protocol.schema.json: made from server/protocol.py by ``plyarena schema``, true of what a real
server sends, and in agreement with the protocol's two other readers, the bots' own wire definitions
(bots/wire.py, written from docs/protocol.md) and the fuzzer's request schemas (tests/support)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.fixtures import FLEET_KEY, Connect
from support.fuzz_values import REQUEST_ID, SCHEMAS, RandomChoices, junk, request
from support.json_schema import Schema, SchemaReader
from support.play import open_match, play_moves

from bots import wire
from plyarena.cli import main
from plyarena.commands.schema import rendered
from server import protocol
from server.app import Server

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "docs" / "protocol.schema.json"
REGENERATE = "run `plyarena schema` to regenerate docs/protocol.schema.json"


@pytest.fixture(scope="module")
def reader() -> SchemaReader:
    return SchemaReader(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def by_type(reader: SchemaReader, union: str) -> dict[str, Schema]:
    """The definition of each message ``type`` of ``ClientMessage`` or ``ServerMessage``."""
    mapping = reader.document["$defs"][union]["discriminator"]["mapping"]
    return {tag: reader.resolve({"$ref": ref}) for tag, ref in mapping.items()}


# --------------------------------------------------------------------------- made from the Structs


def test_the_committed_schema_is_the_one_the_protocol_makes() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == rendered(), REGENERATE


def test_the_command_writes_the_schema_and_checks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "protocol.schema.json"
    assert main(["schema", "--output", str(output)]) == 0
    assert output.read_text(encoding="utf-8") == rendered()
    assert main(["schema", "--check", "--output", str(output)]) == 0
    output.write_text(rendered().replace('"maxLength": 64', '"maxLength": 65', 1), encoding="utf-8")
    capsys.readouterr()
    assert main(["schema", "--check", "--output", str(output)]) == 1
    assert "is stale" in capsys.readouterr().err
    assert main(["schema", "--check", "--output", str(tmp_path / "none.json")]) == 1, "a missing file"


def test_it_names_every_request_and_message_type(reader: SchemaReader) -> None:
    assert set(by_type(reader, "ClientMessage")) == set(protocol.REQUEST_TYPES)
    sent = {cls.__struct_config__.tag for cls in protocol.AnyServerMessage.__args__}
    assert set(by_type(reader, "ServerMessage")) == sent
    assert reader.document["x-protocol-version"] == protocol.PROTOCOL_VERSION == wire.PROTOCOL_VERSION


# --------------------------------------------------------------------------- true of the wire


async def test_every_message_a_real_server_sends_fits_the_schema(
    reader: SchemaReader, arena: Server, connect: Connect
) -> None:
    alice, bob = await connect.player(arena, "Alice"), await connect.player(arena, "Bob")
    fleet = await connect.player(arena, "fleet-1", bot=True, fleet_key=FLEET_KEY)
    sam = await connect.player(arena, "Sam")
    await alice.request("lobby.subscribe")
    asking = await alice.request("match.create", game="connect4", bot={"level": 3, "style": "alphabeta"})
    await fleet.request("bot.status", match_id=asking["match_id"], state="queued", reason="all busy")
    await alice.expect(type_="bot.status")
    state = await open_match(alice, bob, "tictactoe", time_control="1+0")
    match_id = state["match_id"]
    await sam.request("match.watch", match_id=match_id)
    await alice.request("chat", match_id=match_id, text="good luck")
    await alice.request("draw.offer", match_id=match_id)
    await bob.request("draw.decline", match_id=match_id)
    await bob.request("move", match_id=match_id, ply=0, move="a1")  # (not bob's turn: an error)
    await play_moves("tictactoe", (alice, bob), match_id, ["a1", "a2", "b1", "b2", "c1"])
    await sam.request("match.watch", match_id=match_id, log=state["log"], since=state["seq"])
    await alice.request("rematch.offer", match_id=match_id)
    await bob.request("rematch.accept", match_id=match_id)
    await alice.expect(type_="match.state", where=lambda message: message["match_id"] != match_id)
    await alice.request("lobby.unsubscribe")
    await bob.close()
    await alice.expect(type_="presence", connected=False)

    definitions = by_type(reader, "ServerMessage")
    received = [message for client in (alice, bob, fleet, sam) for message in client.received]
    for message in received:
        assert reader.problems(message, definitions[message["type"]]) == [], message
    seen = {message["type"] for message in received}
    assert seen >= {"welcome", "lobby.snapshot", "lobby.update", "bot.status", "match.state", "match.catchup",
                    "seated", "started", "moved", "chat", "draw.offered", "draw.declined", "ended",
                    "rematch.offered", "rematch.started", "presence", "error", "ok"}  # fmt: skip


def test_a_value_the_schema_refuses_is_named() -> None:
    reader = SchemaReader(json.loads(rendered()))
    move = by_type(reader, "ClientMessage")["move"]
    bad = {"type": "move", "match_id": "m", "ply": -1, "move": "4", "engine": {"pv": ["4", "e4 e5"]}, "x": 1}
    assert reader.problems(bad, move) == [
        "$.ply: below 0",
        "$.engine.pv[1]: does not match ^[A-Za-z0-9][A-Za-z0-9+#=*-]*$",
        "$: unknown field 'x'",
    ]
    assert reader.problems({"type": "move", "ply": True}, move)[:2] == [
        "$: missing 'match_id'",
        "$: missing 'move'",
    ]


# --------------------------------------------------------------------------- the fuzzer's requests


def test_the_fuzzers_requests_have_the_schemas_fields(reader: SchemaReader) -> None:
    requests = by_type(reader, "ClientMessage")
    for kind, fields in SCHEMAS.items():
        definition = requests[kind]
        assert set(fields) == set(definition["properties"]) - {"type", "id"}, kind
        required = {name for name, spec in fields.items() if spec.required}
        assert required == set(definition["required"]) - {"type"}, kind


def test_the_fuzzer_and_the_schema_accept_and_refuse_the_same_values(reader: SchemaReader) -> None:
    requests = by_type(reader, "ClientMessage")
    for seed in range(200):
        choices = RandomChoices(random.Random(seed))
        for kind, fields in SCHEMAS.items():
            definition = requests[kind]
            for name, spec in {"id": REQUEST_ID, **fields}.items():
                field = definition["properties"][name]
                for value in (spec.example(choices), spec.wrong(choices), junk(choices)):
                    assert spec.accepts(value) == reader.accepts(value, field), (kind, name, value)
            whole = request(choices, kind)
            assert reader.problems(whole, definition) == [], whole


# --------------------------------------------------------------------------- the bots' wire


def _bots_schemas() -> tuple[SchemaReader, dict[str, Schema], dict[str, Schema]]:
    """bots/wire.py's Structs as msgspec describes them: the requests bots send, the messages they read."""
    sends = [cls for cls in vars(wire).values() if isinstance(cls, type) and issubclass(cls, wire.Request)]
    sends.remove(wire.Request)
    reads = {**wire.MESSAGE_TYPES, **wire.EVENT_TYPES}
    schemas, components = msgspec.json.schema_components(
        [*sends, *reads.values()], ref_template="#/$defs/{name}"
    )
    bots = SchemaReader({"$defs": components})
    sent = {
        str(cls.__struct_config__.tag): bots.resolve(schema)
        for cls, schema in zip(sends, schemas[: len(sends)], strict=True)
    }
    read = {tag: bots.resolve(schema) for tag, schema in zip(reads, schemas[len(sends) :], strict=True)}
    return bots, sent, read


def test_what_the_bots_send_is_what_the_server_takes(reader: SchemaReader) -> None:
    bots, sent, _ = _bots_schemas()
    requests = by_type(reader, "ClientMessage")
    assert set(sent) <= set(requests)
    problems: list[str] = []
    for tag, schema in sent.items():
        _compare(
            Side(bots, schema), Side(reader, requests[tag]), bots_send=True, where=tag, problems=problems
        )
    assert problems == []


def test_what_the_server_sends_is_what_the_bots_read(reader: SchemaReader) -> None:
    bots, _, read = _bots_schemas()
    messages = by_type(reader, "ServerMessage")
    assert set(read) <= set(messages)
    problems: list[str] = []
    for tag, schema in read.items():
        _compare(
            Side(bots, schema), Side(reader, messages[tag]), bots_send=False, where=tag, problems=problems
        )
    assert problems == []


def test_the_bots_limits_are_the_schemas(reader: SchemaReader) -> None:
    requests = by_type(reader, "ClientMessage")
    assert requests["bot.status"]["properties"]["reason"]["maxLength"] == wire.MAX_BOT_STATUS_LENGTH
    engine = reader.resolve(requests["move"]["properties"]["engine"]["anyOf"][0])
    assert engine["properties"]["pv"]["maxItems"] == wire.MAX_PV_LENGTH


class Side:
    """A part of a schema document, with the document that resolves its references."""

    def __init__(self, reader: SchemaReader, schema: Schema) -> None:
        self.reader, self.schema = reader, reader.resolve(schema)

    def types(self) -> set[str]:
        """The JSON types a value may have here."""
        if "anyOf" in self.schema:
            return set().union(*(Side(self.reader, option).types() for option in self.schema["anyOf"]))
        if "enum" in self.schema:
            return {_json_type(value) for value in self.schema["enum"]}
        kinds = self.schema.get("type", list(_ALL_TYPES))
        kinds = set(kinds if isinstance(kinds, list) else [kinds])
        return kinds | {"integer"} if "number" in kinds else kinds

    def alternatives(self, kind: str) -> list[Side]:
        """Each alternative here of JSON type ``kind`` (an object, an array)."""
        if "anyOf" in self.schema:
            options = (Side(self.reader, option) for option in self.schema["anyOf"])
            return [alternative for option in options for alternative in option.alternatives(kind)]
        return [self] if self.schema.get("type") == kind else []

    def items(self) -> Side:
        """What an array here holds (a tuple's items as one alternative)."""
        prefix = self.schema.get("prefixItems")
        return Side(self.reader, {"anyOf": prefix} if prefix else self.schema.get("items", {}))


_ALL_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")


def _json_type(value: Any) -> str:
    return {type(None): "null", bool: "boolean", int: "integer", float: "number", str: "string"}[type(value)]


def _compare(bots: Side, server: Side, *, bots_send: bool, where: str, problems: list[str]) -> None:
    """Note in ``problems`` each way ``bots`` and ``server`` disagree about a value one sends the other:
    a type the sender may use that the receiver refuses, a field the bots use that the server does not
    have, or one the receiver needs and the sender may leave out."""
    sender, receiver = (bots, server) if bots_send else (server, bots)
    if not sender.types() <= receiver.types():
        problems.append(f"{where}: sent as {sorted(sender.types())}, read as {sorted(receiver.types())}")
    for bots_object in bots.alternatives("object"):
        for server_object in server.alternatives("object"):
            _compare_objects(bots_object, server_object, bots_send=bots_send, where=where, problems=problems)
    for bots_array in bots.alternatives("array"):
        for server_array in server.alternatives("array"):
            items = (bots_array.items(), server_array.items())
            _compare(*items, bots_send=bots_send, where=f"{where}[]", problems=problems)


def _compare_objects(bots: Side, server: Side, *, bots_send: bool, where: str, problems: list[str]) -> None:
    bots_fields, server_fields = bots.schema.get("properties", {}), server.schema.get("properties", {})
    for name in sorted(set(bots_fields) - set(server_fields)):
        problems.append(f"{where}.{name}: the bots use it, the server has no such field")
    needed, given = (server, bots) if bots_send else (bots, server)
    for name in sorted(set(needed.schema.get("required", [])) - set(given.schema.get("required", []))):
        problems.append(f"{where}.{name}: required by its reader, yet its sender may leave it out")
    for name in sorted(set(bots_fields) & set(server_fields)):
        fields = (Side(bots.reader, bots_fields[name]), Side(server.reader, server_fields[name]))
        _compare(*fields, bots_send=bots_send, where=f"{where}.{name}", problems=problems)
