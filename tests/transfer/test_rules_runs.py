"""Transfer rules by name, what a transfer does to the run (R26, R27, R30-R31, R35, R36, the run's board) and
its refusals, over the real services."""

from __future__ import annotations

from typing import Any

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.registry.v1 import registry_pb2
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.transfer.v1 import transfer_pb2
from ggmodules.transfer.v1 import transfer_service_pb2 as tr
from tests.harness import assert_refused, credit, refused
from tests.harness.registry import create_run, edge, fsm, full_profile, module, open_instance, profile, rows
from tests.harness.transfers import (
    PLANNING,
    events_after,
    exec_,
    exec_kept_state_unchecked,
    head,
    holders,
    instance,
    instance_ids,
    markers,
    outcomes,
    put,
    run_status,
    store,
    transition,
)


def test_r26_a_kind_the_predecessor_does_not_hold_ends_the_run_with_internal_error(
    registry: Any, modulestore: Any, transfer: Any
) -> None:
    planner = full_profile("planner")
    reviewer = profile("reviewer", tasks=module())  # no memories
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code", "history", "memories"))
    run = create_run(registry, planner, reviewer, full_profile("coder"), machine=machine)
    first = open_instance(registry, run.run_id, "planner")
    # No valid public call leads here any more (Exec refuses it, see the next test): the exec is made
    # through the internal calls, as an older Transfer made it.
    handed = exec_kept_state_unchecked(registry, modulestore, run.run_id, first.agent_id, "reviewer")
    reviewer_0 = instance(registry, run.run_id, handed)
    assert (reviewer_0.fsm_state, rows(reviewer_0)["memories"].enabled) == ("plan", False)
    agents, since = instance_ids(registry, run.run_id), head(modulestore)

    ask = tr.TransitionRequest(
        request_id="r26", run_id=run.run_id, agent_id=reviewer_0.agent_id, to_state="code"
    )
    code, reason, _, message = refused(lambda: transfer.Transition(ask))

    assert (code, reason) == (grpc.StatusCode.INTERNAL, "RUN_INTERNAL_ERROR")
    assert "memories" in message and reviewer_0.agent_id in message
    ended = run_status(registry, run.run_id)
    assert ended.status == registry_pb2.RUN_STATUS_INTERNAL_ERROR
    assert "memories" in ended.status_detail
    # Nothing of the transfer was applied: no successor, ModuleStore unchanged, the reviewer still holds.
    assert instance_ids(registry, run.run_id) == agents
    assert instance(registry, run.run_id, reviewer_0.agent_id).successor_agent_id == ""
    assert events_after(modulestore, run.run_id, since) == []
    history = rows(reviewer_0)["history"].store_id
    assert holders(modulestore, run.run_id, history)[reviewer_0.agent_id] is True
    # The same request id gets the same answer; the journal says why.
    assert refused(lambda: transfer.Transition(ask))[:2] == (code, reason)
    journal = transfer.GetTransfer(tr.GetTransferRequest(run_id=run.run_id, request_id="r26")).transfer
    assert journal.state == transfer_pb2.TRANSFER_STATE_FAILED
    assert "memories" in journal.failure


