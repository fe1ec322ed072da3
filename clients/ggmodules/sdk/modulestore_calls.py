"""Plans for every ModuleStore RPC a runtime makes: the sixteen write ops, reads, prompt and tools.

Functions taking a `ModuleRef` act as the holder it names (the acting agent every write is attributed
to, R28); the rest take ids.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from google.protobuf.message import Message

from ggmodules.modulestore.v1 import modulestore_service_pb2 as pb
from ggmodules.sdk import contents as mc
from ggmodules.sdk import decode, encode
from ggmodules.sdk import results as r
from ggmodules.sdk.encode import MessageInput
from ggmodules.sdk.plans import ModuleRef, Plan, mutation, read
from ggmodules.sdk.words import IssueStatus, Kind, SearchMode, TaskStatus

C = TypeVar("C", bound=Any)


def _write(ref: ModuleRef, op: str, body: Message) -> Plan[r.WriteResult]:
    """One Write of op `op` (the WriteRequest oneof field) made as the holder `ref` names."""
    request = pb.WriteRequest(run_id=ref.run_id, agent_id=ref.agent_id, store_id=ref.store_id)
    getattr(request, op).CopyFrom(body)
    return mutation("modulestore", "Write", request, decode.write_result)


# history


def set_system_prompt(ref: ModuleRef, text: str) -> Plan[r.WriteResult]:
    """Fills the window's system-prompt slot; a second set is refused (R9)."""
    return _write(ref, "set_system_prompt", pb.SetSystemPrompt(text=text))


def append(ref: ModuleRef, role: str, content: str, *, start_turn: bool = False) -> Plan[r.WriteResult]:
    """Appends one message to the thread; `start_turn` advances the turn counter first."""
    return extend(ref, [(role, content)], start_turn=start_turn)


def extend(ref: ModuleRef, messages: Iterable[MessageInput], *,
           start_turn: bool = False) -> Plan[r.WriteResult]:
    """Appends (role, content) messages in one write."""
    body = pb.AppendMessages(messages=encode.messages(messages), start_turn=start_turn)
    return _write(ref, "append_messages", body)


def open_view(ref: ModuleRef, view_id: str, content: str) -> Plan[r.WriteResult]:
    return _write(ref, "open_view", pb.OpenView(view_id=view_id, content=content))


def close_view(ref: ModuleRef, view_id: str) -> Plan[r.WriteResult]:
    return _write(ref, "close_view", pb.CloseView(view_id=view_id))


def pin(ref: ModuleRef, block_id: str, content: str) -> Plan[r.WriteResult]:
    return _write(ref, "pin_block", pb.PinBlock(block_id=block_id, content=content))


def unpin(ref: ModuleRef, block_id: str) -> Plan[r.WriteResult]:
    return _write(ref, "unpin_block", pb.UnpinBlock(block_id=block_id))


# memories


def write_pad(ref: ModuleRef, text: str) -> Plan[r.WriteResult]:
    """Replaces the scratchpad's text."""
    return _write(ref, "write_pad", pb.WritePad(text=text))


def write_file(ref: ModuleRef, name: str, body: str, *, index_line: str = "") -> Plan[r.WriteResult]:
    """Writes a markdown-index file; `index_line` is what the index renders for it."""
    return _write(ref, "write_file", pb.WriteFile(name=name, body=body, index_line=index_line))


def delete_file(ref: ModuleRef, name: str) -> Plan[r.WriteResult]:
    return _write(ref, "delete_file", pb.DeleteFile(name=name))


# tasks


def create_task(ref: ModuleRef, title: str, *, description: str = "",
                blocked_by: Iterable[int] = ()) -> Plan[int]:
    """A new task; returns its id. A dangling `blocked_by` edge is refused, the list unchanged."""
    return _write(ref, "create_task", pb.CreateTask(title=title, description=description,
                                                 blocked_by=list(blocked_by))).map(lambda w: w.task_id)


