"""Inputs to generated messages: profiles, FSMs, words, message lists. Pure functions."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import grpc

from ggmodules.common.v1 import common_pb2, module_pb2
from ggmodules.modulestore.v1 import modulestore_pb2
from ggmodules.registry.v1 import registry_pb2
from ggmodules.sdk.errors import GGModulesError, InvalidFieldError, UnknownKindError
from ggmodules.sdk.profiles import Capability, Fsm, Memories, Profile, Skills
from ggmodules.sdk.words import (
    IssueStatus,
    Kind,
    MemoryScope,
    MemoryStrategy,
    SearchMode,
    TaskStatus,
    Word,
)

W = TypeVar("W", bound=Word)
# (role, content)
MessageInput = tuple[str, str]


def word(cls: type[W], value: W | str, field: str) -> W:
    """The member a word names, or the refusal the service would give, raised before any call.

    Used only where the contract carries an enum number, which cannot carry a word the SDK does not know.
    Kind words inside profiles and FSM edges travel as strings and are judged by the service (R1)."""
    try:
        return cls.parse(value)
    except ValueError as err:
        error_cls: type[GGModulesError] = UnknownKindError if cls is Kind else InvalidFieldError
        raise error_cls(
            grpc.StatusCode.INVALID_ARGUMENT, error_cls.REASON, f"{field}: {err}", {"field": field,
                                                                                     "value": str(value)}
        ) from None


def kind(value: Kind | str | None) -> common_pb2.Kind.ValueType:
    """A kind filter: None (every kind) is UNSPECIFIED."""
    return common_pb2.Kind.ValueType(0 if value is None else word(Kind, value, "kind").number)


def search_mode(value: SearchMode | str) -> modulestore_pb2.SearchMode.ValueType:
    return modulestore_pb2.SearchMode.ValueType(word(SearchMode, value, "mode").number)


def task_status(value: TaskStatus | str | None) -> module_pb2.TaskStatus.ValueType:
    """None leaves the status unchanged (UNSPECIFIED)."""
    return module_pb2.TaskStatus.ValueType(0 if value is None else word(TaskStatus, value, "status").number)


def issue_status(value: IssueStatus | str | None) -> module_pb2.IssueStatus.ValueType:
    """None leaves the status unchanged (UNSPECIFIED)."""
    return module_pb2.IssueStatus.ValueType(0 if value is None else word(IssueStatus, value, "status").number)


def capability(setting: Capability | bool, field: str) -> registry_pb2.ModuleConfig:
    if isinstance(setting, bool):
        return registry_pb2.ModuleConfig(enabled=setting)
    config = registry_pb2.ModuleConfig(
        enabled=True,
        read_only=setting.read_only,
        caps=common_pb2.Caps(max_items=setting.max_items, max_bytes=setting.max_bytes),
    )
    if isinstance(setting, Memories):
        strategy = word(MemoryStrategy, setting.strategy, f"{field}.strategy")
        scope = word(MemoryScope, setting.scope, f"{field}.scope")
        config.strategy = common_pb2.MemoryStrategy.ValueType(strategy.number)
        config.scope = common_pb2.MemoryScope.ValueType(scope.number)
    if isinstance(setting, Skills):
        config.skills_directory = setting.directory
    return config


def profile(p: Profile) -> registry_pb2.Profile:
    modules = {kind: capability(setting, f"profiles[{p.name}].{kind}")
               for kind, setting in p.capabilities().items()}
    return registry_pb2.Profile(name=p.name, modules=modules)


def fsm(f: Fsm) -> registry_pb2.FsmDefinition:
    return registry_pb2.FsmDefinition(
        initial=f.initial,
        states=[registry_pb2.FsmState(name=name, profile=prof) for name, prof in f.states.items()],
        edges=[registry_pb2.FsmEdge(**{"from": e.source}, to=e.target, carry=list(e.carry)) for e in f.edges],
    )


def messages(items: Iterable[MessageInput]) -> list[modulestore_pb2.MessageInput]:
    return [modulestore_pb2.MessageInput(role=role, content=content) for role, content in items]


def arguments_json(arguments: Mapping[str, Any] | str) -> str:
    """Tool arguments as the JSON object text the service expects (a string is sent as it is)."""
    return arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
