"""Binding plans: what Registry asks ModuleStore to bind, kind by kind, when an instance opens.

- open (a root of profile P): fresh window, tasks and archive; memories by scope (`agent`: the profile's
  store); the run's board; the catalogue of P's skills directory.
- spawn (a subagent): as open, except `inherited` memories share the parent's store.
- fork (a copy of agent A, R17): window, tasks and archive forked; the board shared; skills in halves
  (same catalogue, read set copied); memories follow the declared scope (`instance` forks, others share).
ModuleStore applies the per-kind overrides (a board fork is a share, a window share is a fork).
"""

from __future__ import annotations

from collections.abc import Sequence

from ggmodules.core.kinds import Kind
from ggmodules.core.registry.profiles import ModuleSpec, Profile
from ggmodules.core.roster import Binding, BindPlan, RosterRow
from ggmodules.core.vocabulary import BindAction, Cause, MemoryScope, Origin

RUN_BOARD_KEY = "run/board"


def profile_memories_key(profile: str) -> str:
    return f"profile/{profile}/memories"


def skills_key(directory: str) -> str:
    return f"skills/{directory}"


def plan_open(profile: Profile, board_enabled: bool) -> BindPlan:
    bindings = tuple(_opening(kind, profile, board_enabled) for kind in Kind)
    return BindPlan(Cause.OPEN, profile.name, "", bindings)


def plan_spawn(
    profile: Profile, board_enabled: bool, parent_agent_id: str, parent_roster: Sequence[RosterRow]
) -> BindPlan:
    bindings = []
    for kind in Kind:
        binding = _opening(kind, profile, board_enabled)
        spec = profile.module(kind)
        parent = _row(parent_roster, kind)
        if (
            kind is Kind.MEMORIES
            and spec is not None
            and spec.scope is MemoryScope.INHERITED
            and parent is not None
            and parent.strategy is spec.strategy
        ):
            # A store under another strategy cannot be read under this one: the subagent starts its own.
            binding = _binding(spec, BindAction.SHARE, Origin.INHERITED, source_store_id=parent.store_id)
        bindings.append(binding)
    return BindPlan(Cause.SPAWN, profile.name, parent_agent_id, tuple(bindings))


def plan_fork(
    profile: Profile, board_enabled: bool, agent_id: str, roster: Sequence[RosterRow]
) -> BindPlan:
    bindings = []
    for kind in Kind:
        spec = profile.module(kind)
        source = _row(roster, kind)
        if kind is Kind.BOARD or spec is None or source is None:
            bindings.append(_opening(kind, profile, board_enabled))
        elif kind is Kind.SKILLS:
            bindings.append(
                _binding(
                    spec, BindAction.FORK, Origin.PROFILE, source_store_id=source.store_id,
                    named_key=skills_key(spec.skills_directory), read_set_source_agent_id=agent_id,
                )
            )
        elif kind is Kind.MEMORIES and spec.scope is not MemoryScope.INSTANCE:
            origin = Origin.PROFILE if spec.scope is MemoryScope.AGENT else Origin.INHERITED
            bindings.append(_binding(spec, BindAction.SHARE, origin, source_store_id=source.store_id))
        else:
            bindings.append(_binding(spec, BindAction.FORK, Origin.FORKED, source_store_id=source.store_id))
    return BindPlan(Cause.FORK, profile.name, agent_id, tuple(bindings))


def _opening(kind: Kind, profile: Profile, board_enabled: bool) -> Binding:
    """How a root instance gets `kind`."""
    if kind is Kind.BOARD:
        if not board_enabled:
            return Binding(kind, BindAction.DISABLED)
        return Binding(kind, BindAction.NAMED, Origin.RUN, named_key=RUN_BOARD_KEY, may_write=True)
    spec = profile.module(kind)
    if spec is None:
        return Binding(kind, BindAction.DISABLED)
    if kind is Kind.MEMORIES and spec.scope is MemoryScope.AGENT:
        return _binding(spec, BindAction.NAMED, Origin.PROFILE, named_key=profile_memories_key(profile.name))
    if kind is Kind.SKILLS:
        return _binding(spec, BindAction.NAMED, Origin.PROFILE, named_key=skills_key(spec.skills_directory))
    return _binding(spec, BindAction.CREATE, Origin.CREATED)


def _binding(
    spec: ModuleSpec,
    action: BindAction,
    origin: Origin,
    *,
    source_store_id: str = "",
    named_key: str = "",
    read_set_source_agent_id: str = "",
) -> Binding:
    return Binding(
        kind=spec.kind,
        action=action,
        origin=origin,
        source_store_id=source_store_id,
        named_key=named_key,
        may_write=spec.may_write,
        caps=spec.caps,
        strategy=spec.strategy,
        scope=spec.scope,
        skills_directory=spec.skills_directory,
        read_set_source_agent_id=read_set_source_agent_id,
    )


def _row(roster: Sequence[RosterRow], kind: Kind) -> RosterRow | None:
    return next((r for r in roster if r.kind is kind and r.enabled and r.store_id), None)
