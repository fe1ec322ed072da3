"""Runs: create, get, list in pages, finish; run events in Registry's outbox."""

from __future__ import annotations

import grpc
from sqlalchemy import create_engine

from ggmodules.registry.v1 import registry_pb2
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub as RegistryStub
from ggmodules.storage.outbox import Outbox
from ggmodules.storage.registry.repository import ORIGIN
from ggmodules.storage.registry.tables import RegOutboxRow, RegStreamHeadRow
from tests.harness import Suite, refused
from tests.harness.registry import create_run, fork, full_profile, open_instance, profile, spawn


def test_a_run_is_created_running_and_read_back_as_it_runs(registry: RegistryStub) -> None:
    run = create_run(registry, full_profile("coder"), board=True, name="nightly")
    assert run.run_id.startswith("run-") and len(run.run_id) == len("run-") + 12
    assert (run.name, run.status, run.board_enabled) == ("nightly", registry_pb2.RUN_STATUS_RUNNING, True)
    assert run.create_time.seconds > 0
    assert registry.GetRun(pb.GetRunRequest(run_id=run.run_id)).run == run


def test_finished_runs_open_nothing(registry: RegistryStub) -> None:
    run = create_run(registry, full_profile("coder"))
    opened = open_instance(registry, run.run_id, "coder")
    finished = registry.FinishRun(pb.FinishRunRequest(run_id=run.run_id)).run
    assert finished.status == registry_pb2.RUN_STATUS_FINISHED
    assert registry.GetRun(pb.GetRunRequest(run_id=run.run_id)).run.status == registry_pb2.RUN_STATUS_FINISHED

    for call, request in (
        (registry.OpenInstance, pb.OpenInstanceRequest(run_id=run.run_id, profile="coder")),
        (
            registry.SpawnSubagent,
            pb.SpawnSubagentRequest(run_id=run.run_id, parent_agent_id=opened.agent_id, profile="coder"),
        ),
        (registry.ForkInstance, pb.ForkInstanceRequest(run_id=run.run_id, agent_id=opened.agent_id)),
        (registry.FinishRun, pb.FinishRunRequest(run_id=run.run_id)),
    ):
        refusal = refused(call, request)
        assert (refusal.code, refusal.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "RUN_NOT_RUNNING")
        assert "finished" in refusal.message
    listed = registry.ListInstances(pb.ListInstancesRequest(run_id=run.run_id)).instances
    assert [i.agent_id for i in listed] == [opened.agent_id]


def test_runs_and_instances_are_listed_in_pages(registry: RegistryStub) -> None:
    created = [create_run(registry, profile("coder")).run_id for _ in range(5)]
    seen, token, pages = [], "", 0
    while True:
        page = registry.ListRuns(pb.ListRunsRequest(page_size=2, page_token=token))
        assert len(page.runs) <= 2
        seen += [r.run_id for r in page.runs]
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert seen[-5:] == created and len(seen) == len(set(seen)) and pages >= 3

    run_id = created[0]
    opened = [open_instance(registry, run_id, "coder").agent_id for _ in range(3)]
    first = registry.ListInstances(pb.ListInstancesRequest(run_id=run_id, page_size=2))
    rest = registry.ListInstances(
        pb.ListInstancesRequest(run_id=run_id, page_size=2, page_token=first.next_page_token)
    )
    assert [i.agent_id for i in [*first.instances, *rest.instances]] == opened
    assert rest.next_page_token == ""

    foreign = refused(
        registry.ListInstances, pb.ListInstancesRequest(run_id=created[1], page_token=first.next_page_token)
    )
    assert (foreign.code, foreign.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN")
    garbage = refused(registry.ListRuns, pb.ListRunsRequest(page_token="not-a-token"))
    assert (garbage.code, garbage.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN")
    negative = refused(registry.ListRuns, pb.ListRunsRequest(page_size=-1))
    assert (negative.code, negative.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")


def test_run_created_and_finished_events_reach_registrys_outbox(registry: RegistryStub, suite: Suite) -> None:
    run = create_run(registry, profile("coder"))
    registry.FinishRun(pb.FinishRunRequest(run_id=run.run_id))
    engine = create_engine(suite.urls["registry"])
    try:
        with engine.connect() as conn:
            events = Outbox(ORIGIN, RegOutboxRow, RegStreamHeadRow).read(conn, 0, 1000, run.run_id).events
    finally:
        engine.dispose()
    assert [(e.origin, e.agent_id, e.stream_seq, e.run.status) for e in events] == [
        ("registry", "", 1, "created"),
        ("registry", "", 2, "finished"),
    ]


def test_spawn_and_fork_need_their_agent_and_a_profile(registry: RegistryStub) -> None:
    run = create_run(registry, profile("coder"))
    lead = open_instance(registry, run.run_id, "coder")
    for call, request, field in (
        (
            registry.SpawnSubagent,
            pb.SpawnSubagentRequest(run_id=run.run_id, profile="coder"),
            "parent_agent_id",
        ),
        (
            registry.SpawnSubagent,
            pb.SpawnSubagentRequest(run_id=run.run_id, parent_agent_id=lead.agent_id),
            "profile",
        ),
        (registry.ForkInstance, pb.ForkInstanceRequest(run_id=run.run_id), "agent_id"),
        (registry.OpenInstance, pb.OpenInstanceRequest(run_id=run.run_id), "profile"),
        (registry.OpenInstance, pb.OpenInstanceRequest(profile="coder"), "run_id"),
        (registry.GetRun, pb.GetRunRequest(), "run_id"),
    ):
        refusal = refused(call, request)
        assert (refusal.code, refusal.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD"), field
        assert field in refusal.message
    assert spawn(registry, run.run_id, lead.agent_id, "coder").agent_id == "coder-1"
    assert fork(registry, run.run_id, lead.agent_id).agent_id == "coder-2"
