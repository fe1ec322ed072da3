"""R49: a retry with the same request id returns the first answer and applies nothing twice."""

from __future__ import annotations

import grpc

from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.modulestore.v1.modulestore_service_pb2_grpc import ModuleStoreServiceStub as ModuleStoreStub
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub as RegistryStub
from tests.harness import refused
from tests.harness.registry import all_run_ids, create_run, full_profile, instance_ids, open_instance


def _rosters_stated(modulestore: ModuleStoreStub, run_id: str) -> list[str]:
    events = modulestore.ReadOutbox(ms.ReadOutboxRequest(run_id=run_id, page_size=1000)).events
    return [e.agent_id for e in events if e.WhichOneof("body") == "roster"]


def test_r49_a_retried_create_run_returns_the_same_run_once(registry: RegistryStub) -> None:
    request = pb.CreateRunRequest(request_id="create-once", name="once", profiles=[full_profile("coder")])
    first = registry.CreateRun(request)
    again = registry.CreateRun(request)
    assert again == first
    assert all_run_ids(registry).count(first.run.run_id) == 1

    reused = pb.CreateRunRequest(
        request_id="create-once", name="something else", profiles=[full_profile("coder")]
    )
    refusal = refused(registry.CreateRun, reused)
    assert (refusal.code, refusal.reason) == (grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED")


def test_r49_a_retried_open_returns_the_same_instance_and_opens_one(
    registry: RegistryStub, modulestore: ModuleStoreStub
) -> None:
    run = create_run(registry, full_profile("coder"))
    first = open_instance(registry, run.run_id, "coder", request_id="open-1")
    again = open_instance(registry, run.run_id, "coder", request_id="open-1")
    assert again == first
    assert instance_ids(registry, run.run_id) == [first.agent_id]
    assert _rosters_stated(modulestore, run.run_id) == [first.agent_id]

    other = open_instance(registry, run.run_id, "coder", request_id="open-2")
    assert other.agent_id != first.agent_id
    refusal = refused(
        registry.OpenInstance, pb.OpenInstanceRequest(request_id="open-1", run_id=run.run_id, profile="other")
    )
    assert (refusal.code, refusal.reason) == (grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED")


def test_r49_retried_spawns_forks_and_finishes_apply_once(
    registry: RegistryStub, modulestore: ModuleStoreStub
) -> None:
    run = create_run(registry, full_profile("coder"))
    lead = open_instance(registry, run.run_id, "coder")
    spawn = pb.SpawnSubagentRequest(
        request_id="s", run_id=run.run_id, parent_agent_id=lead.agent_id, profile="coder"
    )
    fork = pb.ForkInstanceRequest(request_id="f", run_id=run.run_id, agent_id=lead.agent_id)
    assert registry.SpawnSubagent(spawn) == registry.SpawnSubagent(spawn)
    assert registry.ForkInstance(fork) == registry.ForkInstance(fork)
    assert instance_ids(registry, run.run_id) == ["coder-0", "coder-1", "coder-2"]
    assert _rosters_stated(modulestore, run.run_id) == ["coder-0", "coder-1", "coder-2"]

    finish = pb.FinishRunRequest(request_id="finish", run_id=run.run_id)
    assert registry.FinishRun(finish) == registry.FinishRun(finish)


def test_r49_without_a_request_id_every_call_is_a_new_request(registry: RegistryStub) -> None:
    run = create_run(registry, full_profile("coder"))
    opened = [open_instance(registry, run.run_id, "coder").agent_id for _ in range(2)]
    assert opened == ["coder-0", "coder-1"]
