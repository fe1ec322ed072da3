"""Transfer rules by name, what a carried module becomes (R21-R24: its caps, mode, memory strategy and
window), over the real services."""

from __future__ import annotations

from typing import Any

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_pb2
from tests.harness import assert_refused
from tests.harness.registry import create_run, full_profile, module, open_instance, profile, rows
from tests.harness.transfers import (
    PLANNING,
    exec_,
    instance,
    markers,
    outcomes,
    put,
    store,
    transition,
)

PAD, INDEX = c.MEMORY_STRATEGY_SCRATCHPAD, c.MEMORY_STRATEGY_MARKDOWN_INDEX


def _caps(modulestore: Any, run_id: str, store_id: str) -> tuple[int, int]:
    page = modulestore.ListStores(svc.ListStoresRequest(run_id=run_id, page_size=500))
    found = next(s for s in page.stores if s.store_id == store_id)
    return found.caps.max_items, found.caps.max_bytes


def _write(modulestore: Any, inst: registry_pb2.Instance, word: str, **op: Any) -> svc.WriteResponse:
    request = svc.WriteRequest(
        run_id=inst.run_id, agent_id=inst.agent_id, store_id=rows(inst)[word].store_id, **op
    )
    response: svc.WriteResponse = modulestore.Write(request)
    return response


def test_r21_carried_module_takes_the_receiving_profiles_caps_and_mode(
    registry: Any, modulestore: Any, transfer: Any
) -> None:
    reviewer = profile("reviewer", tasks=module(read_only=True, caps={"max_items": 9, "max_bytes": 9000}))
    run = create_run(registry, full_profile("planner"), reviewer)
    planner = open_instance(registry, run.run_id, "planner")
    put(modulestore, planner, "tasks", "write the spec")

    done = exec_(transfer, run.run_id, planner.agent_id, "reviewer")

    successor = instance(registry, run.run_id, done.successor_agent_id)
    tasks = rows(successor)["tasks"]
    assert (tasks.store_id, tasks.may_write) == (rows(planner)["tasks"].store_id, False)
    assert _caps(modulestore, run.run_id, tasks.store_id) == (9, 9000)
    assert_refused(
        lambda: put(modulestore, successor, "tasks", "sneak one in"),
        grpc.StatusCode.PERMISSION_DENIED, "READ_ONLY",
    )


def test_r21_memory_strategy_mismatch_is_reinitialized_and_the_note_says_why(
    registry: Any, modulestore: Any, transfer: Any
) -> None:
    run = create_run(registry, full_profile("planner", strategy=PAD), full_profile("coder", strategy=INDEX))
    planner = open_instance(registry, run.run_id, "planner")
    put(modulestore, planner, "memories", "remember the milk")

    done = exec_(transfer, run.run_id, planner.agent_id, "coder")

    outcome, before, after = outcomes(done)["memories"]
    assert (outcome, before) == ("reinitialized", rows(planner)["memories"].store_id)
    assert after != before
    assert (
        f"memories were re-initialized: {planner.agent_id} kept a scratchpad and profile coder keeps a "
        "markdown index, and a scratchpad cannot be read as a markdown index"
    ) in done.opening_note
    note = next(o.note for o in done.outcomes if o.kind == c.KIND_MEMORIES)
    assert "cannot be read as a markdown index" in note
    fresh = store(modulestore, run.run_id, after, done.successor_agent_id).contents.memories
    assert (fresh.strategy, list(fresh.entries)) == (INDEX, [])


def test_r22_caps_are_re_pointed_only_for_the_sole_holder(
    registry: Any, modulestore: Any, transfer: Any
) -> None:
    shared = full_profile("planner", scope=c.MEMORY_SCOPE_AGENT, caps={"max_items": 50})
    coder = full_profile("coder", scope=c.MEMORY_SCOPE_INSTANCE, caps={"max_items": 2})
    coder.modules["tasks"].caps.max_items = 3
    run = create_run(registry, shared, coder)
    planner = open_instance(registry, run.run_id, "planner")
    other = open_instance(registry, run.run_id, "planner")  # a second holder of the profile's memories
    memories, tasks = rows(planner)["memories"].store_id, rows(planner)["tasks"].store_id
    assert rows(other)["memories"].store_id == memories

    done = exec_(transfer, run.run_id, planner.agent_id, "coder")

    assert outcomes(done)["memories"] == ("carried", memories, memories)
    assert _caps(modulestore, run.run_id, memories) == (50, 0)  # held with planner-1 too: its caps stay
    assert _caps(modulestore, run.run_id, tasks) == (3, 0)  # the planner held it alone: re-pointed


def test_r23_caps_tighten_forward_only(registry: Any, modulestore: Any, transfer: Any) -> None:
    tight = full_profile("coder")
    tight.modules["tasks"].caps.max_items = 2
    run = create_run(registry, full_profile("planner"), tight)
    planner = open_instance(registry, run.run_id, "planner")
    for title in ("one", "two", "three"):
        put(modulestore, planner, "tasks", title)

    done = exec_(transfer, run.run_id, planner.agent_id, "coder")

    successor = instance(registry, run.run_id, done.successor_agent_id)
    tasks = rows(successor)["tasks"].store_id
    assert markers(store(modulestore, run.run_id, tasks, successor.agent_id).contents, "tasks") == [
        "one",
        "two",
        "three",
    ]
    assert_refused(
        lambda: put(modulestore, successor, "tasks", "four"),
        grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_EXCEEDED",
    )
    assert len(store(modulestore, run.run_id, tasks, successor.agent_id).contents.tasks.tasks) == 3


def test_r24_window_arrives_with_the_system_prompt_slot_empty(
    registry: Any, modulestore: Any, transfer: Any
) -> None:
    run = create_run(registry, full_profile("planner"), full_profile("coder"), machine=PLANNING)
    planner = open_instance(registry, run.run_id, "planner")
    _write(modulestore, planner, "history", set_system_prompt=svc.SetSystemPrompt(text="you plan"))
    for turn in range(3):
        _write(
            modulestore,
            planner,
            "history",
            append_messages=svc.AppendMessages(
                messages=[{"role": "user", "content": f"turn {turn}"}],
                start_turn=True,
            ),
        )
    window = rows(planner)["history"].store_id
    before = store(modulestore, run.run_id, window, planner.agent_id).contents.history

    done = transition(transfer, run.run_id, planner.agent_id, "code")

    successor = instance(registry, run.run_id, done.successor_agent_id)
    after = store(modulestore, run.run_id, window, successor.agent_id).contents.history
    assert (after.system_prompt, after.system_prompt_set) == ("", False)
    assert [m.content for m in after.messages] == [m.content for m in before.messages]
    assert (after.turn, after.message_count) == (before.turn, before.message_count) == (3, 3)
    _write(modulestore, successor, "history", set_system_prompt=svc.SetSystemPrompt(text="you code"))
    again = svc.SetSystemPrompt(text="again")
    assert_refused(
        lambda: _write(modulestore, successor, "history", set_system_prompt=again),
        grpc.StatusCode.FAILED_PRECONDITION, "SYSTEM_PROMPT_ALREADY_SET",
    )
