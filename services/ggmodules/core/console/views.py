"""The console's three views as plain values, one class per `telemetry.v1` view message."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ggmodules.core.kinds import Kind
from ggmodules.core.modules.contents import Contents, Message
from ggmodules.core.modules.figures import Figures
from ggmodules.core.vocabulary import Cause, Origin

# An instance's own files, in the order its folder lists them (R37); its modules folder comes after them.
AGENT_FILES: tuple[str, ...] = (
    "Overview",
    "Prompt",
    "Surface",
    "Activity",
    "Context",
    "Requests",
    "Metrics",
    "Compaction",
)
HISTORY_HOLDING_NOTHING = "a window reports itself per turn as a context breakdown, not as a store snapshot"


class CostState(enum.Enum):
    MEASURED = "measured"
    UNMEASURED = "unmeasured"
    NONE_BY_CONSTRUCTION = "none by construction"


@dataclass(frozen=True, slots=True)
class Cost:
    """A per-turn context cost (R43): measured (a number, zero included), unmeasured, or none by
    construction (the archive). The three are never conflated."""

    state: CostState
    tokens: int = 0

    def __str__(self) -> str:
        return f"{self.tokens} tokens" if self.state is CostState.MEASURED else self.state.value


UNMEASURED = Cost(CostState.UNMEASURED)
NONE_BY_CONSTRUCTION = Cost(CostState.NONE_BY_CONSTRUCTION)


def measured(tokens: int) -> Cost:
    return Cost(CostState.MEASURED, tokens)


@dataclass(frozen=True, slots=True)
class Figure:
    """A figure shown (`count`) or withheld (`withheld` says why): withheld is not zero."""

    count: int | None = None
    withheld: str = ""


@dataclass(frozen=True, slots=True)
class LifetimeEntry:
    cursor: int
    what: str
    agent_id: str
    cause: str = ""


@dataclass(frozen=True, slots=True)
class CoHolder:
    agent_id: str
    file: str


@dataclass(frozen=True, slots=True)
class IdentityStrip:
    store_id: str
    kind: Kind
    origin: Origin
    may_write: bool
    lifetime: tuple[LifetimeEntry, ...]
    cost_this_window: Cost
    cost_all_holders: Cost
    co_holders: tuple[CoHolder, ...]
    shared: bool
    link_count: int
    handed_on: bool
    dropped: bool
    links_to_modules_view: bool


@dataclass(frozen=True, slots=True)
class HistoryTurn:
    turn: int
    messages: tuple[Message, ...]


@dataclass(frozen=True, slots=True)
class ModuleFile:
    path: str
    strip: IdentityStrip
    turns: tuple[HistoryTurn, ...] = ()
    figures: Figures | None = None


@dataclass(frozen=True, slots=True)
class InstanceFolder:
    agent_id: str
    profile: str
    cause: Cause
    files: tuple[str, ...]
    modules: tuple[ModuleFile, ...]
    successors: tuple[str, ...]
    subagents: tuple[str, ...]
    running: bool
    forks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class InstancesView:
    instances: tuple[InstanceFolder, ...]
    modules_view: bool
    cursor: int


@dataclass(frozen=True, slots=True)
class StoreRow:
    store_id: str
    kind: Kind
    holders: tuple[str, ...]
    running_holders: int
    shared: bool
    link_count: int
    handed_on: bool
    dropped: bool
    written: bool
    cost: Cost


@dataclass(frozen=True, slots=True)
class KindOverview:
    kind: Kind
    store_count: int
    holders: int
    running: int
    shared_stores: int
    widest_share: int
    cost_per_turn: Cost
    never_written: Figure
    stores: tuple[StoreRow, ...]


@dataclass(frozen=True, slots=True)
class ModulesView:
    kinds: tuple[KindOverview, ...]
    modules_view: bool
    cursor: int


@dataclass(frozen=True, slots=True)
class HolderRow:
    agent_id: str
    origin: Origin
    may_write: bool
    active: bool
    cost: Cost


@dataclass(frozen=True, slots=True)
class StoreDetail:
    identity: IdentityStrip
    holders: tuple[HolderRow, ...]
    lifetime: tuple[LifetimeEntry, ...]
    summed_live_cost: Cost
    contents: Contents | None
    cursor: int


class Badge(enum.IntEnum):
    """Numbers match `telemetry.v1.Badge`."""

    AGENT_SCOPED = 1
    PER_INSTANCE = 2
    HANDED_ON = 3
    RUN_GLOBAL = 4
    SPLIT = 5

    @property
    def word(self) -> str:
        return self.name.lower().replace("_", " ").replace("agent scoped", "agent-scoped").replace(
            "run global", "run-global"
        )


@dataclass(frozen=True, slots=True)
class AgentModuleRow:
    kind: Kind
    badge: Badge
    store_ids: tuple[str, ...]
    inline_contents: Contents | None = None
    note: str = ""


@dataclass(frozen=True, slots=True)
class ProfileSection:
    profile: str
    instances: tuple[str, ...]
    modules: tuple[AgentModuleRow, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class AgentsView:
    profiles: tuple[ProfileSection, ...]
    cursor: int
