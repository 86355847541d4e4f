"""Just enough of a JSON Schema validator to hold values to docs/protocol.schema.json.

It reads the keywords that msgspec writes (and ``plyarena schema`` keeps), and
refuses a schema with any other, so that a keyword it does not know cannot pass a
value unchecked. JSON types are told apart as JSON tells them: ``true`` is no
integer, ``1.0`` is no integer either (msgspec refuses it where an int goes).
"""

from __future__ import annotations

import re
from typing import Any

Schema = dict[str, Any]

ANNOTATIONS = frozenset({"title", "description", "default", "discriminator", "$schema", "x-protocol-version"})
"""Keywords that say something about a value but check nothing."""

_JSON_TYPES: dict[str, Any] = {
    "null": lambda value: value is None,
    "boolean": lambda value: isinstance(value, bool),
    "integer": lambda value: type(value) is int,
    "number": lambda value: type(value) in (int, float),
    "string": lambda value: isinstance(value, str),
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
}


class SchemaReader:
    """Checks values against the parts of one schema document, its ``$defs`` resolved by ``$ref``."""

    def __init__(self, document: Schema) -> None:
        self.document = document

    def resolve(self, schema: Schema) -> Schema:
        """``schema``, or the definition its ``$ref`` names."""
        while "$ref" in schema:
            schema = self.document["$defs"][schema["$ref"].removeprefix("#/$defs/")]
        return schema

    def accepts(self, value: Any, schema: Schema) -> bool:
        return not self.problems(value, schema)

    def problems(self, value: Any, schema: Schema, where: str = "$") -> list[str]:
        """What is wrong with ``value`` under ``schema``, each problem with its place (``$.engine.pv[1]``)."""
        schema = self.resolve(schema)
        unknown = set(schema) - ANNOTATIONS - _KEYWORDS
        if unknown:
            raise ValueError(f"{where}: keywords this reader does not check: {sorted(unknown)}")
        found: list[str] = []
        if "anyOf" in schema:
            found += self._alternatives_problems(value, schema["anyOf"], where)
        if "enum" in schema and not any(_same_json(value, option) for option in schema["enum"]):
            found.append(f"{where}: not one of {schema['enum']}")
        if "type" in schema:
            kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
            if not any(_JSON_TYPES[kind](value) for kind in kinds):
                return [*found, f"{where}: not of type {schema['type']}"]
        if isinstance(value, str):
            found += _string_problems(value, schema, where)
        elif type(value) in (int, float):
            if "minimum" in schema and value < schema["minimum"]:
                found.append(f"{where}: below {schema['minimum']}")
            if "maximum" in schema and value > schema["maximum"]:
                found.append(f"{where}: above {schema['maximum']}")
        elif isinstance(value, list):
            found += self._array_problems(value, schema, where)
        elif isinstance(value, dict):
            found += self._object_problems(value, schema, where)
        return found

    def _alternatives_problems(self, value: Any, options: list[Schema], where: str) -> list[str]:
        """Nothing if an option takes ``value``; else the problems of the one option of its JSON type (an
        object where an object or ``null`` goes), which say more than that no option takes it."""
        problems = [self.problems(value, option, where) for option in options]
        if any(not found for found in problems):
            return []
        mistyped = f"{where}: not of type"
        of_its_type = [found for found in problems if not any(p.startswith(mistyped) for p in found)]
        return of_its_type[0] if len(of_its_type) == 1 else [f"{where}: none of the alternatives"]

    def _array_problems(self, value: list[Any], schema: Schema, where: str) -> list[str]:
        found = []
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
            found.append(f"{where}: {len(value)} items")
        prefix = schema.get("prefixItems", [])
        for index, item in enumerate(value):
            place = f"{where}[{index}]"
            item_schema = prefix[index] if index < len(prefix) else schema.get("items", True)
            if item_schema is False:
                found.append(f"{place}: no item allowed here")
            elif item_schema is not True:
                found += self.problems(item, item_schema, place)
        return found

    def _object_problems(self, value: dict[str, Any], schema: Schema, where: str) -> list[str]:
        properties = schema.get("properties", {})
        found = [f"{where}: missing {name!r}" for name in schema.get("required", []) if name not in value]
        for name, item in value.items():
            if name in properties:
                found += self.problems(item, properties[name], f"{where}.{name}")
            elif schema.get("additionalProperties", True) is False:
                found.append(f"{where}: unknown field {name!r}")
        return found


_KEYWORDS = frozenset({
    "anyOf", "enum", "type", "minLength", "maxLength", "pattern", "minimum", "maximum", "items",
    "prefixItems", "minItems", "maxItems", "properties", "required", "additionalProperties",
})  # fmt: skip


def _same_json(value: Any, option: Any) -> bool:
    """Equal as JSON values are: ``true`` is not ``1``, nor ``0.0`` ``0``."""
    return type(value) is type(option) and value == option


def _string_problems(value: str, schema: Schema, where: str) -> list[str]:
    found = []
    if not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)):
        found.append(f"{where}: {len(value)} characters")
    if "pattern" in schema and re.search(_python_pattern(schema["pattern"]), value) is None:
        found.append(f"{where}: does not match {schema['pattern']}")
    return found


def _python_pattern(pattern: str) -> str:
    """An ECMA-262 pattern as Python reads it alike: its final ``$`` matches at the very end only."""
    return pattern[:-1] + r"\Z" if pattern.endswith("$") and not pattern.endswith(r"\$") else pattern
