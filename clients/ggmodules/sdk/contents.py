"""A module's contents as calls return them (GetStore, the Get<Kind> reads, archive search): frozen
dataclasses in the seed's words, one per kind, and `Contents`, any of them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ggmodules.sdk.words import IssueStatus, MemoryStrategy, TaskStatus


@dataclass(frozen=True)
class Message:
    seq: int
    role: str
    content: str
    turn: int


@dataclass(frozen=True)
class Block:
    """An open view or a pinned block of a window."""

    id: str
    content: str


@dataclass(frozen=True)
class HistoryContents:
    system_prompt: str | None
    messages: tuple[Message, ...]
    open_views: tuple[Block, ...] = ()
    pinned_blocks: tuple[Block, ...] = ()
    turn: int = 0
    message_count: int = 0


@dataclass(frozen=True)
class MemoryEntry:
    name: str
    body: str
    agent_id: str
    index_line: str = ""


@dataclass(frozen=True)
class MemoriesContents:
    strategy: MemoryStrategy | None
    entries: tuple[MemoryEntry, ...]


@dataclass(frozen=True)
class Task:
    id: int
    title: str
    status: TaskStatus | None
    description: str = ""
    blocked_by: tuple[int, ...] = ()


@dataclass(frozen=True)
class TasksContents:
    tasks: tuple[Task, ...]
    next_id: int


@dataclass(frozen=True)
class Issue:
    id: str
    title: str
    status: IssueStatus | None
    body: str = ""


@dataclass(frozen=True)
class BoardContents:
    issues: tuple[Issue, ...]
    # prefix -> the last N handed out
    counters: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str = ""


@dataclass(frozen=True)
class SkillsContents:
    directory: str
    catalogue: tuple[Skill, ...]
    read_set: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArchivedThread:
    id: int
    title: str
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class FoundThread(ArchivedThread):
    """An archived thread a search found: `score` (higher is more relevant, comparable within one page)
    and `snippet` (the passage that matched, its matched words between `**`)."""

    score: float = 0.0
    snippet: str = ""


@dataclass(frozen=True)
class ArchiveContents:
    threads: tuple[ArchivedThread, ...]


Contents = (
    HistoryContents | MemoriesContents | TasksContents | BoardContents | SkillsContents | ArchiveContents
)