def test_r26_an_exec_whose_profile_cannot_take_its_states_edges_is_refused_before_anything_changes(
    registry: Any, modulestore: Any, transfer: Any
) -> None:
    """The path that ended a run internal_error through valid calls alone: an exec keeps the FSM state, to a
    profile lacking a kind the state's edge carries; the transition along that edge then met the lack."""
    reviewer = profile("reviewer", tasks=module())  # no memories
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code", "history", "memories"))
    run = create_run(registry, full_profile("planner"), reviewer, full_profile("coder"), machine=machine)
    planner = open_instance(registry, run.run_id, "planner")
    put(modulestore, planner, "memories", "before")
    agents, since = instance_ids(registry, run.run_id), head(modulestore)

    ask = tr.ExecRequest(
        request_id="keeps-plan", run_id=run.run_id, agent_id=planner.agent_id, profile="reviewer"
    )
    code, reason, _, message = refused(lambda: transfer.Exec(ask))

    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "EXEC_LACKS_EDGE_KINDS")
    assert "memories" in message and "'plan'" in message and "'code'" in message and "leave_fsm" in message
    # Nothing changed: the run runs, no successor, no event, the planner still holds and writes.
    assert run_status(registry, run.run_id).status == registry_pb2.RUN_STATUS_RUNNING
    assert instance_ids(registry, run.run_id) == agents
    assert instance(registry, run.run_id, planner.agent_id).successor_agent_id == ""
    assert events_after(modulestore, run.run_id, since) == []
    put(modulestore, planner, "memories", "after")
    # A retry gets the same refusal; the journal holds only the refusal.
    assert refused(lambda: transfer.Exec(ask))[:2] == (code, reason)
    journal = transfer.GetTransfer(tr.GetTransferRequest(run_id=run.run_id, request_id="keeps-plan")).transfer
    assert (journal.state, journal.successor_agent_id) == (transfer_pb2.TRANSFER_STATE_FAILED, "")

    # The allowed execs: to a profile enabling every kind the state's edges carry (it keeps the state and
    # can take the edge), or out of the FSM (it can never take one).
    coder = exec_(transfer, run.run_id, planner.agent_id, "coder")
    kept = instance(registry, run.run_id, coder.successor_agent_id)
    assert (kept.profile, kept.fsm_state) == ("coder", "plan")
    onward = transition(transfer, run.run_id, kept.agent_id, "code")
    assert onward.state == transfer_pb2.TRANSFER_STATE_COMPLETED
    memories = rows(planner)["memories"].store_id
    carried = store(modulestore, run.run_id, memories, onward.successor_agent_id).contents
    assert markers(carried, "memories") == ["after"]

    other = open_instance(registry, run.run_id, "planner")
    left = exec_(transfer, run.run_id, other.agent_id, "reviewer", leave_fsm=True)
    outside = instance(registry, run.run_id, left.successor_agent_id)
    assert (outside.profile, outside.fsm_state) == ("reviewer", "")
    assert_refused(
        lambda: transition(transfer, run.run_id, outside.agent_id, "code"),
        grpc.StatusCode.FAILED_PRECONDITION, "NOT_IN_FSM",
    )
    assert run_status(registry, run.run_id).status == registry_pb2.RUN_STATUS_RUNNING


def test_r26_exec_checks_every_edge_out_of_the_state_and_counts_the_board_as_held(
    registry: Any, modulestore: Any, transfer: Any
) -> None:
    bare = profile("bare")
    tasks_only = profile("lister", tasks=module())
    machine = fsm(
        "plan", {"plan": "planner", "code": "coder", "test": "coder"},
        edge("plan", "code", "history", "board"), edge("plan", "test", "tasks", "archive"),
    )
    run = create_run(registry, full_profile("planner"), full_profile("coder"), bare, tasks_only,
                     machine=machine, board=True)
    planner = open_instance(registry, run.run_id, "planner")

    code, reason, _, message = refused(lambda: exec_(transfer, run.run_id, planner.agent_id, "bare"))
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "EXEC_LACKS_EDGE_KINDS")
    assert "tasks and archive" in message and "'test'" in message and "board" not in message
    code, reason, _, message = refused(lambda: exec_(transfer, run.run_id, planner.agent_id, "lister"))
    assert reason == "EXEC_LACKS_EDGE_KINDS" and "archive" in message and "tasks" not in message
    assert instance_ids(registry, run.run_id) == [planner.agent_id]


