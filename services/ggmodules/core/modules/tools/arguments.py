"""Checking a tool call's arguments against the subset of JSON schema the catalogue uses."""

from __future__ import annotations

import json
import re
from typing import Any

from ggmodules.core.errors import InvalidArgument
from ggmodules.core.modules.tools.catalog import Schema, ToolDefinition


def parse_arguments(tool: ToolDefinition, arguments_json: str) -> dict[str, Any]:
    try:
        args = json.loads(arguments_json or "{}")
    except json.JSONDecodeError as err:
        raise _bad(tool, "arguments_json", f"is not JSON ({err.msg})") from None
    problems: list[tuple[str, str]] = []
    _check(args, tool.parameters, "arguments", problems)
    if problems:
        raise InvalidArgument(
            f"arguments for {tool.name} do not fit its schema: " + "; ".join(f"{f} {d}" for f, d in problems),
            metadata={"tool": tool.name},
            violations=problems,
        )
    assert isinstance(args, dict)
    return args


def _check(value: Any, schema: Schema, path: str, problems: list[tuple[str, str]]) -> None:
    kind = schema.get("type")
    if kind == "object":
        if not isinstance(value, dict):
            problems.append((path, "must be an object"))
            return
        props: dict[str, Schema] = schema.get("properties", {})
        problems += [(f"{path}.{k}", "is required") for k in schema.get("required", []) if k not in value]
        if schema.get("additionalProperties") is False:
            problems += [(f"{path}.{k}", "is not an argument of this tool") for k in value if k not in props]
        for k, v in value.items():
            if k in props:
                _check(v, props[k], f"{path}.{k}", problems)
    elif kind == "array":
        if not isinstance(value, list):
            problems.append((path, "must be an array"))
            return
        if len(value) < schema.get("minItems", 0):
            problems.append((path, f"needs at least {schema['minItems']} item(s)"))
        for i, item in enumerate(value):
            _check(item, schema.get("items", {}), f"{path}[{i}]", problems)
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append((path, "must be an integer"))
        elif value < schema.get("minimum", value) or value > schema.get("maximum", value):
            problems.append((path, "is out of range"))
    elif kind == "string":
        if not isinstance(value, str):
            problems.append((path, "must be a string"))
        elif "enum" in schema and value not in schema["enum"]:
            problems.append((path, f"must be one of {', '.join(schema['enum'])}"))
        elif len(value) > schema.get("maxLength", len(value)):
            problems.append((path, f"is longer than {schema['maxLength']} characters"))
        elif "pattern" in schema and not re.fullmatch(schema["pattern"].strip("^$"), value):
            problems.append((path, f"must match {schema['pattern']}"))


def _bad(tool: ToolDefinition, field: str, what: str) -> InvalidArgument:
    return InvalidArgument(
        f"{field} for {tool.name} {what}",
        metadata={"tool": tool.name, "field": field},
        violations=[(field, what)],
    )
