"""FailRun (R26): a run Transfer found broken ends under internal_error, visibly, exactly once (R49)."""

from __future__ import annotations

import grpc
from sqlmodel import create_engine

from ggmodules.registry.v1 import registry_pb2
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub as RegistryStub
from ggmodules.storage.outbox import Outbox
from ggmodules.storage.registry.repository import ORIGIN
from ggmodules.storage.registry.tables import RegOutboxRow, RegStreamHeadRow
from tests.harness import Suite, refused
from tests.harness.registry import create_run, full_profile, open_instance, profile

DETAIL = "transfer t-1: reviewer-0 does not hold memories, which the edge plan -> code carries"


def _run_events(suite: Suite, run_id: str) -> list[tuple[str, str]]:
    engine = create_engine(suite.urls["registry"])
    try:
        with engine.connect() as conn:
            events = Outbox(ORIGIN, RegOutboxRow, RegStreamHeadRow).read(conn, 0, 1000, run_id).events
    finally:
        engine.dispose()
    return [(e.run.status, e.run.detail) for e in events]


def test_r26_a_failed_run_shows_internal_error_and_its_detail(registry: RegistryStub, suite: Suite) -> None:
    run = create_run(registry, full_profile("planner"))
    request = pb.FailRunRequest(request_id="t-1/fail", run_id=run.run_id, detail=DETAIL)
    failed = registry.FailRun(request).run
    assert (failed.status, failed.status_detail) == (registry_pb2.RUN_STATUS_INTERNAL_ERROR, DETAIL)
    assert registry.GetRun(pb.GetRunRequest(run_id=run.run_id)).run == failed
    listed = {r.run_id: r for r in registry.ListRuns(pb.ListRunsRequest(page_size=500)).runs}
    assert listed[run.run_id] == failed
    # R49: the retry answers the first time and appends nothing.
    assert registry.FailRun(request).run == failed
    assert _run_events(suite, run.run_id) == [("created", ""), ("internal_error", DETAIL)]


def test_r26_a_failed_run_opens_nothing_and_fails_once(registry: RegistryStub) -> None:
    run = create_run(registry, full_profile("planner"), profile("coder"))
    planner = open_instance(registry, run.run_id, "planner")
    registry.FailRun(pb.FailRunRequest(request_id="t-2/fail", run_id=run.run_id, detail=DETAIL))
    for call, request in (
        (registry.FailRun, pb.FailRunRequest(request_id="t-3/fail", run_id=run.run_id, detail="again")),
        (registry.FinishRun, pb.FinishRunRequest(run_id=run.run_id)),
        (registry.OpenInstance, pb.OpenInstanceRequest(run_id=run.run_id, profile="coder")),
        (
            registry.ReserveSuccessor,
            pb.ReserveSuccessorRequest(
                run_id=run.run_id, predecessor_agent_id=planner.agent_id, profile="coder", cause="exec"
            ),
        ),
    ):
        refusal = refused(call, request)
        assert (refusal.code, refusal.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "RUN_NOT_RUNNING")
        assert "internal_error" in refusal.message
    assert registry.GetRun(pb.GetRunRequest(run_id=run.run_id)).run.status_detail == DETAIL


def test_a_finished_run_cannot_fail_and_a_failure_needs_a_detail(registry: RegistryStub) -> None:
    run = create_run(registry, profile("coder"))
    blank = refused(registry.FailRun, pb.FailRunRequest(run_id=run.run_id))
    assert (blank.code, blank.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
    registry.FinishRun(pb.FinishRunRequest(run_id=run.run_id))
    late = refused(registry.FailRun, pb.FailRunRequest(run_id=run.run_id, detail=DETAIL))
    assert (late.code, late.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "RUN_NOT_RUNNING")
    assert registry.GetRun(pb.GetRunRequest(run_id=run.run_id)).run.status == registry_pb2.RUN_STATUS_FINISHED
    unknown = refused(registry.FailRun, pb.FailRunRequest(run_id="run-000000000000", detail=DETAIL))
    assert (unknown.code, unknown.reason) == (grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND")


def test_a_successor_whose_handover_was_applied_completes_after_the_run_failed(
    registry: RegistryStub,
) -> None:
    """Once ModuleStore has applied a handover, Transfer rolls forward: completing still makes it visible."""
    run = create_run(registry, full_profile("planner"), profile("coder"))
    planner = open_instance(registry, run.run_id, "planner")
    successor = registry.ReserveSuccessor(
        pb.ReserveSuccessorRequest(
            run_id=run.run_id, predecessor_agent_id=planner.agent_id, profile="coder", cause="exec"
        )
    ).agent_id
    registry.FailRun(pb.FailRunRequest(run_id=run.run_id, detail=DETAIL))
    done = registry.CompleteSuccessor(
        pb.CompleteSuccessorRequest(run_id=run.run_id, agent_id=successor, roster=planner.roster[:1])
    ).instance
    assert done.agent_id == successor and list(done.roster) == list(planner.roster[:1])
