"""FSM definitions validated at launch (R25, R1 for edges); instances open in FSM states."""

from __future__ import annotations

import grpc

from ggmodules.registry.v1 import registry_pb2
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub as RegistryStub
from tests.harness import refused
from tests.harness.registry import (
    SIX,
    all_run_ids,
    create_run,
    edge,
    fork,
    fsm,
    full_profile,
    module,
    profile,
)


def _launch(machine: registry_pb2.FsmDefinition, board: bool = True) -> pb.CreateRunRequest:
    request = pb.CreateRunRequest(
        name="fsm",
        profiles=[full_profile("planner"), profile("coder", tasks=module())],
        board_enabled=board,
    )
    request.fsm.CopyFrom(machine)
    return request


def test_r1_unknown_kind_word_in_an_fsm_edge_refuses_the_launch_naming_it_and_the_six(
    registry: RegistryStub,
) -> None:
    before = all_run_ids(registry)
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code", "tasks", "memory"))
    refusal = refused(registry.CreateRun, _launch(machine))
    assert refusal.code == grpc.StatusCode.INVALID_ARGUMENT
    assert refusal.reason == "INVALID_FSM"
    assert "'memory'" in refusal.message
    assert all(word in refusal.message for word in SIX)
    assert [f for f, _ in refusal.violations] == ["fsm.edges[0].carry[1]"]
    assert all_run_ids(registry) == before


def test_r25_a_malformed_fsm_reports_every_problem_at_once(registry: RegistryStub) -> None:
    before = all_run_ids(registry)
    machine = fsm(
        "start",  # not a state
        {"plan": "planner", "code": "coder", "review": "reviewer"},  # no profile 'reviewer'
        edge("plan", "code", "tasks", "history"),  # fine
        edge("code", "plan", "memories", "tasks"),  # coder holds no memories
        edge("plan", "nowhere", "skills"),  # no state 'nowhere'
        edge("code", "plan", "board", "notes"),  # a second code->plan edge; no board; unknown word
    )
    refusal = refused(registry.CreateRun, _launch(machine, board=False))
    assert (refusal.code, refusal.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FSM")
    fields = [f for f, _ in refusal.violations]
    assert fields == [
        "fsm.states[2].profile",
        "fsm.initial",
        "fsm.edges[1].carry[0]",
        "fsm.edges[2].to",
        "fsm.edges[3]",
        "fsm.edges[3].carry[0]",
        "fsm.edges[3].carry[1]",
    ]
    described = dict(refusal.violations)
    assert "'reviewer'" in described["fsm.states[2].profile"]
    assert (
        "'memories'" in described["fsm.edges[1].carry[0]"] and "coder" in described["fsm.edges[1].carry[0]"]
    )
    assert "no board" in described["fsm.edges[3].carry[0]"]
    assert "'notes'" in described["fsm.edges[3].carry[1]"]
    assert all(f in refusal.message for f in fields)
    assert all_run_ids(registry) == before


def test_r25_an_fsm_needs_states_and_an_initial_state(registry: RegistryStub) -> None:
    refusal = refused(registry.CreateRun, _launch(fsm("", {}, edge("a", "b"))))
    assert refusal.reason == "INVALID_FSM"
    assert [f for f, _ in refusal.violations] == [
        "fsm.states",
        "fsm.initial",
        "fsm.edges[0].from",
        "fsm.edges[0].to",
    ]


def test_r25_an_edge_may_carry_the_board_only_in_a_run_that_has_one(registry: RegistryStub) -> None:
    """The board is held by every agent of a run that has one, so an edge naming it launches there, and the
    same FSM in a run without a board is refused at launch, naming that edge's board."""
    machine = fsm(
        "plan",
        {"plan": "planner", "code": "coder"},
        edge("plan", "code", "history", "tasks", "board"),
        edge("code", "plan", "history"),
    )
    run = registry.CreateRun(_launch(machine)).run
    assert registry.GetRun(pb.GetRunRequest(run_id=run.run_id)).run.fsm == machine
    before = all_run_ids(registry)
    refusal = refused(registry.CreateRun, _launch(machine, board=False))
    assert (refusal.code, refusal.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FSM")
    assert refusal.violations[0][0] == "fsm.edges[0].carry[2]" and len(refusal.violations) == 1
    assert "no board" in refusal.violations[0][1]
    assert all_run_ids(registry) == before


def test_a_root_instance_opens_in_the_initial_state_or_the_state_named(registry: RegistryStub) -> None:
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code", "tasks"))
    run = create_run(
        registry,
        full_profile("planner"),
        profile("coder", tasks=module()),
        profile("helper"),
        machine=machine,
    )

    first = registry.OpenInstance(pb.OpenInstanceRequest(run_id=run.run_id)).instance
    assert (first.profile, first.fsm_state, first.agent_id) == ("planner", "plan", "planner-0")
    coder = registry.OpenInstance(pb.OpenInstanceRequest(run_id=run.run_id, fsm_state="code")).instance
    assert (coder.profile, coder.fsm_state) == ("coder", "code")
    by_profile = registry.OpenInstance(pb.OpenInstanceRequest(run_id=run.run_id, profile="coder")).instance
    assert (by_profile.profile, by_profile.fsm_state) == ("coder", "code")
    helper = registry.OpenInstance(pb.OpenInstanceRequest(run_id=run.run_id, profile="helper")).instance
    assert (helper.profile, helper.fsm_state) == ("helper", "")
    assert fork(registry, run.run_id, first.agent_id).fsm_state == "plan"

    mismatch = refused(
        registry.OpenInstance, pb.OpenInstanceRequest(run_id=run.run_id, profile="planner", fsm_state="code")
    )
    assert (mismatch.code, mismatch.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
    unknown = refused(registry.OpenInstance, pb.OpenInstanceRequest(run_id=run.run_id, fsm_state="deploy"))
    assert unknown.code == grpc.StatusCode.INVALID_ARGUMENT and "deploy" in unknown.message


def test_a_run_without_an_fsm_refuses_a_state(registry: RegistryStub) -> None:
    run = create_run(registry, profile("coder"))
    refusal = refused(
        registry.OpenInstance, pb.OpenInstanceRequest(run_id=run.run_id, profile="coder", fsm_state="plan")
    )
    assert (refusal.code, refusal.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
