"""Bad input (R47, R48): each refusal is a specific status with an ErrorInfo reason, and it changes
nothing: the store reads the same and no event was appended."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import Refusal, assert_refused, credit, error_metadata, refused, status_of
from tests.harness.modulestore import (
    KINDS,
    Agent,
    Stub,
    append,
    b,
    bind,
    contents,
    events,
    messages,
    new_run,
    open_agent,
    spawn_agent,
    write,
)

LIMIT = 256 * 1024


def refused_unchanged(
    stub: Stub, agent: Agent, kind: int, call: Callable[[], object]
) -> Refusal:
    """Refuses `call` and proves the store and the run's outbox did not move."""
    before, outbox = contents(stub, agent, kind), events(stub, agent.run_id)
    result = refused(call)
    assert contents(stub, agent, kind) == before
    assert events(stub, agent.run_id) == outbox
    return result


@pytest.fixture()
def agent(modulestore: Stub) -> Agent:
    a = open_agent(modulestore, new_run(), "coder-0")
    append(modulestore, a, "hello")
    return a


def test_r47_write_by_an_agent_that_does_not_hold_the_store(modulestore: Stub, agent: Agent) -> None:
    other = open_agent(modulestore, agent.run_id, "coder-1")
    intruder = Agent(agent.run_id, other.agent_id, agent.roster)
    code, reason, _, message = refused_unchanged(
        modulestore, agent, c.KIND_HISTORY, lambda: append(modulestore, intruder, "not mine")
    )
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "NOT_A_HOLDER") and "coder-1" in message


@pytest.mark.parametrize("call", ["Write", "GetStore", "SearchArchive"])
def test_r50_not_a_holder_lists_the_callers_own_stores_not_the_target(modulestore: Stub, call: str) -> None:
    run = new_run()
    owner = open_agent(modulestore, run, "coder-0")
    caller = open_agent(modulestore, run, "coder-1")
    target = owner[c.KIND_ARCHIVE]  # coder-0's own archive: coder-1 holds archive-1, not this one
    own = [caller[k] for k in KINDS]
    asked = {
        "Write": lambda: modulestore.Write(
            svc.WriteRequest(
                run_id=run, agent_id="coder-1", store_id=target,
                archive_thread=svc.ArchiveThread(title="t", messages=messages("x")),
            )
        ),
        "GetStore": lambda: modulestore.GetStore(
            svc.GetStoreRequest(run_id=run, agent_id="coder-1", store_id=target)
        ),
        "SearchArchive": lambda: modulestore.SearchArchive(
            svc.SearchArchiveRequest(run_id=run, agent_id="coder-1", store_id=target, query="x")
        ),
    }[call]

    with pytest.raises(grpc.RpcError) as caught:
        asked()

    err = caught.value
    assert status_of(err) == (grpc.StatusCode.PERMISSION_DENIED, "NOT_A_HOLDER")
    metadata = error_metadata(err)
    assert metadata["store_id"] == target and metadata["agent_id"] == "coder-1"
    assert metadata["held"].split(",") == own and target not in own
    message = err.details() or ""  # type: ignore[attr-defined]
    roster_part = message.split("the stores on its roster are ", 1)[1]
    assert roster_part.split(", ") == own


def test_r47_write_by_a_read_only_holder(modulestore: Stub) -> None:
    run = new_run()
    owner = open_agent(modulestore, run, "coder-0")
    # A subagent whose profile inherits the parent's memories read-only.
    reader = spawn_agent(
        modulestore, owner, "reader-0", scope=c.MEMORY_SCOPE_INHERITED, memories_read_only=True
    )
    assert reader[c.KIND_MEMORIES] == owner[c.KIND_MEMORIES] and not reader.roster[c.KIND_MEMORIES].may_write
    code, reason, *_ = refused_unchanged(
        modulestore,
        owner,
        c.KIND_MEMORIES,
        lambda: write(modulestore, reader, c.KIND_MEMORIES, write_pad=svc.WritePad(text="scribble")),
    )
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "READ_ONLY")


