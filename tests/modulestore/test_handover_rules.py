"""What a carried module becomes under its successor (R21-R24), and the predecessor after it handed on."""

from __future__ import annotations

import json

import grpc
import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import module_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import assert_refused, error_metadata, refused, status_of
from tests.harness.handing import carry, carry_all, hand_over, holders, store
from tests.harness.modulestore import Stub, append, contents, events, new_run, open_agent, write


def test_r21_carried_modules_take_the_successors_caps_and_mode(modulestore: Stub) -> None:
    p = open_agent(modulestore, new_run(), "planner-0")
    write(modulestore, p, c.KIND_MEMORIES, write_pad=svc.WritePad(text="notes"))
    kinds = carry_all(
        memories=carry(c.KIND_MEMORIES, may_write=False, caps=c.Caps(max_items=3, max_bytes=100)),
        tasks=carry(c.KIND_TASKS, caps=c.Caps(max_items=7)),
    )
    coder, _ = hand_over(modulestore, p, "coder-0", kinds)
    assert coder.roster[c.KIND_MEMORIES].may_write is False
    assert holders(modulestore, p.run_id, p[c.KIND_MEMORIES])["coder-0"] == (
        c.ORIGIN_TRANSFERRED,
        False,
        True,
    )
    assert_refused(
        lambda: write(modulestore, coder, c.KIND_MEMORIES, write_pad=svc.WritePad(text="mine")),
        grpc.StatusCode.PERMISSION_DENIED, "READ_ONLY",
    )
    memories = store(modulestore, p.run_id, p[c.KIND_MEMORIES])
    assert (memories.caps.max_items, memories.caps.max_bytes) == (3, 100)
    assert store(modulestore, p.run_id, p[c.KIND_TASKS]).caps.max_items == 7
    # The contents are the predecessor's, as they were.
    assert [e.body for e in contents(modulestore, coder, c.KIND_MEMORIES).contents.memories.entries] == [
        "notes"
    ]


def test_r22_a_store_with_other_holders_keeps_its_caps(modulestore: Stub) -> None:
    run = new_run()
    p = open_agent(modulestore, run, "planner-0", scope=c.MEMORY_SCOPE_AGENT)
    sibling = open_agent(modulestore, run, "planner-1", scope=c.MEMORY_SCOPE_AGENT)
    assert sibling[c.KIND_MEMORIES] == p[c.KIND_MEMORIES] and sibling[c.KIND_BOARD] == p[c.KIND_BOARD]
    tight = c.Caps(max_items=1, max_bytes=10)
    kinds = carry_all(
        memories=carry(c.KIND_MEMORIES, caps=tight, scope=c.MEMORY_SCOPE_AGENT),
        board=carry(c.KIND_BOARD, caps=tight),
        tasks=carry(c.KIND_TASKS, caps=tight),
    )
    hand_over(modulestore, p, "coder-0", kinds)
    for shared in (c.KIND_MEMORIES, c.KIND_BOARD):
        caps = store(modulestore, run, p[shared]).caps
        assert (caps.max_items, caps.max_bytes) == (0, 0)
    # The task list was planner-0's alone: its caps are the successor's.
    caps = store(modulestore, run, p[c.KIND_TASKS]).caps
    assert (caps.max_items, caps.max_bytes) == (1, 10)


def test_r23_contents_over_a_tighter_cap_stay_and_only_adding_writes_are_refused(modulestore: Stub) -> None:
    p = open_agent(modulestore, new_run(), "planner-0")
    for title in ("a", "b", "c"):
        write(modulestore, p, c.KIND_TASKS, create_task=svc.CreateTask(title=title))
    write(modulestore, p, c.KIND_HISTORY, open_view=svc.OpenView(view_id="spec", content="x" * 40))
    append(modulestore, p, "hello")
    kinds = carry_all(
        tasks=carry(c.KIND_TASKS, caps=c.Caps(max_items=2)),
        history=carry(c.KIND_HISTORY, caps=c.Caps(max_bytes=20)),
    )
    coder, _ = hand_over(modulestore, p, "coder-0", kinds)
    tasks = contents(modulestore, coder, c.KIND_TASKS)
    assert [t.title for t in tasks.contents.tasks.tasks] == ["a", "b", "c"]

    assert_refused(
        lambda: write(modulestore, coder, c.KIND_TASKS, create_task=svc.CreateTask(title="d")),
        grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_EXCEEDED",
    )
    assert contents(modulestore, coder, c.KIND_TASKS) == tasks
    assert_refused(
        lambda: append(modulestore, coder, "more"),
        grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_EXCEEDED",
    )

    # Writes that add nothing go through though the store is over its cap.
    done = svc.UpdateTask(task_id=2, status=module_pb2.TASK_STATUS_DONE)
    assert write(modulestore, coder, c.KIND_TASKS, update_task=done).figures.items == 3
    closed = write(modulestore, coder, c.KIND_HISTORY, close_view=svc.CloseView(view_id="spec"))
    assert closed.figures.bytes == len("hello")


