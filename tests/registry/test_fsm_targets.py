"""R25 extended for transfers: an edge carries only kinds both its ends enable, so a transition never meets
a kind its successor cannot receive. Reported with every other problem, at once."""

from __future__ import annotations

import grpc

from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub as RegistryStub
from tests.harness import refused
from tests.harness.registry import all_run_ids, edge, fsm, full_profile, module, profile


def _launch(*edges: object, board: bool = True) -> pb.CreateRunRequest:
    request = pb.CreateRunRequest(
        name="targets",
        profiles=[full_profile("planner"), profile("coder", tasks=module()), profile("reviewer")],
        board_enabled=board,
    )
    request.fsm.CopyFrom(
        fsm("plan", {"plan": "planner", "code": "coder", "review": "reviewer"}, *edges)  # type: ignore[arg-type]
    )
    return request


def test_r25_an_edge_may_not_carry_a_kind_its_target_state_turns_off(registry: RegistryStub) -> None:
    before = all_run_ids(registry)
    refusal = refused(
        registry.CreateRun,
        _launch(
            edge("plan", "code", "history", "tasks", "memories"),  # coder has no memories
            edge("code", "review", "tasks"),  # reviewer has no tasks
            edge("review", "plan", "history"),  # fine
        ),
    )
    assert (refusal.code, refusal.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FSM")
    assert [f for f, _ in refusal.violations] == ["fsm.edges[0].carry[2]", "fsm.edges[1].carry[0]"]
    described = dict(refusal.violations)
    assert all(w in described["fsm.edges[0].carry[2]"] for w in ("'memories'", "'code'", "'coder'"))
    assert all(w in described["fsm.edges[1].carry[0]"] for w in ("'tasks'", "'review'", "'reviewer'"))
    assert "2 problems" in refusal.message
    assert all_run_ids(registry) == before


def test_r25_target_problems_are_reported_with_the_others_at_once(registry: RegistryStub) -> None:
    refusal = refused(
        registry.CreateRun,
        _launch(
            edge("review", "code", "tasks"),  # reviewer holds no tasks to carry
            edge("code", "plan", "skills", "board", "notes"),  # coder holds no skills; no board; no kind
            edge("plan", "review", "archive"),  # reviewer cannot receive an archive
            board=False,
        ),
    )
    assert refusal.reason == "INVALID_FSM"
    assert [f for f, _ in refusal.violations] == [
        "fsm.edges[0].carry[0]",
        "fsm.edges[1].carry[0]",
        "fsm.edges[1].carry[1]",
        "fsm.edges[1].carry[2]",
        "fsm.edges[2].carry[0]",
    ]
    described = dict(refusal.violations)
    assert "nothing to carry" in described["fsm.edges[0].carry[0]"]
    assert "no board" in described["fsm.edges[1].carry[1]"]
    assert "cannot be received" in described["fsm.edges[2].carry[0]"]


def test_r25_a_kind_neither_end_enables_is_two_problems_and_the_board_one(registry: RegistryStub) -> None:
    refusal = refused(registry.CreateRun, _launch(edge("code", "review", "memories", "board"), board=False))
    assert [f for f, _ in refusal.violations] == [
        "fsm.edges[0].carry[0]",
        "fsm.edges[0].carry[0]",
        "fsm.edges[0].carry[1]",
    ]


def test_r25_an_edge_carrying_kinds_both_ends_enable_launches(registry: RegistryStub) -> None:
    run = registry.CreateRun(
        _launch(edge("plan", "code", "history", "tasks", "board"), edge("code", "review", "history"))
    ).run
    assert [list(e.carry) for e in run.fsm.edges] == [["history", "tasks", "board"], ["history"]]
