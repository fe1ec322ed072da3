"""What a holder is bound to, as every service passes it on (one definition each): the caps of a store, a
binding per kind, the plan that binds a new agent, and the roster row that states what it holds (R32).
Registry plans bindings (core/registry/plans.py), ModuleStore applies them (core/modules/binding.py checks a
plan), Transfer reads roster rows (core/transfer/plan.py); wire/ converts each to and from its message."""

from __future__ import annotations

from dataclasses import dataclass, field

from ggmodules.core.kinds import Kind
from ggmodules.core.vocabulary import BindAction, Cause, MemoryScope, MemoryStrategy, Origin


@dataclass(frozen=True, slots=True)
class Caps:
    """Limits of one store (R23); zero means unlimited."""

    max_items: int = 0
    max_bytes: int = 0


@dataclass(frozen=True, slots=True)
class Binding:
    """How a new holder comes by its store of one kind."""

    kind: Kind
    action: BindAction
    # UNSPECIFIED: the action's default origin (core/modules/copying.py).
    origin: Origin = Origin.UNSPECIFIED
    source_store_id: str = ""
    named_key: str = ""
    may_write: bool = False
    caps: Caps = field(default_factory=Caps)
    strategy: MemoryStrategy = MemoryStrategy.UNSPECIFIED
    scope: MemoryScope = MemoryScope.UNSPECIFIED
    skills_directory: str = ""
    read_set_source_agent_id: str = ""


@dataclass(frozen=True, slots=True)
class BindPlan:
    """A BindInstance: one binding per kind for a new agent. Registry plans it before it mints the agent id
    (so `run_id` and `agent_id` are empty there; wire/registry.py's bind_request addresses it)."""

    cause: Cause
    profile: str
    parent_agent_id: str
    # One binding per kind, in kind order.
    bindings: tuple[Binding, ...]
    run_id: str = ""
    agent_id: str = ""

    def binding(self, kind: Kind) -> Binding | None:
        return next((b for b in self.bindings if b.kind == kind), None)


@dataclass(frozen=True, slots=True)
class RosterRow:
    """What an instance holds for one kind (R32), as ModuleStore bound it."""

    kind: Kind
    store_id: str = ""
    enabled: bool = False
    origin: Origin = Origin.UNSPECIFIED
    scope: MemoryScope = MemoryScope.UNSPECIFIED
    may_write: bool = False
    strategy: MemoryStrategy = MemoryStrategy.UNSPECIFIED
