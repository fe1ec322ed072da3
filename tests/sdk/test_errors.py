"""Refusals arrive as typed exceptions, chosen by their ErrorInfo reason (R47), store unchanged (R48)."""

from __future__ import annotations

import grpc
import pytest

from ggmodules.common.v1 import common_pb2
from ggmodules.sdk import (
    AgentNotFoundError,
    Capability,
    CapExceededError,
    Client,
    DanglingEdgeError,
    Edge,
    Fsm,
    GGModulesError,
    HistoryRequiredError,
    InvalidFsmError,
    NotAHolderError,
    Profile,
    ProfileNotFoundError,
    ReadOnlyError,
    RunNotFoundError,
    StoreNotFoundError,
    SystemPromptAlreadySetError,
    TaskCycleError,
    TooLargeError,
    UnknownKindError,
)
from ggmodules.sdk import modulestore_calls as ms
from ggmodules.sdk.errors import GGModulesError as Base
from ggmodules.sdk.plans import ModuleRef
from tests.sdk.conftest import PROFILES

KINDS = "history, memories, tasks, board, skills, archive"


def test_every_error_reason_of_the_contract_has_its_own_exception() -> None:
    reasons = [name.removeprefix("ERROR_REASON_") for name, n in common_pb2.ErrorReason.items() if n]
    classes = {reason: Base.class_for(reason) for reason in reasons}
    assert all(cls is not GGModulesError and reason == cls.REASON for reason, cls in classes.items())
    assert len(set(classes.values())) == len(reasons)


def test_r1_unknown_kind_word_in_a_profile_reaches_the_service_and_comes_back_typed(gg: Client) -> None:
    with pytest.raises(UnknownKindError) as caught:
        gg.create_run("bad", [Profile("p", modules={"gossip": True})])
    err = caught.value
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT and err.reason == "UNKNOWN_KIND"
    assert "gossip" in err.message and KINDS in err.message


def test_r1_unknown_kind_filter_is_refused_the_same_way_before_any_call(gg: Client) -> None:
    with pytest.raises(UnknownKindError) as caught:
        gg.list_tools("gossip")
    assert caught.value.code == grpc.StatusCode.INVALID_ARGUMENT and "gossip" in caught.value.message


def test_r2_history_cannot_be_turned_off(gg: Client) -> None:
    with pytest.raises(HistoryRequiredError):
        gg.create_run("bad", [Profile("p", history=False)])


def test_r25_invalid_fsm_lists_every_problem(gg: Client) -> None:
    fsm = Fsm("plan", {"plan": "planner", "write": "writer"},
              [Edge("plan", "write", carry=["history", "gossip"]), Edge("write", "plan", carry=["archive"])])
    with pytest.raises(InvalidFsmError) as caught:
        gg.create_run("bad", PROFILES, fsm=fsm)
    problems = caught.value.problems
    assert len(problems) == 2, problems
    assert any("gossip" in p for p in problems) and any("archive" in p for p in problems)


def test_r9_second_system_prompt_is_refused_and_the_first_kept(gg: Client) -> None:
    run = gg.create_run("errors", PROFILES)
    history = gg.open_instance(run.id, "planner").history
    history.set_system_prompt("You plan.")
    with pytest.raises(SystemPromptAlreadySetError) as caught:
        history.set_system_prompt("You write.")
    assert caught.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert history.contents().system_prompt == "You plan."


def test_task_cycle_and_dangling_edge_are_typed_and_leave_the_list_unchanged(gg: Client) -> None:
    run = gg.create_run("errors", PROFILES)
    tasks = gg.open_instance(run.id, "planner").tasks
    a = tasks.create("a")
    b = tasks.create("b", blocked_by=[a])
    before = tasks.contents()
    with pytest.raises(TaskCycleError):
        tasks.update(a, add_blocked_by=[b])
    with pytest.raises(DanglingEdgeError):
        tasks.create("c", blocked_by=[99])
    assert tasks.contents() == before


def test_r23_write_over_a_cap_is_refused_typed(gg: Client) -> None:
    run = gg.create_run("errors", [Profile("capped", tasks=Capability(max_items=1))])
    tasks = gg.open_instance(run.id, "capped").tasks
    tasks.create("only one")
    with pytest.raises(CapExceededError) as caught:
        tasks.create("one too many")
    assert caught.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert [t.title for t in tasks.contents().tasks] == ["only one"]


def test_r47_writes_by_a_non_holder_or_a_read_only_holder_are_refused_typed(gg: Client) -> None:
    """The holder check as far as it goes without credentials (the agent id is the caller's word, so this
    is not yet R50): a write naming an agent that does not hold the store, or holds it read-only, is refused
    with a typed error and changes nothing."""
    run = gg.create_run("errors", [*PROFILES, Profile("reader", tasks=Capability(read_only=True))])
    planner = gg.open_instance(run.id, "planner")
    writer = gg.open_instance(run.id, "writer")
    # The writer acting on the planner's window: only the SDK's internal API can even build this.
    with pytest.raises(NotAHolderError):
        gg._transport.run(ms.append(ModuleRef(run.id, writer.id, planner.history.store_id), "user", "hi"))
    with pytest.raises(ReadOnlyError):
        gg.open_instance(run.id, "reader").tasks.create("no")
    assert planner.history.contents().messages == ()


def test_oversized_message_is_refused_typed(gg: Client) -> None:
    run = gg.create_run("errors", PROFILES)
    history = gg.open_instance(run.id, "planner").history
    with pytest.raises(TooLargeError):
        history.append("user", "x" * (256 * 1024 + 1))
    assert history.contents().message_count == 0


def test_unknown_run_agent_store_and_profile_are_typed_not_found(gg: Client) -> None:
    run = gg.create_run("errors", PROFILES)
    planner = gg.open_instance(run.id, "planner")
    with pytest.raises(RunNotFoundError) as caught:
        gg.get_run("run-000000000000")
    assert caught.value.code == grpc.StatusCode.NOT_FOUND
    with pytest.raises(AgentNotFoundError):
        gg.get_instance(run.id, "planner-99")
    with pytest.raises(ProfileNotFoundError):
        gg.open_instance(run.id, "nobody")
    with pytest.raises(StoreNotFoundError):
        gg.get_store(run.id, "tasks-99", planner.id)
