"""Tool definitions for every kind and the execution of tool calls (R8)."""

from __future__ import annotations

import json

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import assert_refused, refused
from tests.harness.modulestore import (
    KINDS,
    Agent,
    Stub,
    b,
    bind,
    contents,
    new_run,
    open_agent,
    shape,
    streams,
)


def call(stub: Stub, agent: Agent, tool: str, **args: object) -> dict:  # type: ignore[type-arg]
    resp = stub.CallTool(
        svc.CallToolRequest(
            run_id=agent.run_id, agent_id=agent.agent_id, tool_name=tool, arguments_json=json.dumps(args)
        )
    )
    return json.loads(resp.result_json)  # type: ignore[no-any-return]


def test_r8_every_kind_publishes_tools_with_a_schema(modulestore: Stub) -> None:
    tools = modulestore.ListTools(svc.ListToolsRequest()).tools
    assert {t.kind for t in tools} == set(KINDS)
    for t in tools:
        schema = json.loads(t.parameters_json_schema)
        assert t.name and t.description and schema["type"] == "object"
    board = modulestore.ListTools(svc.ListToolsRequest(kind=c.KIND_BOARD)).tools
    assert {t.name for t in board} == {"create_issue", "update_issue", "list_issues", "read_issue"}
    archive = modulestore.ListTools(svc.ListToolsRequest(kind=c.KIND_ARCHIVE)).tools
    assert {t.name for t in archive} == {"archive_thread", "search_archive"}
    assert len({t.name for t in tools}) == len(tools)


def test_r8_board_is_reachable_through_its_tools(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    assert call(modulestore, a, "create_issue", prefix="ABC", title="first") == {"issue_id": "ABC-1"}
    assert call(modulestore, a, "create_issue", prefix="XY", title="other") == {"issue_id": "XY-1"}
    updated = call(modulestore, a, "update_issue", issue_id="ABC-1", status="in_progress", body="started")
    assert updated == {"issue": {"id": "ABC-1", "title": "first", "status": "in_progress", "body": "started"}}
    assert call(modulestore, a, "list_issues", prefix="ABC") == {
        "issues": [{"id": "ABC-1", "title": "first", "status": "in_progress"}]
    }
    assert call(modulestore, a, "read_issue", issue_id="XY-1")["issue"]["title"] == "other"
    # A tool call is a write like any other, attributed to the caller.
    writes = [ev for ev in streams(modulestore, a.run_id)["coder-0"] if ev.WhichOneof("body") == "write"]
    assert [w.write.op for w in writes] == ["create_issue", "create_issue", "update_issue"]


def test_r8_archive_is_reachable_through_its_tools(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    for title, text in (("flaky test", "the retry loop hid a race"), ("deploy", "blue green rollout")):
        result = call(
            modulestore, a, "archive_thread", title=title, messages=[{"role": "user", "content": text}]
        )
        assert set(result) == {"thread_id"}
    found = call(modulestore, a, "search_archive", query="RACE retry")
    assert [t["title"] for t in found["threads"]] == ["flaky test"]
    via_rpc = modulestore.SearchArchive(
        svc.SearchArchiveRequest(
            run_id=a.run_id, agent_id=a.agent_id, store_id=a[c.KIND_ARCHIVE], query="rollout"
        )
    )
    assert [t.title for t in via_rpc.threads] == ["deploy"]


def test_r8_tool_calls_for_the_other_kinds(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    assert call(modulestore, a, "create_task", title="a") == {"task_id": 1}
    assert call(modulestore, a, "create_task", title="b", blocked_by=[1]) == {"task_id": 2}
    assert call(modulestore, a, "update_task", task_id=1, status="done")["task"]["status"] == "done"
    assert [t["id"] for t in call(modulestore, a, "list_tasks")["tasks"]] == [1, 2]
    call(modulestore, a, "write_scratchpad", text="pad")
    call(modulestore, a, "pin_block", block_id="b", content="kept")
    call(modulestore, a, "open_view", view_id="v", content="seen")
    call(modulestore, a, "close_view", view_id="v")
    history = contents(modulestore, a, c.KIND_HISTORY).contents.history
    assert [p.id for p in history.pinned_blocks] == ["b"] and list(history.open_views) == []
    assert contents(modulestore, a, c.KIND_MEMORIES).contents.memories.entries[0].body == "pad"


def test_r8_skills_and_markdown_memories_through_tools(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0", strategy=c.MEMORY_STRATEGY_MARKDOWN_INDEX)
    modulestore.Write(
        svc.WriteRequest(
            run_id=run,
            agent_id="coder-0",
            store_id=a[c.KIND_SKILLS],
            put_skill=svc.PutSkill(name="git", description="d", body="GIT BODY"),
        )
    )
    assert call(modulestore, a, "read_skill", name="git") == {"name": "git", "body": "GIT BODY"}
    call(modulestore, a, "write_memory_file", name="n.md", body="BODY", index_line="notes")
    assert call(modulestore, a, "read_memory_file", name="n.md") == {
        "name": "n.md",
        "body": "BODY",
        "index_line": "notes",
    }
    call(modulestore, a, "delete_memory_file", name="n.md")
    assert_refused(
        lambda: call(modulestore, a, "read_memory_file", name="n.md"),
        grpc.StatusCode.NOT_FOUND, "ENTRY_NOT_FOUND",
    )
    assert_refused(
        lambda: call(modulestore, a, "write_scratchpad", text="wrong strategy"),
        grpc.StatusCode.FAILED_PRECONDITION, "WRONG_KIND",
    )


def test_r8_bad_tool_calls_are_refused(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    bare = bind(modulestore, run, "bare-0", [b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE)])
    cases = [
        (lambda: call(modulestore, a, "rm_rf"), grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_TOOL"),
        (lambda: call(modulestore, a, "create_task"), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD"),
        (
            lambda: call(modulestore, a, "create_task", title=3),
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_FIELD",
        ),
        (
            lambda: call(modulestore, a, "create_issue", prefix="abc", title="t"),
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_FIELD",
        ),
        (
            lambda: call(modulestore, a, "update_task", task_id=1, status="finished"),
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_FIELD",
        ),
        (
            lambda: call(modulestore, bare, "create_task", title="t"),
            grpc.StatusCode.FAILED_PRECONDITION,
            "KIND_NOT_HELD",
        ),
        (
            lambda: modulestore.CallTool(
                svc.CallToolRequest(
                    run_id=run, agent_id="coder-0", tool_name="list_tasks", arguments_json="{not json"
                )
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_FIELD",
        ),
    ]
    before = streams(modulestore, run)
    for fn, code, reason in cases:
        assert refused(fn)[:2] == (code, reason)
    assert streams(modulestore, run) == before
    assert shape(before["bare-0"])[0] == ("roster", "")