def test_r47_write_over_a_cap(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0", caps=c.Caps(max_items=1))
    append(modulestore, a, "one")
    code, reason, *_ = refused_unchanged(
        modulestore, a, c.KIND_HISTORY, lambda: append(modulestore, a, "two")
    )
    assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_EXCEEDED")


def test_r47_task_cycle_and_dangling_edge(modulestore: Stub, agent: Agent) -> None:
    for title, blocked in (("a", []), ("b", [1]), ("c", [2])):
        write(modulestore, agent, c.KIND_TASKS, create_task=svc.CreateTask(title=title, blocked_by=blocked))
    code, reason, *_ = refused_unchanged(
        modulestore,
        agent,
        c.KIND_TASKS,
        lambda: write(
            modulestore, agent, c.KIND_TASKS, update_task=svc.UpdateTask(task_id=1, add_blocked_by=[3])
        ),
    )
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "TASK_CYCLE")
    code, reason, *_ = refused_unchanged(
        modulestore,
        agent,
        c.KIND_TASKS,
        lambda: write(
            modulestore, agent, c.KIND_TASKS, update_task=svc.UpdateTask(task_id=2, add_blocked_by=[2])
        ),
    )
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "TASK_CYCLE")
    code, reason, *_ = refused_unchanged(
        modulestore,
        agent,
        c.KIND_TASKS,
        lambda: write(
            modulestore, agent, c.KIND_TASKS, create_task=svc.CreateTask(title="d", blocked_by=[1, 99])
        ),
    )
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "DANGLING_EDGE")


def test_r47_second_system_prompt(modulestore: Stub, agent: Agent) -> None:
    write(modulestore, agent, c.KIND_HISTORY, set_system_prompt=svc.SetSystemPrompt(text="first"))
    code, reason, *_ = refused_unchanged(
        modulestore,
        agent,
        c.KIND_HISTORY,
        lambda: write(
            modulestore, agent, c.KIND_HISTORY, set_system_prompt=svc.SetSystemPrompt(text="second")
        ),
    )
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "SYSTEM_PROMPT_ALREADY_SET")


def test_r47_unknown_run_agent_and_store(modulestore: Stub, agent: Agent) -> None:
    cases = [
        (Agent(new_run(), agent.agent_id, agent.roster), "RUN_NOT_FOUND"),
        (Agent(agent.run_id, "ghost-0", agent.roster), "AGENT_NOT_FOUND"),
        (
            Agent(agent.run_id, agent.agent_id, {c.KIND_HISTORY: c.RosterRow(store_id="history-99")}),
            "STORE_NOT_FOUND",
        ),
    ]
    for who, _ in cases:
        credit(who.run_id, who.agent_id)  # a valid credential for an agent ModuleStore does not know
    for who, expected in cases:
        code, reason, *_ = refused_unchanged(
            modulestore, agent, c.KIND_HISTORY, lambda who=who: append(modulestore, who, "lost")
        )
        assert (code, reason) == (grpc.StatusCode.NOT_FOUND, expected)
    assert_refused(
        lambda: modulestore.GetStore(svc.GetStoreRequest(run_id=agent.run_id, store_id="tasks-42")),
        grpc.StatusCode.NOT_FOUND, "STORE_NOT_FOUND",
    )
    credit(agent.run_id, "ghost-0")
    assert_refused(
        lambda: modulestore.RenderPrompt(svc.RenderPromptRequest(run_id=agent.run_id, agent_id="ghost-0")),
        grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND",
    )


def test_r47_oversized_message(modulestore: Stub, agent: Agent) -> None:
    code, reason, _, message = refused_unchanged(
        modulestore, agent, c.KIND_HISTORY, lambda: append(modulestore, agent, "ok", "x" * (LIMIT + 1))
    )
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "TOO_LARGE") and "[1].content" in message
    append(modulestore, agent, "x" * LIMIT)


def test_r47_missing_fields_are_invalid_argument(modulestore: Stub, agent: Agent) -> None:
    calls = [
        lambda: modulestore.Write(
            svc.WriteRequest(run_id=agent.run_id, agent_id=agent.agent_id, store_id=agent[c.KIND_HISTORY])
        ),
        lambda: append(modulestore, Agent(agent.run_id, "", agent.roster), "x"),
        lambda: write(modulestore, agent, c.KIND_HISTORY, append_messages=svc.AppendMessages()),
        lambda: write(
            modulestore,
            agent,
            c.KIND_HISTORY,
            append_messages=svc.AppendMessages(messages=[ms.MessageInput(content="no role")]),
        ),
        lambda: bind(modulestore, agent.run_id, "coder-9", [b(c.KIND_HISTORY, ms.BIND_ACTION_UNSPECIFIED)]),
        lambda: bind(modulestore, agent.run_id, "coder-9", [b(c.KIND_HISTORY, ms.BIND_ACTION_FORK)]),
    ]
    for call in calls:
        code, reason, *_ = refused_unchanged(modulestore, agent, c.KIND_HISTORY, call)
        assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")


