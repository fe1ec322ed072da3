"""A store as a write sees it (its head), and what a write hands back to be persisted."""

from __future__ import annotations

from dataclasses import dataclass, field

from ggmodules.core.kinds import Kind
from ggmodules.core.modules.contents import ArchivedThread, Contents, Message
from ggmodules.core.modules.figures import Figures
from ggmodules.core.roster import Caps
from ggmodules.core.vocabulary import MemoryStrategy


@dataclass(frozen=True, slots=True)
class StoreHead:
    """The columns of a store every write reads and updates; the kind's own state lives beside it.

    `head_seq` is the last seq of the store's append-only log (history messages, archive threads);
    `turn` is the window's turn counter.
    """

    kind: Kind
    caps: Caps = field(default_factory=Caps)
    figures: Figures = field(default_factory=Figures)
    head_seq: int = 0
    turn: int = 0
    strategy: MemoryStrategy = MemoryStrategy.UNSPECIFIED
    directory: str = ""


@dataclass(slots=True)
class Applied:
    """The outcome of one write: the new head, what changed, and what the writer's event reports."""

    head: StoreHead
    delta: Contents
    # The kind's new state when the write changed it (history, memories, tasks, board, skills catalogue).
    state: object | None = None
    # Skills: the writer's new read set when the write changed it.
    read_set: tuple[str, ...] | None = None
    # Rows appended to the store's log.
    messages: tuple[Message, ...] = ()
    thread: ArchivedThread | None = None
    # What the write minted.
    task_id: int = 0
    issue_id: str = ""
    thread_id: int = 0