def update_task(ref: ModuleRef, task_id: int, *, status: TaskStatus | str | None = None,
                add_blocked_by: Iterable[int] = (),
                remove_blocked_by: Iterable[int] = ()) -> Plan[r.WriteResult]:
    """Changes a task's status and edges; an edge closing a cycle is refused, the list unchanged."""
    body = pb.UpdateTask(task_id=task_id, status=encode.task_status(status),
                         add_blocked_by=list(add_blocked_by), remove_blocked_by=list(remove_blocked_by))
    return _write(ref, "update_task", body)


# board


def create_issue(ref: ModuleRef, prefix: str, title: str, *, body: str = "") -> Plan[str]:
    """A new issue; returns its id, `PREFIX-N` (one counter per prefix per run, R14)."""
    return _write(ref, "create_issue", pb.CreateIssue(prefix=prefix, title=title, body=body)).map(
        lambda w: w.issue_id)


def update_issue(ref: ModuleRef, issue_id: str, *, status: IssueStatus | str | None = None,
                 body: str = "") -> Plan[r.WriteResult]:
    """Changes an issue's status and, when `body` is not empty, its body."""
    update = pb.UpdateIssue(issue_id=issue_id, status=encode.issue_status(status), body=body)
    return _write(ref, "update_issue", update)


# skills


def put_skill(ref: ModuleRef, name: str, description: str, body: str) -> Plan[r.WriteResult]:
    """Adds or replaces a skill in the catalogue (shared by every holder of the directory, R16)."""
    return _write(ref, "put_skill", pb.PutSkill(name=name, description=description, body=body))


def read_skill(ref: ModuleRef, name: str) -> Plan[r.WriteResult]:
    """Adds a skill to this holder's read set: its body is pinned in the window from now on (R7)."""
    return _write(ref, "read_skill", pb.ReadSkill(name=name))


# archive


def archive_thread(ref: ModuleRef, title: str, messages: Iterable[MessageInput]) -> Plan[int]:
    """Archives a thread of (role, content) messages; returns its id."""
    body = pb.ArchiveThread(title=title, messages=encode.messages(messages))
    return _write(ref, "archive_thread", body).map(lambda w: w.thread_id)


def search_archive(run_id: str, agent_id: str, store_id: str, query: str, *, page_size: int = 0,
                   page_token: str = "", mode: SearchMode | str = SearchMode.TEXT) -> Plan[r.SearchPage]:
    request = pb.SearchArchiveRequest(run_id=run_id, agent_id=agent_id, store_id=store_id, query=query,
                                      page_size=page_size, page_token=page_token,
                                      mode=encode.search_mode(mode))
    return read("modulestore", "SearchArchive", request, decode.search_page)


def search(ref: ModuleRef, query: str, *, page_size: int = 0, page_token: str = "",
           mode: SearchMode | str = SearchMode.TEXT) -> Plan[r.SearchPage]:
    """One page of the archive's threads matching `query`, best first, each with its score and snippet.
    The query language: words (all must match), "a phrase", prefix*, a OR b, -excluded (see the
    SearchArchiveRequest.query comment). `page_token`: the previous page's `next_page_token`."""
    return search_archive(ref.run_id, ref.agent_id, ref.store_id, query, page_size=page_size,
                          page_token=page_token, mode=mode)


# reading stores


def get_store(run_id: str, store_id: str, agent_id: str, *, after_seq: int = 0,
              page_size: int = 0) -> Plan[r.Store]:
    """A store with its holders, figures and contents as `agent_id` (a holder) sees them. History:
    messages (or an archive's threads) after `after_seq`, at most `page_size` (0: the default page of
    1,000; never more than 1,000)."""
    request = pb.GetStoreRequest(run_id=run_id, store_id=store_id, agent_id=agent_id, after_seq=after_seq,
                                 page_size=page_size)
    return read("modulestore", "GetStore", request, lambda resp: decode.store(resp.store, resp.contents))


def store(ref: ModuleRef) -> Plan[r.Store]:
    """This store: holders, figures, caps and contents."""
    return get_store(ref.run_id, ref.store_id, ref.agent_id)


