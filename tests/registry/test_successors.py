"""Transfer successors in Registry: reserved invisibly, completed with the handed-over roster, released on a
rollback (R36: a new agent id, the predecessor's roster never changes; R49: retries answer the first time)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest

from ggmodules.common.v1 import common_pb2
from ggmodules.registry.v1 import registry_pb2
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub as RegistryStub
from tests.harness import refused
from tests.harness.registry import (
    create_run,
    edge,
    fsm,
    full_profile,
    instance_ids,
    module,
    open_instance,
    profile,
)

NOTE = "history and tasks arrived from planner-0; memories were dropped."


def _run(registry: RegistryStub) -> registry_pb2.Run:
    machine = fsm(
        "plan",
        {"plan": "planner", "code": "coder"},
        edge("plan", "code", "history", "tasks"),
        edge("code", "plan", "history"),
    )
    return create_run(registry, full_profile("planner"), profile("coder", tasks=module()), machine=machine)


def _reserve(registry: RegistryStub, run_id: str, predecessor: str, request_id: str, **given: Any) -> str:
    fields = {"profile": "coder", "cause": "transition", "fsm_state": "code", **given}
    request = pb.ReserveSuccessorRequest(
        request_id=request_id, run_id=run_id, predecessor_agent_id=predecessor, **fields
    )
    agent_id: str = registry.ReserveSuccessor(request).agent_id
    return agent_id


def _complete_request(
    run_id: str, agent_id: str, roster: Any, request_id: str = "", note: str = NOTE
) -> pb.CompleteSuccessorRequest:
    return pb.CompleteSuccessorRequest(
        request_id=request_id, run_id=run_id, agent_id=agent_id, roster=roster, opening_note=note
    )


def _get(registry: RegistryStub, run_id: str, agent_id: str) -> registry_pb2.Instance:
    instance: registry_pb2.Instance = registry.GetInstance(
        pb.GetInstanceRequest(run_id=run_id, agent_id=agent_id)
    ).instance
    return instance


def _invisible(registry: RegistryStub, run_id: str, agent_id: str) -> None:
    hidden = refused(registry.GetInstance, pb.GetInstanceRequest(run_id=run_id, agent_id=agent_id))
    assert (hidden.code, hidden.reason) == (grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND")
    assert agent_id not in instance_ids(registry, run_id)


def test_r36_a_reserved_successor_gets_a_new_agent_id_and_stays_invisible(registry: RegistryStub) -> None:
    run = _run(registry)
    planner = open_instance(registry, run.run_id, "planner")
    coder = open_instance(registry, run.run_id, "coder")
    successor = _reserve(registry, run.run_id, planner.agent_id, "t-1/reserve")
    assert (coder.agent_id, successor) == ("coder-0", "coder-1")
    _invisible(registry, run.run_id, successor)
    assert instance_ids(registry, run.run_id) == [planner.agent_id, coder.agent_id]
    assert _get(registry, run.run_id, planner.agent_id) == planner
    # A reservation is no predecessor: it cannot be handed on before it exists.
    unseen = refused(
        registry.ReserveSuccessor,
        pb.ReserveSuccessorRequest(
            run_id=run.run_id, predecessor_agent_id=successor, profile="planner", cause="exec"
        ),
    )
    assert (unseen.code, unseen.reason) == (grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND")


def test_r49_a_retried_reservation_returns_the_same_agent_id(registry: RegistryStub) -> None:
    run = _run(registry)
    planner = open_instance(registry, run.run_id, "planner")
    first = _reserve(registry, run.run_id, planner.agent_id, "t-2/reserve")
    assert _reserve(registry, run.run_id, planner.agent_id, "t-2/reserve") == first
    reused = refused(
        registry.ReserveSuccessor,
        pb.ReserveSuccessorRequest(
            request_id="t-2/reserve", run_id=run.run_id, predecessor_agent_id=planner.agent_id,
            profile="planner", cause="exec", fsm_state="plan",
        ),
    )
    assert (reused.code, reused.reason) == (grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED")
    # Nothing else was minted by the retries: the next coder is coder-1.
    assert open_instance(registry, run.run_id, "coder").agent_id == "coder-1"


def test_a_predecessor_has_one_successor_a_second_reservation_is_handed_on(registry: RegistryStub) -> None:
    run = _run(registry)
    planner = open_instance(registry, run.run_id, "planner")
    first = _reserve(registry, run.run_id, planner.agent_id, "t-3/reserve")
    second = refused(
        registry.ReserveSuccessor,
        pb.ReserveSuccessorRequest(
            request_id="t-4/reserve", run_id=run.run_id, predecessor_agent_id=planner.agent_id,
            profile="planner", cause="exec", fsm_state="plan",
        ),
    )
    assert (second.code, second.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "HANDED_ON")
    assert first in second.message and planner.agent_id in second.message


def test_concurrent_reservations_for_one_predecessor_reserve_one_successor(registry: RegistryStub) -> None:
    run = _run(registry)
    planner = open_instance(registry, run.run_id, "planner")

    def reserve(i: int) -> str:
        try:
            return _reserve(registry, run.run_id, planner.agent_id, f"race-{i}/reserve")
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
            return "HANDED_ON"

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(reserve, range(6)))
    winners = [a for a in answers if a != "HANDED_ON"]
    assert len(winners) == 1 and winners[0].startswith("coder-")


def test_r36_completing_makes_the_successor_visible_and_names_it_on_the_predecessor(
    registry: RegistryStub,
) -> None:
    run = _run(registry)
    planner = open_instance(registry, run.run_id, "planner")
    successor = _reserve(registry, run.run_id, planner.agent_id, "t-5/reserve")
    roster = [r for r in planner.roster if r.kind != common_pb2.KIND_MEMORIES]
    done = registry.CompleteSuccessor(_complete_request(run.run_id, successor, roster)).instance
    assert (done.agent_id, done.profile, done.cause, done.fsm_state, done.predecessor_agent_id) == (
        successor, "coder", "transition", "code", planner.agent_id,
    )
    assert list(done.roster) == roster and done.opening_note == NOTE
    assert not done.successor_agent_id and not done.parent_agent_id
    assert _get(registry, run.run_id, successor) == done
    listed = registry.ListInstances(pb.ListInstancesRequest(run_id=run.run_id)).instances
    assert [i.agent_id for i in listed] == [planner.agent_id, successor]
    assert listed[1].opening_note == NOTE
    handed = _get(registry, run.run_id, planner.agent_id)
    assert handed.successor_agent_id == successor and listed[0].successor_agent_id == successor
    assert list(handed.roster) == list(planner.roster)


def test_r49_completing_again_answers_the_first_time_and_a_new_request_is_refused(
    registry: RegistryStub,
) -> None:
    run = _run(registry)
    planner = open_instance(registry, run.run_id, "planner")
    successor = _reserve(registry, run.run_id, planner.agent_id, "t-6/reserve")
    request = _complete_request(run.run_id, successor, planner.roster, "t-6/complete")
    first = registry.CompleteSuccessor(request)
    assert registry.CompleteSuccessor(request) == first
    again = refused(
        registry.CompleteSuccessor, _complete_request(run.run_id, successor, [], "other/complete", "changed")
    )
    assert again.code == grpc.StatusCode.FAILED_PRECONDITION and "already complete" in again.message
    assert _get(registry, run.run_id, successor) == first.instance
    # Handed on for good: no second successor, and no releasing the first.
    more = refused(
        registry.ReserveSuccessor,
        pb.ReserveSuccessorRequest(
            run_id=run.run_id, predecessor_agent_id=planner.agent_id, profile="coder", cause="transition"
        ),
    )
    assert (more.code, more.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "HANDED_ON")
    assert successor in more.message
    kept = refused(
        registry.ReleaseSuccessor, pb.ReleaseSuccessorRequest(run_id=run.run_id, agent_id=successor)
    )
    assert (kept.code, kept.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "HANDED_ON")
    # The successor is an instance like any other: it can be reserved a successor of its own.
    assert _reserve(registry, run.run_id, successor, "t-7/reserve", profile="planner", fsm_state="plan")


def test_a_released_reservation_frees_the_predecessor_and_cannot_be_completed(registry: RegistryStub) -> None:
    run = _run(registry)
    planner = open_instance(registry, run.run_id, "planner")
    released = _reserve(registry, run.run_id, planner.agent_id, "t-8/reserve")
    release = pb.ReleaseSuccessorRequest(request_id="t-8/release", run_id=run.run_id, agent_id=released)
    assert registry.ReleaseSuccessor(release) == pb.ReleaseSuccessorResponse()
    assert registry.ReleaseSuccessor(release) == pb.ReleaseSuccessorResponse()
    # Releasing what is already released, or was never reserved, asks for what is already so.
    for agent_id in (released, "coder-99"):
        registry.ReleaseSuccessor(pb.ReleaseSuccessorRequest(run_id=run.run_id, agent_id=agent_id))
    _invisible(registry, run.run_id, released)

    late = refused(registry.CompleteSuccessor, _complete_request(run.run_id, released, planner.roster))
    assert late.code == grpc.StatusCode.FAILED_PRECONDITION and "released" in late.message
    _invisible(registry, run.run_id, released)

    again = _reserve(registry, run.run_id, planner.agent_id, "t-9/reserve")
    assert again != released  # agent ids are minted once, never reused
    done = registry.CompleteSuccessor(_complete_request(run.run_id, again, planner.roster, "t-9/complete"))
    assert _get(registry, run.run_id, planner.agent_id).successor_agent_id == done.instance.agent_id


def test_only_reservations_complete_or_release(registry: RegistryStub) -> None:
    run = _run(registry)
    planner = open_instance(registry, run.run_id, "planner")
    unknown = refused(registry.CompleteSuccessor, _complete_request(run.run_id, "coder-42", []))
    assert (unknown.code, unknown.reason) == (grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND")
    opened = refused(registry.CompleteSuccessor, _complete_request(run.run_id, planner.agent_id, []))
    assert opened.code == grpc.StatusCode.FAILED_PRECONDITION and "open" in opened.message
    not_mine = refused(
        registry.ReleaseSuccessor, pb.ReleaseSuccessorRequest(run_id=run.run_id, agent_id=planner.agent_id)
    )
    assert not_mine.code == grpc.StatusCode.FAILED_PRECONDITION
    assert _get(registry, run.run_id, planner.agent_id) == planner


def test_a_completed_roster_must_name_known_kinds_once(registry: RegistryStub) -> None:
    run = _run(registry)
    planner = open_instance(registry, run.run_id, "planner")
    successor = _reserve(registry, run.run_id, planner.agent_id, "t-10/reserve")
    odd = common_pb2.RosterRow(kind=common_pb2.Kind.ValueType(9), store_id="x-0", enabled=True)
    for roster in ([odd], [planner.roster[0], planner.roster[0]]):
        bad = refused(registry.CompleteSuccessor, _complete_request(run.run_id, successor, roster))
        assert (bad.code, bad.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
    _invisible(registry, run.run_id, successor)


@pytest.mark.parametrize(
    ("given", "code", "reason", "named"),
    [
        ({"predecessor_agent_id": "planner-9"}, grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND", "planner-9"),
        ({"profile": "reviewer"}, grpc.StatusCode.NOT_FOUND, "PROFILE_NOT_FOUND", "reviewer"),
        ({"cause": "fork"}, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", "'fork'"),
        ({"fsm_state": "review"}, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", "'review'"),
        ({"profile": ""}, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD", "profile"),
        ({"run_id": "run-000000000000"}, grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND", "run-000000000000"),
    ],
)
def test_a_reservation_names_a_visible_predecessor_a_profile_a_cause_and_a_state(
    registry: RegistryStub, given: dict[str, str], code: grpc.StatusCode, reason: str, named: str
) -> None:
    run = _run(registry)
    planner = open_instance(registry, run.run_id, "planner")
    fields = {
        "run_id": run.run_id, "predecessor_agent_id": planner.agent_id, "profile": "coder",
        "cause": "transition", "fsm_state": "code", **given,
    }
    refusal = refused(registry.ReserveSuccessor, pb.ReserveSuccessorRequest(request_id="bad", **fields))
    assert (refusal.code, refusal.reason) == (code, reason)
    assert named in refusal.message
    # Nothing was reserved: the same predecessor can still be reserved a successor.
    assert _reserve(registry, run.run_id, planner.agent_id, f"{run.run_id}/after-bad") == "coder-0"


def test_a_run_without_an_fsm_reserves_successors_without_a_state(registry: RegistryStub) -> None:
    run = create_run(registry, full_profile("planner"), profile("coder", tasks=module()))
    planner = open_instance(registry, run.run_id, "planner")
    stated = refused(
        registry.ReserveSuccessor,
        pb.ReserveSuccessorRequest(
            run_id=run.run_id, predecessor_agent_id=planner.agent_id, profile="coder", cause="exec",
            fsm_state="code",
        ),
    )
    assert stated.code == grpc.StatusCode.INVALID_ARGUMENT and "no FSM" in stated.message
    successor = _reserve(registry, run.run_id, planner.agent_id, "exec/reserve", cause="exec", fsm_state="")
    done = registry.CompleteSuccessor(_complete_request(run.run_id, successor, [], "exec/complete")).instance
    assert (done.cause, done.fsm_state) == ("exec", "")


def test_a_finished_run_reserves_no_successor(registry: RegistryStub) -> None:
    run = _run(registry)
    planner = open_instance(registry, run.run_id, "planner")
    registry.FinishRun(pb.FinishRunRequest(run_id=run.run_id))
    refusal = refused(
        registry.ReserveSuccessor,
        pb.ReserveSuccessorRequest(
            run_id=run.run_id, predecessor_agent_id=planner.agent_id, profile="coder", cause="transition"
        ),
    )
    assert (refusal.code, refusal.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "RUN_NOT_RUNNING")
