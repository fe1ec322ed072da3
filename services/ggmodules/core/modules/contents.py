"""What a store holds, per kind, as plain values: what reads return and events carry."""

from __future__ import annotations

from dataclasses import dataclass

from ggmodules.core.modules.values import IssueStatus, TaskStatus
from ggmodules.core.vocabulary import MemoryStrategy


@dataclass(frozen=True, slots=True)
class MessageInput:
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class Message:
    seq: int
    role: str
    content: str
    turn: int


@dataclass(frozen=True, slots=True)
class Block:
    id: str
    content: str


@dataclass(frozen=True, slots=True)
class HistoryContents:
    system_prompt: str = ""
    system_prompt_set: bool = False
    messages: tuple[Message, ...] = ()
    open_views: tuple[Block, ...] = ()
    pinned_blocks: tuple[Block, ...] = ()
    turn: int = 0
    message_count: int = 0


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    name: str
    body: str
    index_line: str
    agent_id: str


@dataclass(frozen=True, slots=True)
class MemoriesContents:
    strategy: MemoryStrategy
    entries: tuple[MemoryEntry, ...] = ()


@dataclass(frozen=True, slots=True)
class Task:
    id: int
    title: str
    description: str
    status: TaskStatus
    blocked_by: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class TasksContents:
    tasks: tuple[Task, ...] = ()
    next_id: int = 1


@dataclass(frozen=True, slots=True)
class Issue:
    id: str
    title: str
    body: str
    status: IssueStatus


@dataclass(frozen=True, slots=True)
class BoardContents:
    issues: tuple[Issue, ...] = ()
    counters: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str


@dataclass(frozen=True, slots=True)
class SkillsContents:
    directory: str = ""
    catalogue: tuple[Skill, ...] = ()
    read_set: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ArchivedThread:
    id: int
    title: str
    messages: tuple[Message, ...] = ()


@dataclass(frozen=True, slots=True)
class ArchiveContents:
    threads: tuple[ArchivedThread, ...] = ()


Contents = (
    HistoryContents | MemoriesContents | TasksContents | BoardContents | SkillsContents | ArchiveContents
)