def test_r27_a_retry_with_the_same_request_id_returns_the_first_answer(
    registry: Any, modulestore: Any, transfer: Any
) -> None:
    run = create_run(registry, full_profile("planner"), full_profile("coder"), machine=PLANNING)
    planner = open_instance(registry, run.run_id, "planner")

    first = transition(transfer, run.run_id, planner.agent_id, "code", request_id="once")
    since = head(modulestore)
    again = transition(transfer, run.run_id, planner.agent_id, "code", request_id="once")

    assert again == first
    assert first.state == transfer_pb2.TRANSFER_STATE_COMPLETED
    assert instance_ids(registry, run.run_id) == [planner.agent_id, first.successor_agent_id]
    assert events_after(modulestore, run.run_id, since) == []
    by_request = transfer.GetTransfer(tr.GetTransferRequest(run_id=run.run_id, request_id="once")).transfer
    by_id = transfer.GetTransfer(
        tr.GetTransferRequest(run_id=run.run_id, transfer_id=first.transfer_id)
    ).transfer
    assert by_request == by_id == first
    other = tr.ExecRequest(request_id="once", run_id=run.run_id, agent_id=planner.agent_id, profile="coder")
    assert refused(lambda: transfer.Exec(other))[:2] == (grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED")


def test_r30_r31_drain_then_roster_then_restate(registry: Any, modulestore: Any, transfer: Any) -> None:
    run = create_run(registry, full_profile("planner"), profile("coder", tasks=module()), machine=PLANNING)
    planner = open_instance(registry, run.run_id, "planner")
    put(modulestore, planner, "tasks", "ship it")
    since = head(modulestore)

    done = transition(transfer, run.run_id, planner.agent_id, "code")

    events = events_after(modulestore, run.run_id, since)
    bodies = [e.WhichOneof("body") for e in events]
    assert bodies == ["drain"] * 3 + ["roster"] + ["restate"] * 3  # memories, skills, archive drained
    assert {e.drain.successor_agent_id for e in events[:3]} == {done.successor_agent_id}
    roster = events[3]
    assert (roster.agent_id, roster.roster.cause, roster.roster.predecessor_agent_id) == (
        done.successor_agent_id,
        "transition",
        planner.agent_id,
    )
    assert roster.roster.opening_note == done.opening_note
    assert list(roster.roster.rows) == list(done.roster)
    restated = {e.kind: e.restate for e in events[4:]}
    assert set(restated) == {c.KIND_HISTORY, c.KIND_TASKS, c.KIND_BOARD}
    assert restated[c.KIND_TASKS].outcome == c.OUTCOME_CARRIED
    assert [t.title for t in restated[c.KIND_TASKS].contents.tasks.tasks] == ["ship it"]
    assert {r.predecessor_agent_id for r in restated.values()} == {planner.agent_id}


def test_r35_store_ids_are_carried_and_a_shared_memories_binding_reports_the_profiles_store(
    registry: Any, modulestore: Any, transfer: Any
) -> None:
    agent = {"scope": c.MEMORY_SCOPE_AGENT}
    run = create_run(registry, full_profile("planner", **agent), full_profile("coder", **agent))
    planner = open_instance(registry, run.run_id, "planner")
    coders_own = rows(open_instance(registry, run.run_id, "coder"))["memories"].store_id

    done = exec_(transfer, run.run_id, planner.agent_id, "coder")

    got = outcomes(done)
    assert got["memories"] == ("carried", rows(planner)["memories"].store_id, coders_own)
    for word in ("history", "tasks", "board", "archive"):
        assert got[word] == ("carried", rows(planner)[word].store_id, rows(planner)[word].store_id)
    row = rows(instance(registry, run.run_id, done.successor_agent_id))["memories"]
    assert (row.store_id, row.origin) == (coders_own, c.ORIGIN_PROFILE)


def test_r36_the_successor_is_a_new_agent_and_the_predecessors_roster_never_changes(
    registry: Any, modulestore: Any, transfer: Any
) -> None:
    run = create_run(registry, full_profile("planner"), full_profile("coder"), machine=PLANNING)
    planner = open_instance(registry, run.run_id, "planner")

    done = transition(transfer, run.run_id, planner.agent_id, "code")

    assert done.successor_agent_id not in ("", planner.agent_id)
    after = instance(registry, run.run_id, planner.agent_id)
    assert list(after.roster) == list(planner.roster)
    assert after.successor_agent_id == done.successor_agent_id
    successor = instance(registry, run.run_id, done.successor_agent_id)
    assert (successor.cause, successor.fsm_state, successor.profile) == ("transition", "code", "coder")
    assert_refused(
        lambda: put(modulestore, planner, "tasks", "late"),
        grpc.StatusCode.PERMISSION_DENIED, "HANDED_ON",
    )
    code, reason, _, message = refused(lambda: exec_(transfer, run.run_id, planner.agent_id, "coder"))
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "HANDED_ON")
    assert done.successor_agent_id in message


