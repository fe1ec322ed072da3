"""The fold's input: telemetry events as plain values, one body per event kind.

`cursor` is the event's place on Telemetry's log (it increases along the log); the fold reads events in
cursor order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ggmodules.core.kinds import Kind
from ggmodules.core.modules.contents import Contents
from ggmodules.core.modules.figures import Figures
from ggmodules.core.roster import RosterRow
from ggmodules.core.vocabulary import Cause, Origin, Outcome


@dataclass(frozen=True, slots=True)
class Roster:
    """An instance stating what it holds as it opens (R32)."""

    profile: str
    cause: Cause
    rows: tuple[RosterRow, ...] = ()
    parent_agent_id: str = ""
    predecessor_agent_id: str = ""
    opening_note: str = ""


@dataclass(frozen=True, slots=True)
class Bind:
    origin: Origin
    may_write: bool
    figures: Figures = field(default_factory=Figures)
    source_store_id: str = ""


@dataclass(frozen=True, slots=True)
class Write:
    """The writer's own event (R28). `delta`: history the appended messages (and a set system prompt),
    archive the archived thread, other kinds the contents after the write."""

    op: str
    figures: Figures = field(default_factory=Figures)
    delta: Contents | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Another holder's write, as this holder's own state (R29); no contents for history and archive."""

    written_by: str
    figures: Figures = field(default_factory=Figures)
    contents: Contents | None = None


@dataclass(frozen=True, slots=True)
class Drain:
    """The holder lets go of the store as it hands on to `successor_agent_id` (R30)."""

    successor_agent_id: str
    figures: Figures = field(default_factory=Figures)


@dataclass(frozen=True, slots=True)
class Restate:
    """A module the successor ends up with (R31)."""

    outcome: Outcome
    predecessor_agent_id: str
    figures: Figures = field(default_factory=Figures)
    contents: Contents | None = None


@dataclass(frozen=True, slots=True)
class RunStatus:
    """Run lifecycle: "created", "finished", "internal_error"."""

    status: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ModuleTokens:
    """Tokens one module took in the window on a turn. An empty store_id names the agent's store of `kind`."""

    kind: Kind
    store_id: str
    tokens: int


@dataclass(frozen=True, slots=True)
class Turn:
    """A runtime's per-turn context breakdown for its window (R43): the source of measured costs.
    A module not listed is unmeasured on that turn."""

    turn: int
    modules: tuple[ModuleTokens, ...] = ()


Body = Roster | Bind | Write | Snapshot | Drain | Restate | RunStatus | Turn


@dataclass(frozen=True, slots=True)
class Event:
    cursor: int
    run_id: str
    body: Body
    agent_id: str = ""
    kind: Kind | None = None
    store_id: str = ""
