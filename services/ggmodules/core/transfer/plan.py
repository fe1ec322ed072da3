"""The per-kind plan of a transfer: what the successor gets for each kind either side holds (R19-R24, R35).

Outcomes describe what the SUCCESSOR gets:
- transition (R19): the edge's kinds are carried, plus the board in a run that has one (the board is the
  run's). A kind not carried starts fresh if the successor's profile enables it (a window not carried starts
  fresh), and is dropped otherwise.
- exec (R20): what both have is carried (history always, the board in a run that has one), what only the
  predecessor has is dropped, what only the successor has starts fresh.
A carried kind the predecessor does not hold is the suite's own defect (R26): `PredecessorLacks`.
Carried specifics: a memory strategy mismatch re-initializes; a shared memories binding of a successor
whose scope is `agent` re-points to that profile's own store (R35); skills follow the successor's directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ggmodules.core.kinds import Kind
from ggmodules.core.registry.plans import RUN_BOARD_KEY, profile_memories_key, skills_key
from ggmodules.core.registry.profiles import ModuleSpec, Profile
from ggmodules.core.roster import Caps, RosterRow
from ggmodules.core.transfer.notes import Notes, listing
from ggmodules.core.vocabulary import BindAction, MemoryScope, MemoryStrategy, Origin, Outcome, TransferKind

SHARED_ORIGINS = (Origin.PROFILE, Origin.INHERITED)


@dataclass(frozen=True)
class Handing:
    """How the successor holds one kind. `action` None carries the predecessor's store as it is."""

    kind: Kind
    action: BindAction | None
    origin: Origin
    may_write: bool
    caps: Caps = field(default_factory=Caps)
    source_store_id: str = ""
    named_key: str = ""
    strategy: MemoryStrategy = MemoryStrategy.UNSPECIFIED
    scope: MemoryScope = MemoryScope.UNSPECIFIED
    skills_directory: str = ""
    # Skills: whose read set the successor starts from (empty: an empty read set).
    read_set_source_agent_id: str = ""


@dataclass(frozen=True)
class KindPlan:
    kind: Kind
    outcome: Outcome
    # The predecessor's store; empty when it held none.
    store_id_before: str
    # None when dropped.
    handing: Handing | None
    # The kind's sentence for the opening note, if it has one.
    note: str = ""


@dataclass(frozen=True)
class TransferPlan:
    kind: TransferKind
    predecessor_agent_id: str
    profile: str
    # One per kind either side holds, in kind order.
    kinds: tuple[KindPlan, ...]
    opening_note: str

    def outcome(self, kind: Kind) -> KindPlan | None:
        return next((k for k in self.kinds if k.kind is kind), None)


@dataclass(frozen=True)
class Edge:
    """The FSM edge a transition takes."""

    source: str
    target: str
    carry: tuple[Kind, ...]


class PredecessorLacks(Exception):
    """A carried kind the predecessor does not hold (R26): the suite's defect, not the caller's."""

    def __init__(self, kind: TransferKind, predecessor: str, missing: Sequence[Kind]) -> None:
        self.kinds = tuple(missing)
        words = listing([k.word for k in self.kinds])
        super().__init__(
            f"the {kind.cause} of {predecessor} carries {words}, but {predecessor} does not hold "
            f"{words} (the suite's own defect, R26)"
        )


@dataclass(frozen=True)
class Sides:
    """Everything a plan reads: the predecessor's live roster and profile, the successor's profile."""

    predecessor_agent_id: str
    predecessor_profile: Profile
    roster: tuple[RosterRow, ...]
    successor: Profile
    board_enabled: bool

    def held(self, kind: Kind) -> RosterRow | None:
        return next((r for r in self.roster if r.kind is kind and r.enabled and r.store_id), None)

    def enabled(self, kind: Kind) -> ModuleSpec | None:
        """The successor's configuration of `kind`; the board is the run's, writable by every agent."""
        if kind is Kind.BOARD:
            return ModuleSpec(Kind.BOARD) if self.board_enabled else None
        return self.successor.module(kind)


def plan_transition(sides: Sides, edge: Edge) -> TransferPlan:
    carry = set(edge.carry) | ({Kind.BOARD} if sides.board_enabled else set())
    return _plan(TransferKind.TRANSITION, sides, carry, Kind.HISTORY in carry, edge)


def plan_exec(sides: Sides) -> TransferPlan:
    carry = {k for k in Kind if sides.held(k) is not None and sides.enabled(k) is not None}
    if sides.board_enabled:
        carry.add(Kind.BOARD)
    return _plan(TransferKind.EXEC, sides, carry, sides.held(Kind.HISTORY) is not None, None)


