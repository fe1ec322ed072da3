"""A handover: a predecessor's modules passed to its successor, one outcome per kind (R19-R24, R35).

Transfer decides each kind's outcome; ModuleStore checks the plan against what the predecessor actually
holds and applies it in one transaction. What is checked and decided here, storage persists.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from ggmodules.core.errors import FailedPrecondition, InvalidArgument, PermissionDenied, Reason, missing
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.limits import check_name, check_text
from ggmodules.core.roster import Binding, Caps
from ggmodules.core.vocabulary import (
    TRANSFER_CAUSES,
    BindAction,
    Cause,
    MemoryScope,
    MemoryStrategy,
    Origin,
    Outcome,
)

# Outcomes that speak of a store the predecessor holds.
FROM_PREDECESSOR = frozenset({Outcome.CARRIED, Outcome.REINITIALIZED, Outcome.DROPPED})


@dataclass(frozen=True, slots=True)
class Receive:
    """How the successor holds a kind it ends up with."""

    # None: the predecessor's store, carried as is. NAMED on a carried kind re-points it (R35).
    action: BindAction | None = None
    named_key: str = ""
    # UNSPECIFIED: the action's default origin.
    origin: Origin = Origin.UNSPECIFIED
    may_write: bool = True
    caps: Caps = field(default_factory=Caps)
    strategy: MemoryStrategy = MemoryStrategy.UNSPECIFIED
    scope: MemoryScope = MemoryScope.UNSPECIFIED
    skills_directory: str = ""
    # The predecessor's store the plan names, if it names one.
    source_store_id: str = ""

    def binding(self, kind: Kind) -> Binding:
        """As a BindInstance binding: how a new or named store is minted or joined."""
        return Binding(
            kind,
            self.action or BindAction.NAMED,
            named_key=self.named_key,
            origin=self.origin,
            may_write=self.may_write,
            caps=self.caps,
            strategy=self.strategy,
            scope=self.scope,
            skills_directory=self.skills_directory,
        )


@dataclass(frozen=True, slots=True)
class HandoverKind:
    kind: Kind
    outcome: Outcome
    # None for a dropped kind: the successor does not hold it.
    receive: Receive | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class HandoverPlan:
    run_id: str
    predecessor_agent_id: str
    successor_agent_id: str
    profile: str
    cause: Cause
    kinds: tuple[HandoverKind, ...]
    opening_note: str = ""

    def entry(self, kind: Kind) -> HandoverKind | None:
        return next((k for k in self.kinds if k.kind == kind), None)


@dataclass(frozen=True, slots=True)
class KindResult:
    """One kind's outcome with the store before (the predecessor's) and after (the successor's)."""

    kind: Kind
    outcome: Outcome
    store_id_before: str = ""
    store_id_after: str = ""
    note: str = ""


def check_plan(plan: HandoverPlan) -> None:
    """The plan is well-formed on its own; what the predecessor holds is checked by `check_held`."""
    for name, value in (
        ("run_id", plan.run_id),
        ("predecessor_agent_id", plan.predecessor_agent_id),
        ("successor_agent_id", plan.successor_agent_id),
        ("profile", plan.profile),
    ):
        check_name(name, value)
    if plan.cause not in TRANSFER_CAUSES:
        words = ", ".join(c.word for c in TRANSFER_CAUSES)
        raise _invalid("cause", f"cause must be one of {words}, not {plan.cause.word!r}")
    if plan.successor_agent_id == plan.predecessor_agent_id:
        raise _invalid(
            "successor_agent_id",
            "the successor is a new agent (R36): mint an id other than the predecessor's",
        )
    check_text("opening_note", plan.opening_note)
    seen: set[Kind] = set()
    for i, k in enumerate(plan.kinds):
        _check_kind(f"kinds[{i}]", k, seen)
    history = plan.entry(Kind.HISTORY)
    if history is None or history.outcome not in (Outcome.CARRIED, Outcome.FRESH):
        raise InvalidArgument(
            "every successor holds a history module (R2): hand history over CARRIED or FRESH",
            reason=Reason.HISTORY_REQUIRED,
            metadata={"field": "kinds"},
        )


def _check_kind(field_: str, k: HandoverKind, seen: set[Kind]) -> None:
    if k.kind in seen:
        raise _invalid(field_, f"{field_}: {k.kind.word} is named twice; name each kind once")
    seen.add(k.kind)
    if k.outcome == Outcome.UNSPECIFIED:
        raise missing(f"{field_}.outcome")
    check_text(f"{field_}.note", k.note)
    r = k.receive
    if k.outcome == Outcome.DROPPED or r is None:
        if k.outcome != Outcome.DROPPED:
            raise missing(f"{field_}.binding")
        return
    allowed: tuple[BindAction | None, ...] = (BindAction.CREATE, BindAction.NAMED)
    if k.outcome == Outcome.CARRIED:
        allowed = (None, BindAction.NAMED)
    if r.action not in allowed:
        words = " or ".join("unspecified (carry)" if a is None else a.name for a in allowed)
        raise _invalid(f"{field_}.binding.action", f"a {k.outcome.name.lower()} kind binds with {words}")
    for name, value in (
        ("named_key", r.named_key),
        ("skills_directory", r.skills_directory),
        ("source_store_id", r.source_store_id),
    ):
        check_name(f"{field_}.binding.{name}", value, required=False)
    if k.kind == Kind.SKILLS:
        if r.action is not None and not (r.skills_directory or r.named_key):
            raise missing(f"{field_}.binding.skills_directory")
    elif r.action == BindAction.NAMED and not r.named_key:
        raise missing(f"{field_}.binding.named_key")


def check_held(plan: HandoverPlan, held: Mapping[Kind, str]) -> None:
    """Every kind the plan says comes from the predecessor is one it actively holds, and a store the plan
    names is that one. Otherwise the plan and the live holder set disagree: Transfer ends the run (R26)."""
    for k in plan.kinds:
        named = k.receive.source_store_id if k.receive is not None else ""
        if k.outcome not in FROM_PREDECESSOR and not named:
            continue
        store_id = held.get(k.kind)
        if store_id is None or (named and named != store_id):
            holds = f"holds {store_id!r}" if store_id else "holds none"
            raise FailedPrecondition(
                f"agent {plan.predecessor_agent_id!r} does not hold the {k.kind.word} module the handover "
                f"says it {k.outcome.name.lower()} ({holds}); nothing was handed over",
                reason=Reason.KIND_NOT_HELD,
                metadata={
                    "kind": k.kind.word,
                    "agent_id": plan.predecessor_agent_id,
                    **({"store_id": named} if named else {}),
                },
            )


def with_implicit_drops(plan: HandoverPlan, held: Collection[Kind]) -> tuple[HandoverKind, ...]:
    """The plan's kinds in kind order; a kind the predecessor holds that the plan leaves out is dropped."""
    out = []
    for kind in Kind:
        entry = plan.entry(kind)
        if entry is None and kind in held:
            entry = HandoverKind(kind, Outcome.DROPPED)
        if entry is not None:
            out.append(entry)
    return tuple(out)


def carried_origin(kind: Kind) -> Origin:
    """A carried store is the predecessor's, handed on; the board stays the run's (R14)."""
    return Origin.RUN if kind == Kind.BOARD else Origin.TRANSFERRED


def resolved_caps(current: Caps, wanted: Caps, *, sole_holder: bool) -> Caps:
    """R22: a store several agents hold keeps its caps. Tightening keeps contents over the cap (R23)."""
    return wanted if sole_holder else current


def check_strategy(kind: Kind, receive: Receive, held_strategy: MemoryStrategy) -> None:
    """A carried memories store keeps its strategy; another one needs REINITIALIZED (R21)."""
    if kind != Kind.MEMORIES or receive.action is not None or not receive.strategy:
        return
    if receive.strategy != held_strategy:
        raise FailedPrecondition(
            f"the predecessor's memories are a {held_strategy.name.lower()} and the successor keeps a "
            f"{receive.strategy.name.lower()}: they cannot be carried; hand memories over REINITIALIZED",
            reason=Reason.WRONG_KIND,
            metadata={"kind": kind.word, "strategy": held_strategy.name.lower()},
        )


def already_handed_on(agent_id: str, successor: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"agent {agent_id!r} already handed its modules on to {successor!r}; transfer {successor!r} instead",
        reason=Reason.HANDED_ON,
        metadata={"agent_id": agent_id, "successor_agent_id": successor},
    )


def handed_on(agent_id: str, successor: str) -> PermissionDenied:
    return PermissionDenied(
        f"agent {agent_id} handed its modules on to {successor}; write as {successor}",
        reason=Reason.HANDED_ON,
        metadata={"agent_id": agent_id, "successor_agent_id": successor},
    )


def _invalid(field_: str, message: str) -> InvalidArgument:
    return InvalidArgument(message, metadata={"field": field_}, violations=[(field_, message)])
