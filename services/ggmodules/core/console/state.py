"""What the fold keeps: instances, stores and who holds them, built up event by event."""

from __future__ import annotations

from dataclasses import dataclass, field

from ggmodules.core.kinds import Kind
from ggmodules.core.modules.contents import ArchivedThread, Contents, Message
from ggmodules.core.modules.figures import Figures
from ggmodules.core.roster import RosterRow
from ggmodules.core.vocabulary import Cause, Origin

ENDED_RUN = frozenset({"finished", "internal_error"})


@dataclass(slots=True)
class Instance:
    agent_id: str
    first_cursor: int
    profile: str = ""
    cause: Cause = Cause.UNSPECIFIED
    parent_agent_id: str = ""
    predecessor_agent_id: str = ""
    opening_note: str = ""
    # None until the instance states its roster (R32).
    roster: tuple[RosterRow, ...] | None = None
    successors: list[str] = field(default_factory=list)
    subagents: list[str] = field(default_factory=list)
    forks: list[str] = field(default_factory=list)
    # Set once the instance handed its modules on to a successor.
    handed_on_to: str = ""

    def declared(self, kind: Kind) -> RosterRow | None:
        return next((r for r in self.roster or () if r.kind == kind), None)


@dataclass(slots=True)
class Holding:
    """One holder's binding to one store."""

    agent_id: str
    store_id: str
    origin: Origin
    may_write: bool
    joined_cursor: int
    active: bool = True
    # Arrived from a predecessor that held the same store: a continuation, never a new sharer (R38).
    continues: bool = False
    # The newest figures on this holder's own stream (skills: its read set).
    figures: Figures | None = None


@dataclass(frozen=True, slots=True)
class Happening:
    """One lifetime entry before its cause is named: `succession` names the agent whose arrival caused
    it; the cause is worded when the view is read, once every roster is known."""

    cursor: int
    what: str
    agent_id: str
    succession: str = ""


@dataclass(slots=True)
class Store:
    store_id: str
    kind: Kind
    first_cursor: int
    source_store_id: str = ""
    holders: dict[str, Holding] = field(default_factory=dict)
    # The most holders active at once (R38): a successor's arrival never raises it, because its
    # predecessor lets go first.
    peak: int = 0
    written: bool = False
    figures: Figures = field(default_factory=Figures)
    # Kinds with snapshots: the newest contents any event carried.
    contents: Contents | None = None
    # History and archive: read off the holders' streams (R44).
    messages: dict[int, Message] = field(default_factory=dict)
    system_prompt: str = ""
    system_prompt_set: bool = False
    open_views: dict[str, str] = field(default_factory=dict)
    pinned_blocks: dict[str, str] = field(default_factory=dict)
    turn: int = 0
    threads: dict[int, ArchivedThread] = field(default_factory=dict)
    happenings: list[Happening] = field(default_factory=list)

    def active(self) -> list[Holding]:
        return [h for h in self.holders.values() if h.active]

    @property
    def number(self) -> int:
        """n of `<kind>-<n>` (R34), for ordering; ids of another shape sort last."""
        tail = self.store_id.rsplit("-", 1)[-1]
        return int(tail) if tail.isdigit() else 1 << 62


@dataclass(frozen=True, slots=True)
class TurnReport:
    turn: int
    by_store: dict[str, int]
    by_kind: dict[Kind, int]
