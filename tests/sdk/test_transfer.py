"""Transitions and execs through the SDK: typed outcomes, the successor as an agent, typed refusals."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from ggmodules.common.v1 import common_pb2
from ggmodules.sdk import (
    Agent,
    AsyncAgent,
    AsyncClient,
    Client,
    ClientConfig,
    Edge,
    ExecLacksEdgeKindsError,
    Fsm,
    HandedOnError,
    Instance,
    InternalError,
    InvalidFieldError,
    KindNotHeldError,
    Memories,
    NoSuchEdgeError,
    NotInFsmError,
    Origin,
    Outcome,
    Profile,
    RunInternalError,
    RunStatus,
    SystemPromptAlreadySetError,
    Transfer,
    TransferKind,
    TransferNotCompletedError,
    TransferState,
)
from ggmodules.sdk import transfer_calls as tr
from ggmodules.sdk.errors import error_from_status
from ggmodules.transfer.v1 import transfer_pb2
from tests.harness import Suite

PLANNER = Profile("planner", memories=Memories(strategy="scratchpad"), tasks=True)
CODER = Profile("coder", tasks=True, archive=True)
REVIEWER = Profile("reviewer", memories=Memories(strategy="markdown_index"), archive=True)
# A planner hands its window and task list to a coder; the scratchpad stays behind (R19).
TWO_STAGES = Fsm("plan", {"plan": "planner", "code": "coder"},
                 [Edge("plan", "code", carry=["history", "tasks"])])


@pytest.fixture()
def gg(suite: Suite) -> Iterator[Client]:
    with Client(suite.registry.address, suite.modulestore.address, suite.transfer.address) as client:
        yield client


def two_stage_planner(gg: Client, *, board: bool = False) -> Agent:
    """planner-0 in state `plan`, with a system prompt, a thread of one turn, two tasks and a scratchpad."""
    run = gg.create_run("two-stage", [PLANNER, CODER, REVIEWER], board=board, fsm=TWO_STAGES)
    planner = gg.open_instance(run.id, "planner")
    planner.history.set_system_prompt("You plan.")
    planner.history.append("user", "Build a CLI", start_turn=True)
    planner.history.append("assistant", "Plan: parser, then commands.")
    planner.tasks.create("write the parser")
    planner.tasks.create("write the commands")
    planner.memories.write_pad("the user wants argparse")
    return planner


def outcomes(transfer: Transfer[Agent]) -> dict[str, tuple[Outcome | None, str, str]]:
    return {o.kind.value: (o.outcome, o.store_id_before, o.store_id_after) for o in transfer.outcomes}


def test_r19_transition_carries_the_edge_kinds_drops_the_rest_and_hands_back_the_successor(
    gg: Client,
) -> None:
    planner = two_stage_planner(gg)
    moved = planner.transition("code")

    assert (moved.kind, moved.state) == (TransferKind.TRANSITION, TransferState.COMPLETED)
    assert (moved.predecessor_agent_id, moved.successor_agent_id) == ("planner-0", "coder-0")
    assert (moved.from_state, moved.to_state, moved.successor_profile) == ("plan", "code", "coder")
    assert outcomes(moved) == {
        "history": (Outcome.CARRIED, "history-0", "history-0"),      # R35: the store id is carried
        "memories": (Outcome.DROPPED, "memories-0", ""),
        "tasks": (Outcome.CARRIED, "tasks-0", "tasks-0"),
        "archive": (Outcome.FRESH, "", "archive-0"),
    }
    assert moved.outcome("memories").outcome == "dropped"
    assert "planner-0" in moved.opening_note and "archive" in moved.opening_note

    coder = moved.successor
    assert isinstance(coder, Agent) and coder.id == "coder-0" and coder.profile == "coder"
    roster = {r.kind.value: (r.enabled, r.store_id, r.origin) for r in coder.roster}
    assert roster == {
        "history": (True, "history-0", Origin.TRANSFERRED),
        "memories": (False, "", None),
        "tasks": (True, "tasks-0", Origin.TRANSFERRED),
        "board": (False, "", None),
        "skills": (False, "", None),
        "archive": (True, "archive-0", Origin.CREATED),
    }
    # The handle built from the answer is the instance Registry now shows (no extra call was made).
    shown = gg.get_instance(coder.run_id, coder.id)
    assert (shown.cause, shown.fsm_state, shown.opening_note) == ("transition", "code", moved.opening_note)
    assert (shown.predecessor_agent_id, shown.parent_agent_id) == ("planner-0", "")  # successor, not child
    assert dataclasses.replace(shown, created_at=None) == dataclasses.replace(coder.instance, created_at=None)


def test_r24_successor_sees_the_planners_thread_with_an_empty_system_prompt_and_sets_its_own(
    gg: Client,
) -> None:
    planner = two_stage_planner(gg)
    before = planner.history.contents()
    coder = planner.transition("code").successor

    window = coder.history.contents()
    assert window.system_prompt is None
    assert [(m.seq, m.role, m.content, m.turn) for m in window.messages] == [
        (m.seq, m.role, m.content, m.turn) for m in before.messages]
    assert window.turn == before.turn == 1
    coder.history.set_system_prompt("You code.")
    with pytest.raises(SystemPromptAlreadySetError):
        coder.history.set_system_prompt("You plan.")
    assert coder.history.contents().system_prompt == "You code."
    coder.history.append("assistant", "Parser first.")
    assert [t.title for t in coder.tasks.contents().tasks] == ["write the parser", "write the commands"]
    assert coder.tasks.create("write the tests") == 3
    coder.archive.archive_thread("planning", [("user", "Build a CLI")])


def test_r36_the_predecessor_is_handed_on_its_writes_are_refused_and_its_roster_never_changes(
    gg: Client,
) -> None:
    planner = two_stage_planner(gg)
    coder = planner.transition("code").successor

    for write in (lambda: planner.history.append("user", "one more thing"),
                  lambda: planner.tasks.create("sneak in a task"),
                  lambda: planner.memories.write_pad("too late")):
        with pytest.raises(HandedOnError) as caught:
            write()
        assert caught.value.code == grpc.StatusCode.PERMISSION_DENIED and coder.id in caught.value.message
    with pytest.raises(HandedOnError) as again:
        planner.transition("code")
    assert again.value.code == grpc.StatusCode.FAILED_PRECONDITION

    shown = gg.get_instance(planner.run_id, planner.id)
    assert shown.successor_agent_id == coder.id
    assert shown.roster == planner.roster
    assert [m.content for m in coder.history.contents().messages][-1] == "Plan: parser, then commands."
    assert [i.agent_id for i in gg.list_instances(planner.run_id)] == ["planner-0", "coder-0"]


def test_r20_exec_carries_what_both_have_reinitializes_a_mismatched_strategy_and_can_leave_the_fsm(
    gg: Client,
) -> None:
    planner = two_stage_planner(gg)
    # The reviewer enables no tasks, which the edge out of `plan` carries: it can only run outside the FSM.
    moved = planner.exec("reviewer", leave_fsm=True)

    assert (moved.kind, moved.state, moved.successor_profile) == (TransferKind.EXEC, "completed", "reviewer")
    assert outcomes(moved) == {
        "history": (Outcome.CARRIED, "history-0", "history-0"),
        "memories": (Outcome.REINITIALIZED, "memories-0", "memories-1"),
        "tasks": (Outcome.DROPPED, "tasks-0", ""),
        "archive": (Outcome.FRESH, "", "archive-0"),
    }
    why = moved.outcome("memories").note
    assert "scratchpad" in why and "markdown" in why and why in moved.opening_note  # R21: said in a sentence

    reviewer = moved.successor
    assert reviewer.instance.fsm_state == ""
    assert gg.get_instance(reviewer.run_id, reviewer.id).fsm_state == ""
    assert reviewer.memories.contents().entries == ()
    assert not reviewer.holds("tasks")
    with pytest.raises(KindNotHeldError):
        reviewer.tasks.contents()
    assert reviewer.history.contents().messages[0].content == "Build a CLI"


def test_board_is_the_runs_and_is_carried_by_a_transition_whose_edge_does_not_name_it(gg: Client) -> None:
    planner = two_stage_planner(gg, board=True)
    issue = planner.board.create_issue("GG", "parser")
    coder = planner.transition("code").successor
    row = coder.instance.row("board")
    assert (row.enabled, row.store_id, row.origin) == (True, "board-0", Origin.RUN)
    assert [i.id for i in coder.board.contents().issues] == [issue]


def test_r27_a_transition_resent_under_its_request_id_is_applied_once_and_can_be_looked_up(
    gg: Client,
) -> None:
    planner = two_stage_planner(gg)
    plan = tr.transition(planner.run_id, planner.id, "code").with_request_id("retry-of-transition")
    first = gg._transport.run(plan)
    again = gg._transport.run(plan)
    assert again == first and first.successor_agent_id == "coder-0"
    assert [i.agent_id for i in gg.list_instances(planner.run_id)] == ["planner-0", "coder-0"]

    by_request = gg.get_transfer(planner.run_id, request_id="retry-of-transition")
    by_id = gg.get_transfer(planner.run_id, transfer_id=first.transfer_id)
    assert by_request == by_id == first
    coder = by_id.successor
    assert isinstance(coder, Agent) and coder.history.contents().system_prompt is None
    with pytest.raises(InvalidFieldError):
        gg.get_transfer(planner.run_id)


def test_transfer_refusals_are_typed(gg: Client) -> None:
    coder = two_stage_planner(gg).transition("code").successor
    with pytest.raises(NoSuchEdgeError) as caught:
        coder.transition("plan")
    assert caught.value.code == grpc.StatusCode.FAILED_PRECONDITION

    run = gg.create_run("no-fsm", [PLANNER, CODER])
    loose = gg.open_instance(run.id, "planner")
    with pytest.raises(NotInFsmError):
        loose.transition("code")
    assert loose.exec("coder").successor.id == "coder-0"  # an exec needs no FSM


def test_r26_an_exec_its_successor_could_not_take_the_states_edges_from_is_refused_typed(gg: Client) -> None:
    # The edge carries memories; a reviewer exec'd into state `plan` would hold none to carry, and the
    # transition would end the run internal_error. The exec is refused instead, and nothing changes.
    fsm = Fsm("plan", {"plan": "planner", "code": "coder"},
              [Edge("plan", "code", carry=["history", "memories"])])
    coder = Profile("coder", memories=Memories(strategy="scratchpad"), tasks=True)
    run = gg.create_run("r26", [PLANNER, coder, Profile("reviewer")], fsm=fsm)
    planner = gg.open_instance(run.id, "planner")

    with pytest.raises(ExecLacksEdgeKindsError) as caught:
        planner.exec("reviewer")
    err = caught.value
    assert err.code == grpc.StatusCode.FAILED_PRECONDITION and err.metadata["kinds"] == "memories"
    assert gg.get_run(run.id).status == RunStatus.RUNNING
    assert [i.agent_id for i in gg.list_instances(run.id)] == ["planner-0"]
    planner.memories.write_pad("still mine")

    kept = planner.exec("coder").successor  # enables memories: keeps the state and can take the edge
    assert kept.instance.fsm_state == "plan"
    assert kept.transition("code").successor.memories.contents().entries[0].body == "still mine"
    assert gg.get_run(run.id).status == RunStatus.RUNNING


def test_async_transition_and_exec_hand_back_async_successors(suite: Suite) -> None:
    async def session() -> None:
        addresses = suite.registry.address, suite.modulestore.address, suite.transfer.address
        async with AsyncClient(*addresses) as gg:
            run = await gg.create_run("async-two-stage", [PLANNER, CODER, REVIEWER], fsm=TWO_STAGES)
            planner = await gg.open_instance(run.id, "planner")
            await planner.history.set_system_prompt("You plan.")
            await planner.history.append("user", "Build a CLI", start_turn=True)
            await planner.tasks.create("write the parser")

            moved = await planner.transition("code")
            assert moved.outcome("tasks").outcome == Outcome.CARRIED
            coder = moved.successor
            assert isinstance(coder, AsyncAgent) and coder.instance.fsm_state == "code"
            window = await coder.history.contents()
            assert window.system_prompt is None and window.messages[0].content == "Build a CLI"
            await coder.history.set_system_prompt("You code.")
            with pytest.raises(HandedOnError):
                await planner.tasks.create("too late")

            reviewer = (await coder.exec("reviewer")).successor
            assert isinstance(reviewer, AsyncAgent) and reviewer.instance.fsm_state == "code"
            assert (await reviewer.history.contents()).system_prompt is None
            again = await gg.get_transfer(run.id, transfer_id=moved.transfer_id)
            assert again == moved and isinstance(again.successor, AsyncAgent)

    asyncio.run(session())


# The SDK's side alone: words, error mapping, configuration.


@pytest.mark.parametrize(("words", "pb_enum"), [(Outcome, common_pb2.Outcome),
                                                 (TransferKind, transfer_pb2.TransferKind),
                                                 (TransferState, transfer_pb2.TransferState)],
                         ids=["Outcome", "TransferKind", "TransferState"])
def test_transfer_words_name_exactly_the_contract_values(words: type[Outcome], pb_enum: object) -> None:
    numbers = [n for n in pb_enum.values() if n != 0]  # type: ignore[attr-defined]
    assert [w.number for w in words] == numbers
    assert [words.from_number(n) for n in numbers] == list(words)


def _refusal(code: grpc.StatusCode, reason: str) -> status_pb2.Status:
    status = status_pb2.Status(code=code.value[0], message=f"{reason} refused")
    status.details.add().Pack(error_details_pb2.ErrorInfo(reason=reason, domain="ggmodules.dev"))
    return status


def test_r26_the_reason_wins_over_the_internal_code_and_a_plain_internal_stays_internal() -> None:
    internal = grpc.StatusCode.INTERNAL
    err = error_from_status(internal, "", _refusal(internal, "RUN_INTERNAL_ERROR"))
    assert type(err) is RunInternalError and err.reason == "RUN_INTERNAL_ERROR"
    assert type(error_from_status(grpc.StatusCode.INTERNAL, "boom", None)) is InternalError
    held = error_from_status(grpc.StatusCode.FAILED_PRECONDITION, "",
                             _refusal(grpc.StatusCode.FAILED_PRECONDITION, "KIND_NOT_HELD"))
    assert type(held) is KindNotHeldError


def test_transfer_address_defaults_to_50053_and_reads_the_environment() -> None:
    assert ClientConfig().transfer == "127.0.0.1:50053"
    assert ClientConfig.from_env({"GGMODULES_TRANSFER_ADDRESS": "10.0.0.7:7000"}).transfer == "10.0.0.7:7000"


def test_a_pending_or_failed_transfer_has_no_successor_agent() -> None:
    pending: Transfer[Instance] = Transfer(
        transfer_id="transfer-1", request_id="r", run_id="run-1", kind=TransferKind.EXEC,
        state=TransferState.PENDING, predecessor_agent_id="planner-0", successor_agent_id="coder-0",
        successor_profile="coder", outcomes=(), roster=(),
    ).bind(lambda instance: instance)
    with pytest.raises(TransferNotCompletedError, match="pending"):
        _ = pending.successor
    done = dataclasses.replace(pending, state=TransferState.COMPLETED).bind(lambda instance: instance)
    assert done.successor.agent_id == "coder-0" and done.successor.cause == "exec"
