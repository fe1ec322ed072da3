"""Request ids (R49): a retry returns the first answer and applies nothing twice."""

from __future__ import annotations

import uuid

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import assert_refused
from tests.harness.modulestore import (
    Stub,
    bind,
    contents,
    events,
    messages,
    new_run,
    open_agent,
    open_bindings,
    write,
)


def test_r49_a_retried_write_applies_once(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    rid = uuid.uuid4().hex
    first = write(modulestore, agent, c.KIND_TASKS, request_id=rid, create_task=svc.CreateTask(title="once"))
    outbox = events(modulestore, agent.run_id)
    again = write(modulestore, agent, c.KIND_TASKS, request_id=rid, create_task=svc.CreateTask(title="once"))
    assert again == first and first.task_id == 1
    assert len(contents(modulestore, agent, c.KIND_TASKS).contents.tasks.tasks) == 1
    assert events(modulestore, agent.run_id) == outbox


def test_r49_a_request_id_reused_for_another_request_is_refused(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    rid = uuid.uuid4().hex
    write(
        modulestore,
        agent,
        c.KIND_HISTORY,
        request_id=rid,
        append_messages=svc.AppendMessages(messages=messages("one")),
    )
    assert_refused(
        lambda: write(
            modulestore,
            agent,
            c.KIND_HISTORY,
            request_id=rid,
            append_messages=svc.AppendMessages(messages=messages("two")),
        ),
        grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED",
    )
    assert [m.content for m in contents(modulestore, agent, c.KIND_HISTORY).contents.history.messages] == [
        "one"
    ]


def test_r49_a_retried_bind_returns_the_same_roster(modulestore: Stub) -> None:
    run, rid = new_run(), uuid.uuid4().hex
    first = bind(modulestore, run, "coder-0", open_bindings(), request_id=rid)
    outbox = events(modulestore, run)
    again = bind(modulestore, run, "coder-0", open_bindings(), request_id=rid)
    assert again.roster == first.roster
    assert events(modulestore, run) == outbox
    assert len(modulestore.ListStores(svc.ListStoresRequest(run_id=run, kind=c.KIND_HISTORY)).stores) == 1


def test_r49_a_retried_tool_call_applies_once(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    call = svc.CallToolRequest(
        request_id=uuid.uuid4().hex,
        run_id=agent.run_id,
        agent_id=agent.agent_id,
        tool_name="create_issue",
        arguments_json='{"prefix": "ABC", "title": "once"}',
    )
    assert modulestore.CallTool(call) == modulestore.CallTool(call)
    assert [i.id for i in contents(modulestore, agent, c.KIND_BOARD).contents.board.issues] == ["ABC-1"]


def test_r49_without_a_request_id_each_call_applies(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    for _ in range(2):
        write(modulestore, agent, c.KIND_TASKS, create_task=svc.CreateTask(title="twice"))
    assert len(contents(modulestore, agent, c.KIND_TASKS).contents.tasks.tasks) == 2
