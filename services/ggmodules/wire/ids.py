"""Finds every id in a request message, at any depth, and holds it to `ggmodules.core.ids`.

Which fields are ids is read from the field names in the generated descriptors (see core/ids.py), so an
RPC added later is covered without a line here. The call interceptor runs this on every request of every
service before its handler, i.e. before any SQL. It is on every call's path, so each message type is
planned once: the id fields to read, and the message fields (plain, in a oneof, repeated, map values) that
lead to more of them; a message type without ids below it costs one dictionary lookup.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from ggmodules.core.errors import Reason
from ggmodules.core.ids import MAX_ID_CHARS, MAX_PAGE_TOKEN_CHARS, MAX_REQUEST_ID_CHARS, check_id

ID_NAMES = frozenset({"profile", "fsm_state", "to_state", "named_key"})


@dataclass(frozen=True, slots=True)
class _Rule:
    limit: int
    reason: Reason = Reason.INVALID_FIELD


def _rule(field: FieldDescriptor) -> _Rule | None:
    if field.type != FieldDescriptor.TYPE_STRING:
        return None
    if field.name == "request_id":
        return _Rule(MAX_REQUEST_ID_CHARS)
    if field.name == "page_token":
        return _Rule(MAX_PAGE_TOKEN_CHARS, Reason.INVALID_PAGE_TOKEN)
    if field.name.endswith("_id") or field.name in ID_NAMES:
        return _Rule(MAX_ID_CHARS)
    return None


@dataclass(frozen=True, slots=True)
class _Plan:
    ids: tuple[tuple[str, _Rule], ...] = ()
    repeated_ids: tuple[tuple[str, _Rule], ...] = ()
    singular: tuple[str, ...] = ()  # message fields outside any oneof
    oneofs: tuple[tuple[str, frozenset[str]], ...] = ()  # oneof name, its members leading to ids
    repeated: tuple[str, ...] = ()
    maps: tuple[str, ...] = ()  # maps whose message values lead to ids

    @property
    def empty(self) -> bool:
        return self == _EMPTY


_PLANS: dict[str, _Plan] = {}
_EMPTY = _Plan()


def _plan(descriptor: Descriptor) -> _Plan:
    plan = _PLANS.get(descriptor.full_name)
    if plan is not None:
        return plan
    _PLANS[descriptor.full_name] = _EMPTY  # a recursive type meets itself as empty while it is planned
    ids: list[tuple[str, _Rule]] = []
    repeated_ids: list[tuple[str, _Rule]] = []
    singular: list[str] = []
    repeated: list[str] = []
    maps: list[str] = []
    oneofs: dict[str, set[str]] = {}
    for f in descriptor.fields:
        if f.message_type is None:
            if (rule := _rule(f)) is not None:
                (repeated_ids if f.is_repeated else ids).append((f.name, rule))
        elif f.message_type.GetOptions().map_entry:
            value = f.message_type.fields_by_name["value"].message_type
            if value is not None and not _plan(value).empty:
                maps.append(f.name)
        elif not _plan(f.message_type).empty:
            if f.is_repeated:
                repeated.append(f.name)
            elif f.containing_oneof is not None:
                oneofs.setdefault(f.containing_oneof.name, set()).add(f.name)
            else:
                singular.append(f.name)
    plan = _Plan(
        tuple(ids), tuple(repeated_ids), tuple(singular),
        tuple((name, frozenset(members)) for name, members in oneofs.items()), tuple(repeated), tuple(maps),
    )
    _PLANS[descriptor.full_name] = plan
    return plan


_BY_TYPE: dict[type, _Plan] = {}


def check_ids(message: Message, path: str = "") -> None:
    """Raises InvalidArgument for the first id that breaks the rule, naming its path (e.g.
    `bindings[2].source_store_id`)."""
    plan = _BY_TYPE.get(type(message))
    if plan is None:
        plan = _BY_TYPE[type(message)] = _plan(message.DESCRIPTOR)  # type: ignore[arg-type]
    for name, rule in plan.ids:
        value = getattr(message, name)
        if len(value) > rule.limit or not value.isprintable():
            check_id(f"{path}{name}", value, limit=rule.limit, reason=rule.reason)
    for name, rule in plan.repeated_ids:
        for i, value in enumerate(getattr(message, name)):
            check_id(f"{path}{name}[{i}]", value, limit=rule.limit, reason=rule.reason)
    for name in plan.singular:
        if message.HasField(name):
            check_ids(getattr(message, name), f"{path}{name}.")
    for oneof, members in plan.oneofs:
        chosen = message.WhichOneof(oneof)
        if chosen in members:
            check_ids(getattr(message, chosen), f"{path}{chosen}.")
    for name in plan.repeated:
        for i, item in enumerate(getattr(message, name)):
            check_ids(item, f"{path}{name}[{i}].")
    for name in plan.maps:
        for i, item in enumerate(getattr(message, name).values()):
            check_ids(item, f"{path}{name}[{i}].")
