"""The six kinds (R1) and what is fixed per kind (R3)."""

from __future__ import annotations

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import assert_refused, refused
from tests.harness.modulestore import (
    KINDS,
    Stub,
    b,
    bind,
    contents,
    events,
    fork_agent,
    new_run,
    open_agent,
    open_bindings,
    write,
)

SIX = "history, memories, tasks, board, skills, archive"


def test_r1_unknown_kind_value_in_a_plan_is_refused_naming_the_six(modulestore: Stub) -> None:
    run = new_run()
    bindings = [*open_bindings(), b(7, ms.BIND_ACTION_CREATE)]
    code, reason, _, message = refused(lambda: bind(modulestore, run, "coder-0", bindings))
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_KIND")
    assert "'7'" in message and SIX in message
    # Nothing was bound: the run still has no instance.
    assert_refused(
        lambda: modulestore.ListStores(svc.ListStoresRequest(run_id=run)),
        grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND",
    )


def test_r1_unspecified_kind_is_refused_too(modulestore: Stub) -> None:
    bindings = [b(c.KIND_UNSPECIFIED, ms.BIND_ACTION_CREATE), *open_bindings()]
    code, reason, _, message = refused(lambda: bind(modulestore, new_run(), "coder-0", bindings))
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_KIND") and SIX in message


def test_r1_unknown_kind_filter_is_refused_in_reads(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    for call in (
        lambda: modulestore.ListStores(svc.ListStoresRequest(run_id=agent.run_id, kind=42)),
        lambda: modulestore.ListTools(svc.ListToolsRequest(kind=42)),
    ):
        code, reason, _, message = refused(call)
        assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_KIND") and SIX in message


def test_r1_a_roster_has_exactly_the_six_kinds_in_kind_order(modulestore: Stub) -> None:
    resp = modulestore.BindInstance(
        svc.BindInstanceRequest(
            run_id=new_run(),
            agent_id="coder-0",
            profile="coder",
            cause="open",
            bindings=[b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE), b(c.KIND_TASKS, ms.BIND_ACTION_CREATE)],
        )
    )
    assert [r.kind for r in resp.roster] == KINDS
    assert [r.enabled for r in resp.roster] == [True, False, True, False, False, False]
    assert [r.store_id for r in resp.roster] == ["history-0", "", "tasks-0", "", "", ""]


def test_r3_contribution_telemetry_and_copy_rule_do_not_depend_on_run_or_profile(modulestore: Stub) -> None:
    """Two agents of differently configured profiles (name, caps, memory scope) in different runs write the
    same task list: the same contribution, the same write events, and a fork copies it the same way. (The
    tools are per kind by construction: ListTools names no run or profile.)"""
    seen = []
    for name, caps, scope in (
        ("planner", None, c.MEMORY_SCOPE_INSTANCE),
        ("reviewer", c.Caps(max_items=50, max_bytes=10_000), c.MEMORY_SCOPE_AGENT),
    ):
        agent = open_agent(modulestore, new_run(), f"{name}-0", caps=caps, scope=scope)
        write(modulestore, agent, c.KIND_TASKS, create_task=svc.CreateTask(title="ship it"))
        write(modulestore, agent, c.KIND_TASKS, create_task=svc.CreateTask(title="test it", blocked_by=[1]))
        prompt = modulestore.RenderPrompt(
            svc.RenderPromptRequest(run_id=agent.run_id, agent_id=agent.agent_id)
        )
        tasks = next(x for x in prompt.contributions if x.kind == c.KIND_TASKS)
        rendered = [(m.role, m.section, m.content) for m in tasks.messages]
        outbox = events(modulestore, agent.run_id)
        telemetry = [e.write for e in outbox if e.kind == c.KIND_TASKS and e.WhichOneof("body") == "write"]
        copy = fork_agent(modulestore, agent, f"{name}-1")
        copied = contents(modulestore, copy, c.KIND_TASKS)
        own = copy[c.KIND_TASKS] != agent[c.KIND_TASKS]
        forked = (copy.roster[c.KIND_TASKS].origin, own, copied.contents)
        seen.append((rendered, telemetry, forked))
    assert len(seen[0][1]) == 2 and seen[0][2][1]
    assert seen[0] == seen[1]
