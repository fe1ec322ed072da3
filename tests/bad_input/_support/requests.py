"""Hypothesis strategies for any request message, built from its generated descriptor.

Half the requests are wild: every field may be left out or set, strings are junk (NUL and control
characters, unicode, huge) or a real name, integers range over their whole type, enums take unknown numbers
too, repeated fields and nested messages go a few levels deep. The other half are tame: the fields that
name something carry one of the names a seeded run really has (`Pools`), other texts are plain, numbers
small; those get past the first check and reach the services' deeper paths.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass
from hypothesis import strategies as st

F = FieldDescriptor
MAX_DEPTH = 3

HUGE = (
    "x" * 3_000,
    "é" * 10_000,
    "\U0001f600" * 5_000,
    "a" * 300_000,
    "[" * 50_000,
    "{\"a\":" * 20_000,
)
junk_text = st.one_of(
    st.text(max_size=20),
    st.text(st.characters(codec="utf-8", categories=("Cc", "Cf", "Zl", "Zp", "Zs", "So")), max_size=10),
    st.sampled_from(("", " ", "\x00", "a\x00b", "\n", "\u2028", "-1", "0", "ﬀ", "../../etc")),
    st.sampled_from(HUGE),
    st.integers(129, 20_000).map(lambda n: "z" * n),
)
plain_text = st.text(st.characters(codec="ascii", categories=("L", "N", "Zs", "P")), max_size=20)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
arguments_json = st.one_of(
    json_values.map(json.dumps),
    st.fixed_dictionaries(
        {},
        optional={
            "title": st.text(max_size=20), "text": st.text(max_size=20), "name": st.text(max_size=20),
            "task_id": st.integers(), "blocked_by": st.lists(st.integers(), max_size=3),
            "status": st.sampled_from(("open", "done", "nope")), "query": st.text(max_size=5),
            "issue_id": st.text(max_size=5), "prefix": st.text(max_size=5), "body": st.text(max_size=20),
        },
    ).map(json.dumps),
    junk_text,
)
tame_arguments_json = st.fixed_dictionaries(
    {},
    optional={
        "title": plain_text, "text": plain_text, "name": plain_text, "task_id": st.integers(1, 3),
        "status": st.sampled_from(("open", "done")), "query": plain_text, "prefix": st.just("BUG"),
    },
).map(json.dumps)
INTEGER_RANGES = {
    F.TYPE_INT32: (-(2**31), 2**31 - 1), F.TYPE_SINT32: (-(2**31), 2**31 - 1),
    F.TYPE_SFIXED32: (-(2**31), 2**31 - 1), F.TYPE_INT64: (-(2**63), 2**63 - 1),
    F.TYPE_SINT64: (-(2**63), 2**63 - 1), F.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    F.TYPE_UINT32: (0, 2**32 - 1), F.TYPE_FIXED32: (0, 2**32 - 1),
    F.TYPE_UINT64: (0, 2**64 - 1), F.TYPE_FIXED64: (0, 2**64 - 1),
}


@dataclass
class Pools:
    """Real names by field name (`agent_id`, `store_id`, `profile`, ...), drawn more often than junk."""

    by_field: dict[str, list[str]] = field(default_factory=dict)

    def names(self, name: str) -> Sequence[str]:
        return self.by_field.get(name, ())


def _integers(kind: int, wild: bool) -> st.SearchStrategy[int]:
    low, high = INTEGER_RANGES[kind]
    if not wild:
        return st.integers(max(low, 0), 5)
    edges = [n for n in (low, high, -1, 2**31 - 1, 2**31, 2**32, 2**53) if low <= n <= high]
    return st.one_of(st.integers(-2, 5).filter(lambda n: low <= n <= high), st.sampled_from(edges),
                     st.integers(low, high))


def _scalar(f: FieldDescriptor, pools: Pools, wild: bool) -> st.SearchStrategy[Any]:
    if f.type == F.TYPE_STRING:
        if f.name == "arguments_json":
            return arguments_json if wild else tame_arguments_json
        real = pools.names(f.name)
        if not wild:
            return st.sampled_from(real) if real else plain_text
        return st.one_of(st.sampled_from(real), junk_text) if real else st.one_of(plain_text, junk_text)
    if f.type == F.TYPE_BYTES:
        return st.binary(max_size=64)
    if f.type == F.TYPE_BOOL:
        return st.booleans()
    if f.type in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return st.floats(width=32 if f.type == F.TYPE_FLOAT else 64)
    if f.type == F.TYPE_ENUM:
        known = [v.number for v in f.enum_type.values]
        if not wild:
            return st.sampled_from(known)
        return st.one_of(st.sampled_from(known), st.integers(-(2**31), 2**31 - 1))
    return _integers(f.type, wild)


def message_strategy(
    descriptor: Descriptor, pools: Pools, *, wild: bool, depth: int = 0
) -> st.SearchStrategy[Message]:
    """Wild: anything, junk and all. Tame: what a client could plausibly send, every named field set to a
    real name (the requests that get past the first check and exercise what lies behind it)."""
    cls = GetMessageClass(descriptor)
    fields: dict[str, st.SearchStrategy[Any]] = {}
    named: dict[str, st.SearchStrategy[Any]] = {}
    for f in descriptor.fields:
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            key_f, value_f = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            values = _value(value_f, pools, wild, depth)
            if values is not None:
                fields[f.name] = st.dictionaries(_scalar(key_f, pools, wild), values, max_size=3)
            continue
        one = _value(f, pools, wild, depth)
        if one is None:
            continue
        if f.is_repeated:
            fields[f.name] = st.lists(one, max_size=3)
        elif not wild and f.message_type is None and pools.names(f.name):
            named[f.name] = one
        else:
            fields[f.name] = one
    return st.fixed_dictionaries(named, optional=fields).map(lambda values: _build(cls, values))


def _value(f: FieldDescriptor, pools: Pools, wild: bool, depth: int) -> st.SearchStrategy[Any] | None:
    if f.message_type is None:
        return _scalar(f, pools, wild)
    if depth >= MAX_DEPTH:
        return None
    return message_strategy(f.message_type, pools, wild=wild, depth=depth + 1)


def _build(cls: Callable[..., Message], values: Mapping[str, Any]) -> Message:
    message = cls()
    for name, value in values.items():
        target = getattr(message, name)
        if isinstance(value, Message):
            target.CopyFrom(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, Message):
                    target[k].CopyFrom(v)
                else:
                    target[k] = v
        elif isinstance(value, list):
            target.extend(value)
        else:
            setattr(message, name, value)
    return message


def requests(descriptor: Descriptor, pools: Pools) -> st.SearchStrategy[Message]:
    """Requests of one type, tame and wild alike."""
    return st.one_of(
        message_strategy(descriptor, pools, wild=False), message_strategy(descriptor, pools, wild=True)
    )
