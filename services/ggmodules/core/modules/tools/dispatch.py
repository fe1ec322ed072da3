"""A tool call made by the model, turned into an operation on its caller's store, and its result (R8)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ggmodules.core.errors import FailedPrecondition, InvalidArgument, NotFound, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.modules import ops
from ggmodules.core.modules.archive_search import ArchiveSearch, SearchPage, plan_search
from ggmodules.core.modules.contents import (
    ArchivedThread,
    BoardContents,
    Contents,
    Issue,
    MemoriesContents,
    MessageInput,
    SkillsContents,
    Task,
    TasksContents,
)
from ggmodules.core.modules.tools.arguments import parse_arguments
from ggmodules.core.modules.tools.catalog import BY_NAME, ToolDefinition
from ggmodules.core.modules.values import IssueStatus, TaskStatus
from ggmodules.core.modules.views import WriteResult
from ggmodules.core.vocabulary import MemoryStrategy

Result = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolCall:
    tool: ToolDefinition
    args: dict[str, Any]
    # The write the call makes, or None for a read.
    op: ops.Op | None

    @property
    def kind(self) -> Kind:
        return self.tool.kind

    @property
    def needs_contents(self) -> bool:
        """Whether the result reads the store (after the write, for a write)."""
        return self.tool.name not in _RESULT_FROM_WRITE and not self.searches

    @property
    def searches(self) -> bool:
        """Whether the result is a search of the store's index (`search_of`, `found`), not its contents."""
        return self.tool.name == "search_archive"


# Writes whose result is what the write itself returned.
_RESULT_FROM_WRITE = frozenset(
    {
        "open_view",
        "close_view",
        "pin_block",
        "unpin_block",
        "write_scratchpad",
        "write_memory_file",
        "delete_memory_file",
        "create_task",
        "create_issue",
        "archive_thread",
    }
)


def plan_call(tool_name: str, arguments_json: str) -> ToolCall:
    tool = BY_NAME.get(tool_name)
    if tool is None:
        raise InvalidArgument(
            f"no tool {tool_name!r}; ListTools names the tools the suite publishes",
            reason=Reason.UNKNOWN_TOOL,
            metadata={"tool": tool_name},
        )
    args = parse_arguments(tool, arguments_json)
    return ToolCall(tool, args, _op(tool.name, args) if tool.writes else None)


def _op(name: str, a: dict[str, Any]) -> ops.Op:
    match name:
        case "open_view":
            return ops.OpenView(a["view_id"], a["content"])
        case "close_view":
            return ops.CloseView(a["view_id"])
        case "pin_block":
            return ops.PinBlock(a["block_id"], a["content"])
        case "unpin_block":
            return ops.UnpinBlock(a["block_id"])
        case "write_scratchpad":
            return ops.WritePad(a["text"])
        case "write_memory_file":
            return ops.WriteFile(a["name"], a["body"], a.get("index_line", ""))
        case "delete_memory_file":
            return ops.DeleteFile(a["name"])
        case "create_task":
            return ops.CreateTask(a["title"], a.get("description", ""), tuple(a.get("blocked_by", ())))
        case "update_task":
            status = TaskStatus[a["status"].upper()] if "status" in a else None
            return ops.UpdateTask(
                a["task_id"],
                status,
                tuple(a.get("add_blocked_by", ())),
                tuple(a.get("remove_blocked_by", ())),
            )
        case "create_issue":
            return ops.CreateIssue(a["prefix"], a["title"], a.get("body", ""))
        case "update_issue":
            issue_status = IssueStatus[a["status"].upper()] if "status" in a else None
            return ops.UpdateIssue(a["issue_id"], issue_status, a.get("body", ""))
        case "read_skill":
            return ops.ReadSkill(a["name"])
        case "archive_thread":
            return ops.ArchiveThread(
                a["title"], tuple(MessageInput(m["role"], m["content"]) for m in a["messages"])
            )
    raise AssertionError(f"tool {name} writes nothing")


def result_of(call: ToolCall, contents: Contents, written: WriteResult | None) -> Result:
    """The JSON result handed back to the model: from the write's result and the store as it now is."""
    a = call.args
    match call.tool.name, contents:
        case "create_task", _ if written is not None:
            return {"task_id": written.task_id}
        case "update_task", TasksContents():
            return {"task": _task(next(t for t in contents.tasks if t.id == a["task_id"]))}
        case "list_tasks", TasksContents():
            return {"tasks": [_task(t) for t in contents.tasks], "next_id": contents.next_id}
        case "create_issue", _ if written is not None:
            return {"issue_id": written.issue_id}
        case "update_issue" | "read_issue", BoardContents():
            return {"issue": _issue(_find_issue(contents, a["issue_id"]), body=True)}
        case "list_issues", BoardContents():
            return {
                "issues": [
                    _issue(i)
                    for i in contents.issues
                    if a.get("prefix") in (None, i.id.rsplit("-", 1)[0])
                    and a.get("status") in (None, i.status.word)
                ]
            }
        case "read_memory_file", MemoriesContents():
            return _memory_file(contents, a["name"])
        case "read_skill", SkillsContents():
            skill = next(s for s in contents.catalogue if s.name == a["name"])
            return {"name": skill.name, "body": skill.body}
        case "archive_thread", _ if written is not None:
            return {"thread_id": written.thread_id}
    return {"ok": True}


def search_of(call: ToolCall, store_id: str) -> ArchiveSearch:
    """The search a `search_archive` call asks of the caller's archive store."""
    a = call.args
    return plan_search(store_id, a["query"], int(a.get("limit", 5)), a.get("page_token", ""))


def found(page: SearchPage) -> Result:
    """A `search_archive` result: the threads best first, each with its score and snippet."""
    return {
        "threads": [{**_thread(h.thread), "score": h.score, "snippet": h.snippet} for h in page.hits],
        "next_page_token": page.next_page_token,
    }


def _task(t: Task) -> Result:
    return {
        "id": t.id,
        "title": t.title,
        "description": t.description,
        "status": t.status.word,
        "blocked_by": list(t.blocked_by),
    }


def _issue(i: Issue, *, body: bool = False) -> Result:
    out: Result = {"id": i.id, "title": i.title, "status": i.status.word}
    if body:
        out["body"] = i.body
    return out


def _find_issue(board: BoardContents, issue_id: str) -> Issue:
    issue = next((i for i in board.issues if i.id == issue_id), None)
    if issue is None:
        raise NotFound(
            f"no issue {issue_id!r} on this board",
            reason=Reason.ENTRY_NOT_FOUND,
            metadata={"entry": issue_id},
        )
    return issue


def _memory_file(memories: MemoriesContents, name: str) -> Result:
    if memories.strategy != MemoryStrategy.MARKDOWN_INDEX:
        raise FailedPrecondition(
            "read_memory_file needs markdown_index memories; this store is a scratchpad",
            reason=Reason.WRONG_KIND,
            metadata={"strategy": "scratchpad"},
        )
    entry = next((e for e in memories.entries if e.name == name), None)
    if entry is None:
        raise NotFound(f"no memory file {name!r}", reason=Reason.ENTRY_NOT_FOUND, metadata={"entry": name})
    return {"name": entry.name, "body": entry.body, "index_line": entry.index_line}


def _thread(t: ArchivedThread) -> Result:
    return {
        "id": t.id,
        "title": t.title,
        "messages": [{"role": m.role, "content": m.content} for m in t.messages],
    }
