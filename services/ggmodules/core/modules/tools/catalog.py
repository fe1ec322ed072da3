"""Tool definitions: name, description and JSON schema of the arguments, for every kind (R8).

Board and archive reach the model only through these; every other kind also renders into the prompt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ggmodules.core.kinds import Kind
from ggmodules.core.modules.archive_query import MAX_QUERY_CHARS
from ggmodules.core.modules.values import IssueStatus, TaskStatus

Schema = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    kind: Kind
    name: str
    description: str
    parameters: Schema
    # True when the tool changes the store (and is a write attributed to the caller).
    writes: bool

    def schema_json(self) -> str:
        return json.dumps(self.parameters, sort_keys=True, separators=(",", ":"))


def _obj(required: list[str], **props: Schema) -> Schema:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _str(description: str, **extra: Any) -> Schema:
    return {"type": "string", "description": description, **extra}


def _int(description: str) -> Schema:
    return {"type": "integer", "minimum": 1, "description": description}


def _ids(description: str) -> Schema:
    return {"type": "array", "items": {"type": "integer", "minimum": 1}, "description": description}


_TASK_STATUS = [s.word for s in TaskStatus]
_ISSUE_STATUS = [s.word for s in IssueStatus]
_MESSAGES: Schema = {
    "type": "array",
    "minItems": 1,
    "description": "The thread's messages, oldest first.",
    "items": _obj(
        ["role", "content"], role=_str("user, assistant, tool, ..."), content=_str("Message text.")
    ),
}

TOOLS: tuple[ToolDefinition, ...] = (
    ToolDefinition(
        Kind.HISTORY,
        "open_view",
        "Open (or refresh) a named view in your window, e.g. a file you "
        "are reading. It stays in every request until you close it.",
        _obj(
            ["view_id", "content"],
            view_id=_str("A name for the view, e.g. file:src/app.py."),
            content=_str("What the view shows."),
        ),
        True,
    ),
    ToolDefinition(
        Kind.HISTORY,
        "close_view",
        "Close a view you opened, freeing its context.",
        _obj(["view_id"], view_id=_str("The view to close.")),
        True,
    ),
    ToolDefinition(
        Kind.HISTORY,
        "pin_block",
        "Pin a block of text to your window so it stays in every request.",
        _obj(
            ["block_id", "content"], block_id=_str("A name for the block."), content=_str("The text to keep.")
        ),
        True,
    ),
    ToolDefinition(
        Kind.HISTORY,
        "unpin_block",
        "Unpin a block you pinned.",
        _obj(["block_id"], block_id=_str("The block to unpin.")),
        True,
    ),
    ToolDefinition(
        Kind.MEMORIES,
        "write_scratchpad",
        "Replace your scratchpad (scratchpad memories) with new text. It is shown to you every turn.",
        _obj(["text"], text=_str("The whole new pad.")),
        True,
    ),
    ToolDefinition(
        Kind.MEMORIES,
        "write_memory_file",
        "Create or replace a markdown memory file (markdown_index "
        "memories). Its index line is shown every turn; the body only when you read it.",
        _obj(
            ["name", "body"],
            name=_str("File name, e.g. conventions.md."),
            body=_str("Markdown body."),
            index_line=_str("One line for the index; defaults to the name."),
        ),
        True,
    ),
    ToolDefinition(
        Kind.MEMORIES,
        "read_memory_file",
        "Read the body of a markdown memory file.",
        _obj(["name"], name=_str("File name from the memory index.")),
        False,
    ),
    ToolDefinition(
        Kind.MEMORIES,
        "delete_memory_file",
        "Delete a markdown memory file.",
        _obj(["name"], name=_str("File name from the memory index.")),
        True,
    ),
    ToolDefinition(
        Kind.TASKS,
        "create_task",
        "Add a task to your task list. Tasks it waits on go in blocked_by; the edges must not form a cycle.",
        _obj(
            ["title"],
            title=_str("Short title."),
            description=_str("Details."),
            blocked_by=_ids("Ids of existing tasks this one waits on."),
        ),
        True,
    ),
    ToolDefinition(
        Kind.TASKS,
        "update_task",
        "Change a task's status or the tasks it waits on.",
        _obj(
            ["task_id"],
            task_id=_int("The task."),
            status=_str("New status.", enum=_TASK_STATUS),
            add_blocked_by=_ids("Task ids to start waiting on."),
            remove_blocked_by=_ids("Task ids to stop waiting on."),
        ),
        True,
    ),
    ToolDefinition(
        Kind.TASKS, "list_tasks", "List every task with its status and blocked_by edges.", _obj([]), False
    ),
    ToolDefinition(
        Kind.BOARD,
        "create_issue",
        "File an issue on the run's shared board. It gets the id "
        "PREFIX-N, N counting per prefix across the whole run.",
        _obj(
            ["prefix", "title"],
            prefix=_str("Capital letters, e.g. ABC.", pattern="^[A-Z][A-Z0-9]{0,15}$"),
            title=_str("Short title."),
            body=_str("Details."),
        ),
        True,
    ),
    ToolDefinition(
        Kind.BOARD,
        "update_issue",
        "Change an issue's status or body.",
        _obj(
            ["issue_id"],
            issue_id=_str("e.g. ABC-4."),
            status=_str("New status.", enum=_ISSUE_STATUS),
            body=_str("New body; omit to keep it."),
        ),
        True,
    ),
    ToolDefinition(
        Kind.BOARD,
        "list_issues",
        "List the board's issues (id, title, status), optionally of one prefix or status.",
        _obj([], prefix=_str("Only this prefix."), status=_str("Only this status.", enum=_ISSUE_STATUS)),
        False,
    ),
    ToolDefinition(
        Kind.BOARD,
        "read_issue",
        "Read one issue with its body.",
        _obj(["issue_id"], issue_id=_str("e.g. ABC-4.")),
        False,
    ),
    ToolDefinition(
        Kind.SKILLS,
        "read_skill",
        "Load a skill from the catalogue: its body is returned and stays pinned in your window.",
        _obj(["name"], name=_str("Skill name from the catalogue.")),
        True,
    ),
    ToolDefinition(
        Kind.ARCHIVE,
        "archive_thread",
        "Archive a thread (title and messages) so it can leave your "
        "window and be found again later with search_archive.",
        _obj(["title", "messages"], title=_str("What the thread was about."), messages=_MESSAGES),
        True,
    ),
    ToolDefinition(
        Kind.ARCHIVE,
        "search_archive",
        "Search your archived threads. Best match first (a match in the title counts double; ties go to "
        "the newer thread), each with a score and a snippet whose matched words are in **bold**. Query "
        "language: every word must match, in any English form (migrations finds migration); \"a phrase\" "
        "matches the words in that order; migrat* matches a prefix; upgrade OR downgrade matches either "
        "(OR binds tighter than AND); -word leaves out threads containing it. Case and punctuation do not "
        "matter, and common words (the, of, how) outside quotes are ignored. For more results pass "
        "next_page_token back as page_token with the same query.",
        _obj(
            ["query"],
            query=_str(
                'Up to 32 terms, e.g. `alembic "upgrade failed" -flaky` or `deploy* rollback OR revert`.',
                maxLength=MAX_QUERY_CHARS,
            ),
            limit={
                "type": "integer",
                "minimum": 1,
                "maximum": 50,
                "description": "At most this many threads (default 5).",
            },
            page_token=_str("next_page_token of the previous result: the next threads of the same query."),
        ),
        False,
    ),
)
BY_NAME: dict[str, ToolDefinition] = {t.name: t for t in TOOLS}


def tools_for(kind: Kind | None) -> tuple[ToolDefinition, ...]:
    return TOOLS if kind is None else tuple(t for t in TOOLS if t.kind == kind)