def test_r24_the_window_arrives_with_an_empty_slot_its_thread_and_its_turn(modulestore: Stub) -> None:
    p = open_agent(modulestore, new_run(), "planner-0")
    write(modulestore, p, c.KIND_HISTORY, set_system_prompt=svc.SetSystemPrompt(text="You are planner-0."))
    append(modulestore, p, "one", start_turn=True)
    append(modulestore, p, "two", start_turn=True)
    window = contents(modulestore, p, c.KIND_HISTORY)
    coder, _ = hand_over(modulestore, p, "coder-0", carry_all())

    arrived = contents(modulestore, coder, c.KIND_HISTORY)
    h = arrived.contents.history
    assert (h.system_prompt, h.system_prompt_set) == ("", False)
    assert [(m.seq, m.content, m.turn) for m in h.messages] == [(1, "one", 1), (2, "two", 2)]
    assert (h.turn, h.message_count) == (window.contents.history.turn, 2)
    assert arrived.store.figures.bytes == window.store.figures.bytes - len("You are planner-0.")
    render = modulestore.RenderPrompt(svc.RenderPromptRequest(run_id=p.run_id, agent_id="coder-0"))
    assert "system_prompt" not in [m.section for m in render.contributions[0].messages]

    write(modulestore, coder, c.KIND_HISTORY, set_system_prompt=svc.SetSystemPrompt(text="You are coder-0."))
    again = svc.SetSystemPrompt(text="again")
    assert_refused(
        lambda: write(modulestore, coder, c.KIND_HISTORY, set_system_prompt=again),
        grpc.StatusCode.FAILED_PRECONDITION, "SYSTEM_PROMPT_ALREADY_SET",
    )
    reply = append(modulestore, coder, "three", start_turn=True)
    assert (reply.last_seq, reply.turn) == (3, 3)


def test_a_predecessor_that_handed_on_is_refused_and_pointed_at_its_successor(modulestore: Stub) -> None:
    p = open_agent(modulestore, new_run(), "planner-0")
    coder, _ = hand_over(modulestore, p, "coder-0", carry_all())
    outbox = events(modulestore, p.run_id)

    with pytest.raises(grpc.RpcError) as caught:
        append(modulestore, p, "still here")
    assert status_of(caught.value) == (grpc.StatusCode.PERMISSION_DENIED, "HANDED_ON")
    assert error_metadata(caught.value) == {"agent_id": "planner-0", "successor_agent_id": "coder-0"}
    message = caught.value.details()
    assert "planner-0" in message and "write as coder-0" in message
    code, reason, _, message = refused(
        lambda: modulestore.CallTool(
            svc.CallToolRequest(
                run_id=p.run_id,
                agent_id="planner-0",
                tool_name="create_task",
                arguments_json=json.dumps({"title": "t"}),
            )
        )
    )
    assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "HANDED_ON") and "coder-0" in message
    # A store the predecessor never held: still told who to write as.
    fresh_store = open_agent(modulestore, p.run_id, "helper-0")[c.KIND_TASKS]
    outbox = events(modulestore, p.run_id)
    assert_refused(
        lambda: modulestore.Write(
            svc.WriteRequest(
                run_id=p.run_id,
                agent_id="planner-0",
                store_id=fresh_store,
                create_task=svc.CreateTask(title="t"),
            )
        ),
        grpc.StatusCode.PERMISSION_DENIED, "HANDED_ON",
    )
    # A second handover of the same predecessor.
    code, reason, _, message = refused(lambda: hand_over(modulestore, p, "reviewer-0", carry_all()))
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "HANDED_ON") and "coder-0" in message
    assert events(modulestore, p.run_id) == outbox
    # The successor writes where the predecessor did.
    assert append(modulestore, coder, "as coder-0").last_seq == 1