def test_the_board_is_carried_to_every_successor(registry: Any, modulestore: Any, transfer: Any) -> None:
    bare = profile("bare")
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code"))
    run = create_run(registry, full_profile("planner"), full_profile("coder"), bare, machine=machine)
    planner = open_instance(registry, run.run_id, "planner")
    board = rows(planner)["board"].store_id
    put(modulestore, planner, "board", "the one board")

    chain = [planner.agent_id]
    chain.append(transition(transfer, run.run_id, chain[-1], "code").successor_agent_id)
    chain.append(exec_(transfer, run.run_id, chain[-1], "bare").successor_agent_id)
    chain.append(exec_(transfer, run.run_id, chain[-1], "planner").successor_agent_id)

    for agent_id in chain[1:]:
        row = rows(instance(registry, run.run_id, agent_id))["board"]
        assert (row.store_id, row.origin, row.may_write) == (board, c.ORIGIN_RUN, True)
    seen = store(modulestore, run.run_id, board, chain[-1]).contents
    assert markers(seen, "board") == ["the one board"]


def test_refusals_change_nothing(registry: Any, modulestore: Any, transfer: Any) -> None:
    run = create_run(registry, full_profile("planner"), full_profile("coder"), machine=PLANNING)
    loose = create_run(registry, full_profile("planner"), full_profile("coder"))
    planner = open_instance(registry, run.run_id, "planner")
    outside = open_instance(registry, loose.run_id, "planner")
    since = head(modulestore)

    # Valid credentials for an agent and a run Registry does not know: what is refused is the agent, the run.
    credit(run.run_id, "ghost-0")
    credit("run-000000000000", planner.agent_id)
    cases = [
        (lambda: transition(transfer, run.run_id, planner.agent_id, "plan"), "NO_SUCH_EDGE", "'code'"),
        (lambda: transition(transfer, loose.run_id, outside.agent_id, "code"), "NOT_IN_FSM", "no FSM"),
        (lambda: exec_(transfer, run.run_id, planner.agent_id, "nobody"), "PROFILE_NOT_FOUND", "nobody"),
        (lambda: exec_(transfer, run.run_id, "ghost-0", "coder"), "AGENT_NOT_FOUND", "ghost-0"),
        (lambda: exec_(transfer, "run-000000000000", planner.agent_id, "coder"), "RUN_NOT_FOUND", ""),
        (lambda: exec_(transfer, run.run_id, planner.agent_id, ""), "INVALID_FIELD", "profile"),
        (lambda: transition(transfer, run.run_id, planner.agent_id, ""), "INVALID_FIELD", "to_state"),
    ]
    for call, want, words in cases:
        _, reason, _, message = refused(call)
        assert reason == want, message
        assert words in message

    assert instance_ids(registry, run.run_id) == [planner.agent_id]
    assert events_after(modulestore, run.run_id, since) == []
    registry.FinishRun(reg.FinishRunRequest(run_id=run.run_id))
    assert_refused(
        lambda: exec_(transfer, run.run_id, planner.agent_id, "coder"),
        grpc.StatusCode.FAILED_PRECONDITION, "RUN_NOT_RUNNING",
    )
    missing = tr.GetTransferRequest(run_id=run.run_id, transfer_id="transfer-0")
    assert refused(lambda: transfer.GetTransfer(missing))[:2] == (
        grpc.StatusCode.NOT_FOUND,
        "ENTRY_NOT_FOUND",
    )