def _plan(
    kind: TransferKind, sides: Sides, carry: set[Kind], window_carried: bool, edge: Edge | None
) -> TransferPlan:
    notes = Notes(sides.predecessor_agent_id, sides.successor.name, edge.target if edge else "")
    missing = [k for k in Kind if k in carry and sides.held(k) is None]
    if missing:
        raise PredecessorLacks(kind, sides.predecessor_agent_id, missing)
    plans: list[KindPlan] = []
    for k in Kind:
        held, spec = sides.held(k), sides.enabled(k)
        before = held.store_id if held else ""
        if k in carry and held is not None and spec is not None:
            plans.append(_carried(sides, held, spec, window_carried, notes))
        elif spec is not None:
            fresh = _opening(spec, sides.successor.name)
            plans.append(KindPlan(k, Outcome.FRESH, before, fresh, notes.fresh(k, before)))
        elif held is not None:
            plans.append(KindPlan(k, Outcome.DROPPED, before, None, notes.dropped(k, k in carry)))
    return TransferPlan(
        kind, sides.predecessor_agent_id, sides.successor.name, tuple(plans),
        notes.opening([p.kind for p in plans if p.outcome is Outcome.CARRIED], [p.note for p in plans]),
    )


def _carried(sides: Sides, held: RosterRow, spec: ModuleSpec, window_carried: bool, notes: Notes) -> KindPlan:
    k, successor, before = held.kind, sides.successor.name, held.store_id
    if k is Kind.BOARD:
        board = _handing(spec, None, Origin.RUN, source_store_id=before, may_write=True)
        return KindPlan(k, Outcome.CARRIED, before, board)
    if k is Kind.MEMORIES:
        if held.strategy is not MemoryStrategy.UNSPECIFIED and held.strategy is not spec.strategy:
            note = notes.reinitialized(held.strategy, spec.strategy)
            return KindPlan(k, Outcome.REINITIALIZED, before, _opening(spec, successor), note)
        if (
            spec.scope is MemoryScope.AGENT
            and held.origin in SHARED_ORIGINS
            and sides.predecessor_profile.name != successor
        ):
            key = profile_memories_key(successor)
            named = _handing(spec, BindAction.NAMED, Origin.PROFILE, named_key=key)
            return KindPlan(k, Outcome.CARRIED, before, named, notes.repointed_memories())
    reader = ""
    if k is Kind.SKILLS:
        # The read set follows the window: carried with it, empty without it.
        reader = sides.predecessor_agent_id if window_carried else ""
        had = sides.predecessor_profile.module(Kind.SKILLS)
        if had is not None and had.skills_directory != spec.skills_directory:
            key = skills_key(spec.skills_directory)
            named = _handing(
                spec, BindAction.NAMED, Origin.PROFILE, named_key=key, read_set_source_agent_id=reader
            )
            return KindPlan(k, Outcome.CARRIED, before, named, notes.repointed_skills(spec.skills_directory))
    keep = _handing(
        spec, None, Origin.TRANSFERRED, source_store_id=before, read_set_source_agent_id=reader
    )
    return KindPlan(k, Outcome.CARRIED, before, keep)


def _opening(spec: ModuleSpec, profile: str) -> Handing:
    """A new binding of the successor's own, as an instance of `profile` opening would get it."""
    if spec.kind is Kind.BOARD:
        return _handing(spec, BindAction.NAMED, Origin.RUN, named_key=RUN_BOARD_KEY, may_write=True)
    if spec.kind is Kind.MEMORIES and spec.scope is MemoryScope.AGENT:
        return _handing(spec, BindAction.NAMED, Origin.PROFILE, named_key=profile_memories_key(profile))
    if spec.kind is Kind.SKILLS:
        return _handing(spec, BindAction.NAMED, Origin.PROFILE, named_key=skills_key(spec.skills_directory))
    return _handing(spec, BindAction.CREATE, Origin.CREATED)


def _handing(
    spec: ModuleSpec,
    action: BindAction | None,
    origin: Origin,
    *,
    source_store_id: str = "",
    named_key: str = "",
    may_write: bool | None = None,
    read_set_source_agent_id: str = "",
) -> Handing:
    return Handing(
        kind=spec.kind,
        action=action,
        origin=origin,
        may_write=spec.may_write if may_write is None else may_write,
        caps=spec.caps,
        source_store_id=source_store_id,
        named_key=named_key,
        strategy=spec.strategy,
        scope=spec.scope,
        skills_directory=spec.skills_directory,
        read_set_source_agent_id=read_set_source_agent_id,
    )
