"""The sixteen write operations, each fitting exactly one kind."""

from __future__ import annotations

from dataclasses import dataclass

from ggmodules.core.kinds import Kind
from ggmodules.core.modules.contents import MessageInput
from ggmodules.core.modules.values import IssueStatus, TaskStatus


@dataclass(frozen=True, slots=True)
class SetSystemPrompt:
    text: str


@dataclass(frozen=True, slots=True)
class AppendMessages:
    messages: tuple[MessageInput, ...]
    start_turn: bool = False


@dataclass(frozen=True, slots=True)
class OpenView:
    view_id: str
    content: str


@dataclass(frozen=True, slots=True)
class CloseView:
    view_id: str


@dataclass(frozen=True, slots=True)
class PinBlock:
    block_id: str
    content: str


@dataclass(frozen=True, slots=True)
class UnpinBlock:
    block_id: str


@dataclass(frozen=True, slots=True)
class WritePad:
    text: str


@dataclass(frozen=True, slots=True)
class WriteFile:
    name: str
    body: str
    index_line: str = ""


@dataclass(frozen=True, slots=True)
class DeleteFile:
    name: str


@dataclass(frozen=True, slots=True)
class CreateTask:
    title: str
    description: str = ""
    blocked_by: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class UpdateTask:
    task_id: int
    status: TaskStatus | None = None
    add_blocked_by: tuple[int, ...] = ()
    remove_blocked_by: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class CreateIssue:
    prefix: str
    title: str
    body: str = ""


@dataclass(frozen=True, slots=True)
class UpdateIssue:
    issue_id: str
    status: IssueStatus | None = None
    body: str = ""


@dataclass(frozen=True, slots=True)
class PutSkill:
    name: str
    description: str
    body: str


@dataclass(frozen=True, slots=True)
class ReadSkill:
    name: str


@dataclass(frozen=True, slots=True)
class ArchiveThread:
    title: str
    messages: tuple[MessageInput, ...]


Op = (
    SetSystemPrompt
    | AppendMessages
    | OpenView
    | CloseView
    | PinBlock
    | UnpinBlock
    | WritePad
    | WriteFile
    | DeleteFile
    | CreateTask
    | UpdateTask
    | CreateIssue
    | UpdateIssue
    | PutSkill
    | ReadSkill
    | ArchiveThread
)

# The kind each operation fits, and the name events and logs give it.
OP_KIND: dict[type, Kind] = {
    SetSystemPrompt: Kind.HISTORY,
    AppendMessages: Kind.HISTORY,
    OpenView: Kind.HISTORY,
    CloseView: Kind.HISTORY,
    PinBlock: Kind.HISTORY,
    UnpinBlock: Kind.HISTORY,
    WritePad: Kind.MEMORIES,
    WriteFile: Kind.MEMORIES,
    DeleteFile: Kind.MEMORIES,
    CreateTask: Kind.TASKS,
    UpdateTask: Kind.TASKS,
    CreateIssue: Kind.BOARD,
    UpdateIssue: Kind.BOARD,
    PutSkill: Kind.SKILLS,
    ReadSkill: Kind.SKILLS,
    ArchiveThread: Kind.ARCHIVE,
}
OP_NAME: dict[type, str] = {
    SetSystemPrompt: "set_system_prompt",
    AppendMessages: "append_messages",
    OpenView: "open_view",
    CloseView: "close_view",
    PinBlock: "pin_block",
    UnpinBlock: "unpin_block",
    WritePad: "write_pad",
    WriteFile: "write_file",
    DeleteFile: "delete_file",
    CreateTask: "create_task",
    UpdateTask: "update_task",
    CreateIssue: "create_issue",
    UpdateIssue: "update_issue",
    PutSkill: "put_skill",
    ReadSkill: "read_skill",
    ArchiveThread: "archive_thread",
}
# Operations that only add to the store's append-only log (messages, threads): they never read its state.
LOG_OPS: frozenset[type] = frozenset({AppendMessages, ArchiveThread})