def _contents(plan: Plan[r.Store], cls: type[C]) -> Plan[C]:
    def pick(s: r.Store) -> C:
        if not isinstance(s.contents, cls):
            raise TypeError(f"{s.id} holds {type(s.contents).__name__}, not {cls.__name__}")
        return s.contents

    return plan.map(pick)


def history(ref: ModuleRef, *, after_seq: int = 0, page_size: int = 0) -> Plan[mc.HistoryContents]:
    """The window: system prompt, messages after `after_seq` (at most `page_size`; 0: the default page of
    1,000), views, pins. `message_count` tells whether more messages follow."""
    return _contents(get_store(ref.run_id, ref.store_id, ref.agent_id, after_seq=after_seq,
                               page_size=page_size), mc.HistoryContents)


def memories(ref: ModuleRef) -> Plan[mc.MemoriesContents]:
    return _contents(store(ref), mc.MemoriesContents)


def tasks(ref: ModuleRef) -> Plan[mc.TasksContents]:
    return _contents(store(ref), mc.TasksContents)


def board(ref: ModuleRef) -> Plan[mc.BoardContents]:
    return _contents(store(ref), mc.BoardContents)


def skills(ref: ModuleRef) -> Plan[mc.SkillsContents]:
    """The catalogue and this holder's read set."""
    return _contents(store(ref), mc.SkillsContents)


def archive(ref: ModuleRef) -> Plan[mc.ArchiveContents]:
    return _contents(store(ref), mc.ArchiveContents)


def list_stores(run_id: str, kind: Kind | str | None = None, *, page_size: int = 0,
                page_token: str = "") -> Plan[r.Page[r.Store]]:
    """The run's stores (of one kind when given), without contents."""
    request = pb.ListStoresRequest(run_id=run_id, kind=encode.kind(kind), page_size=page_size,
                                   page_token=page_token)
    return read("modulestore", "ListStores", request,
                lambda resp: r.Page(tuple(decode.store(s) for s in resp.stores), resp.next_page_token))


# prompt and tools


def render_prompt(run_id: str, agent_id: str) -> Plan[list[r.Contribution]]:
    """What each module the agent holds puts into its prompt, in kind order (R10)."""
    return read("modulestore", "RenderPrompt", pb.RenderPromptRequest(run_id=run_id, agent_id=agent_id),
                lambda resp: [decode.contribution(c) for c in resp.contributions])


def prompt(agent: r.Instance) -> Plan[list[r.Contribution]]:
    """This agent's prompt, module by module, in kind order (R10)."""
    return render_prompt(agent.run_id, agent.agent_id)


def list_tools(kind: Kind | str | None = None) -> Plan[list[r.ToolDefinition]]:
    """The tool definitions a runtime hands the model (R8), of one kind when given."""
    return read("modulestore", "ListTools", pb.ListToolsRequest(kind=encode.kind(kind)),
                lambda resp: [decode.tool(t) for t in resp.tools])


def held_tools(agent: r.Instance) -> Plan[list[r.ToolDefinition]]:
    """The tools of the kinds this agent holds: what its runtime hands the model (R8)."""
    held = {row.kind for row in agent.roster if row.enabled}
    return list_tools().map(lambda tools: [t for t in tools if t.kind in held])


def call_tool(run_id: str, agent_id: str, name: str,
              arguments: Mapping[str, Any] | str) -> Plan[r.ToolResult]:
    """Executes one tool call the model made on behalf of `agent_id`."""
    request = pb.CallToolRequest(run_id=run_id, agent_id=agent_id, tool_name=name,
                                 arguments_json=encode.arguments_json(arguments))
    return mutation("modulestore", "CallTool", request, lambda resp: r.ToolResult(resp.result_json))


def agent_call_tool(agent: r.Instance, name: str, arguments: Mapping[str, Any] | str) -> Plan[r.ToolResult]:
    """Executes one tool call the model made on behalf of this agent."""
    return call_tool(agent.run_id, agent.agent_id, name, arguments)