def test_r48_a_refused_bind_binds_nothing(modulestore: Stub, agent: Agent) -> None:
    """The plan fails on its last binding (a missing source store): no store was minted, no event."""
    before = modulestore.ListStores(svc.ListStoresRequest(run_id=agent.run_id))
    code, reason, *_ = refused_unchanged(
        modulestore,
        agent,
        c.KIND_HISTORY,
        lambda: bind(
            modulestore,
            agent.run_id,
            "coder-1",
            [
                b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
                b(c.KIND_TASKS, ms.BIND_ACTION_CREATE),
                b(c.KIND_ARCHIVE, ms.BIND_ACTION_FORK, source_store_id="archive-77"),
            ],
        ),
    )
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "STORE_NOT_FOUND")
    assert modulestore.ListStores(svc.ListStoresRequest(run_id=agent.run_id)) == before
    # The ids that refused bind would have minted are still the next ones handed out.
    again = open_agent(modulestore, agent.run_id, "coder-1")
    assert (again[c.KIND_HISTORY], again[c.KIND_TASKS]) == ("history-1", "tasks-1")


def test_r36_r48_rebinding_an_agent_is_refused_and_changes_nothing(modulestore: Stub, agent: Agent) -> None:
    code, reason, *_ = refused_unchanged(
        modulestore, agent, c.KIND_HISTORY, lambda: open_agent(modulestore, agent.run_id, agent.agent_id)
    )
    assert (code, reason) == (grpc.StatusCode.ALREADY_EXISTS, "ALREADY_EXISTS")


def test_r47_source_of_the_wrong_kind(modulestore: Stub, agent: Agent) -> None:
    code, reason, *_ = refused_unchanged(
        modulestore,
        agent,
        c.KIND_HISTORY,
        lambda: bind(
            modulestore,
            agent.run_id,
            "coder-1",
            [b(c.KIND_HISTORY, ms.BIND_ACTION_FORK, source_store_id=agent[c.KIND_TASKS])],
        ),
    )
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "WRONG_KIND")


def test_r34_r47_store_ids_repeat_across_runs_and_a_write_reaches_only_the_run_it_names(
    modulestore: Stub, agent: Agent
) -> None:
    """Store ids count per run (R34), so they repeat across runs: a write names its run and changes only that
    run's store; an agent id the named run does not have is refused, changing nothing (R47, R48).

    Each agent writes with its own run's credential (the wallet picks it by run and agent id); R50's "a
    credential for one run opens nothing in another" is tests/auth/test_r50_credentials.py."""
    stranger = open_agent(modulestore, new_run(), "coder-0")
    assert stranger[c.KIND_HISTORY] == agent[c.KIND_HISTORY]
    mine, outbox = contents(modulestore, agent, c.KIND_HISTORY), events(modulestore, agent.run_id)
    append(modulestore, stranger, "elsewhere")
    # This run's store of the same id reads exactly as before (contents and figures), its outbox too.
    assert contents(modulestore, agent, c.KIND_HISTORY) == mine
    assert [m.content for m in mine.contents.history.messages] == ["hello"]
    assert events(modulestore, agent.run_id) == outbox
    theirs = contents(modulestore, stranger, c.KIND_HISTORY).contents.history
    assert [m.content for m in theirs.messages] == ["elsewhere"]
    credit(agent.run_id, "coder-7")
    code, reason, *_ = refused_unchanged(
        modulestore,
        agent,
        c.KIND_HISTORY,
        lambda: modulestore.Write(
            svc.WriteRequest(
                run_id=agent.run_id,
                agent_id="coder-7",
                store_id=agent[c.KIND_HISTORY],
                append_messages=svc.AppendMessages(messages=messages("x")),
            )
        ),
    )
    assert (code, reason) == (grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND")


def test_r47_malformed_values_are_invalid_argument_never_internal(modulestore: Stub, agent: Agent) -> None:
    calls = [
        lambda: write(modulestore, agent, c.KIND_TASKS, update_task=svc.UpdateTask(task_id=1, status=99)),
        lambda: bind(modulestore, agent.run_id, "coder-9", [b(c.KIND_HISTORY, 9)]),
        lambda: bind(modulestore, agent.run_id, "coder-9",
                     [b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE, origin=42)]),
        lambda: append(modulestore, agent, "nul \x00 inside"),
        lambda: append(modulestore, Agent(agent.run_id, "coder\x00", agent.roster), "x"),
        lambda: bind(modulestore, agent.run_id, "coder\n9", [b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE)]),
        lambda: modulestore.ReadOutbox(svc.ReadOutboxRequest(run_id="run\x00")),
        lambda: modulestore.CallTool(svc.CallToolRequest(
            run_id=agent.run_id, agent_id=agent.agent_id, tool_name="pin_block",
            arguments_json='{"block_id": "a\\u0000", "content": "x"}')),
    ]
    for call in calls:
        code, reason, *_ = refused_unchanged(modulestore, agent, c.KIND_HISTORY, call)
        assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
