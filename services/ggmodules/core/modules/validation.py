"""Checks every write operation's fields before anything is applied."""

from __future__ import annotations

from ggmodules.core.errors import InvalidArgument, missing
from ggmodules.core.modules.contents import MessageInput
from ggmodules.core.modules.limits import check_name, check_text
from ggmodules.core.modules.ops import (
    AppendMessages,
    ArchiveThread,
    CloseView,
    CreateIssue,
    CreateTask,
    DeleteFile,
    Op,
    OpenView,
    PinBlock,
    PutSkill,
    ReadSkill,
    SetSystemPrompt,
    UnpinBlock,
    UpdateIssue,
    UpdateTask,
    WriteFile,
    WritePad,
)


def check_op(op: Op) -> None:
    match op:
        case SetSystemPrompt(text=text):
            check_text("set_system_prompt.text", text, required=True)
        case AppendMessages(messages=messages):
            _check_messages("append_messages.messages", messages)
        case OpenView(view_id=vid, content=content) | PinBlock(block_id=vid, content=content):
            check_name("id", vid)
            check_text("content", content)
        case CloseView(view_id=vid) | UnpinBlock(block_id=vid):
            check_name("id", vid)
        case WritePad(text=text):
            check_text("write_pad.text", text)
        case WriteFile(name=name, body=body, index_line=line):
            check_name("write_file.name", name)
            check_text("write_file.body", body)
            check_text("write_file.index_line", line)
        case DeleteFile(name=name):
            check_name("delete_file.name", name)
        case CreateTask(title=title, description=description):
            check_text("create_task.title", title, required=True)
            check_text("create_task.description", description)
        case UpdateTask(task_id=tid):
            if tid <= 0:
                raise missing("update_task.task_id")
        case CreateIssue(prefix=prefix, title=title, body=body):
            check_name("create_issue.prefix", prefix, max_len=16)
            check_text("create_issue.title", title, required=True)
            check_text("create_issue.body", body)
        case UpdateIssue(issue_id=iid, body=body):
            check_name("update_issue.issue_id", iid)
            check_text("update_issue.body", body)
        case PutSkill(name=name, description=description, body=body):
            check_name("put_skill.name", name)
            check_text("put_skill.description", description)
            check_text("put_skill.body", body)
        case ReadSkill(name=name):
            check_name("read_skill.name", name)
        case ArchiveThread(title=title, messages=messages):
            check_text("archive_thread.title", title, required=True)
            _check_messages("archive_thread.messages", messages)


def _check_messages(field: str, messages: tuple[MessageInput, ...]) -> None:
    if not messages:
        raise missing(field)
    for i, m in enumerate(messages):
        if not m.role:
            raise InvalidArgument(
                f"{field}[{i}].role is required, e.g. 'user' or 'assistant'",
                metadata={"field": f"{field}[{i}].role"},
                violations=[(f"{field}[{i}].role", "required")],
            )
        check_name(f"{field}[{i}].role", m.role, max_len=64)
        check_text(f"{field}[{i}].content", m.content)
