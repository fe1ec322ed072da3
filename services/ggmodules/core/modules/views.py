"""What reads and writes answer: a store's identity, holders and figures, and a write's result."""

from __future__ import annotations

from dataclasses import dataclass

from ggmodules.core.kinds import Kind
from ggmodules.core.modules.contents import Contents
from ggmodules.core.modules.figures import Figures
from ggmodules.core.roster import Caps
from ggmodules.core.vocabulary import MemoryStrategy, Origin


@dataclass(frozen=True, slots=True)
class HolderInfo:
    agent_id: str
    origin: Origin
    may_write: bool
    active: bool


@dataclass(frozen=True, slots=True)
class StoreInfo:
    run_id: str
    store_id: str
    kind: Kind
    caps: Caps
    holders: tuple[HolderInfo, ...]
    figures: Figures
    forked_from: str = ""
    strategy: MemoryStrategy = MemoryStrategy.UNSPECIFIED
    skills_directory: str = ""


@dataclass(frozen=True, slots=True)
class StoreView:
    store: StoreInfo
    contents: Contents


@dataclass(frozen=True, slots=True)
class WriteResult:
    store_id: str
    figures: Figures
    task_id: int = 0
    issue_id: str = ""
    thread_id: int = 0
    last_seq: int = 0
    turn: int = 0
