"""Checking a tool call's arguments against the subset of JSON schema the catalogue uses.

`arguments_json` is bounded before it is believed: at most MAX_ARGUMENTS_BYTES of UTF-8 (room for the
largest texts a tool takes, escaped), nested at most MAX_ARGUMENTS_DEPTH arrays or objects deep (the
catalogue's schemas go three deep). Beyond either it is refused INVALID_ARGUMENT, as malformed JSON is.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ggmodules.core.errors import InvalidArgument, Reason
from ggmodules.core.modules.limits import MAX_TEXT_BYTES
from ggmodules.core.modules.tools.catalog import Schema, ToolDefinition

MAX_ARGUMENTS_BYTES = 8 * MAX_TEXT_BYTES
MAX_ARGUMENTS_DEPTH = 32
INT64_MAX = 2**63 - 1  # integers travel on as int64 (task ids, ...)


def parse_arguments(tool: ToolDefinition, arguments_json: str) -> dict[str, Any]:
    if len(arguments_json) * 4 > MAX_ARGUMENTS_BYTES and len(arguments_json.encode()) > MAX_ARGUMENTS_BYTES:
        raise InvalidArgument(
            f"arguments_json for {tool.name} is {len(arguments_json.encode())} bytes; the limit is "
            f"{MAX_ARGUMENTS_BYTES} bytes",
            reason=Reason.TOO_LARGE,
            metadata={"tool": tool.name, "field": "arguments_json", "limit": str(MAX_ARGUMENTS_BYTES)},
            violations=[("arguments_json", f"larger than {MAX_ARGUMENTS_BYTES} bytes")],
        )
    try:
        args = json.loads(arguments_json or "{}")
    except json.JSONDecodeError as err:
        raise _bad(tool, "arguments_json", f"is not JSON ({err.msg})") from None
    except ValueError as err:  # e.g. an integer of more digits than Python converts
        raise _bad(tool, "arguments_json", f"is not JSON this service reads ({str(err)[:120]})") from None
    except RecursionError:  # the decoder gives up nesting long before the JSON ends
        args = None
        depth = MAX_ARGUMENTS_DEPTH + 1
    else:
        depth = _depth(args)
    if depth > MAX_ARGUMENTS_DEPTH:
        raise _bad(tool, "arguments_json", f"nests arrays or objects more than {MAX_ARGUMENTS_DEPTH} deep")
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
        elif value < schema.get("minimum", value) or value > schema.get("maximum", INT64_MAX):
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


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in a decoded JSON value (0 for a scalar), without recursion."""
    deepest, level = 0, [(value, 1)]
    while level:
        item, depth = level.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_ARGUMENTS_DEPTH:
            return deepest
        level.extend((child, depth + 1) for child in children)
    return deepest


def _bad(tool: ToolDefinition, field: str, what: str) -> InvalidArgument:
    return InvalidArgument(
        f"{field} for {tool.name} {what}",
        metadata={"tool": tool.name, "field": field},
        violations=[(field, what)],
    )
