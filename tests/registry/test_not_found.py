"""R47: unknown run, agent and profile ids are NOT_FOUND with a reason and a message naming the id."""

from __future__ import annotations

import grpc

from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub as RegistryStub
from tests.harness import refused
from tests.harness.registry import create_run, full_profile, open_instance

NO_RUN = "run-000000000000"


def test_r47_unknown_run_ids_are_not_found(registry: RegistryStub) -> None:
    for call, request in (
        (registry.GetRun, pb.GetRunRequest(run_id=NO_RUN)),
        (registry.FinishRun, pb.FinishRunRequest(run_id=NO_RUN)),
        (registry.OpenInstance, pb.OpenInstanceRequest(run_id=NO_RUN, profile="coder")),
        (
            registry.SpawnSubagent,
            pb.SpawnSubagentRequest(run_id=NO_RUN, parent_agent_id="coder-0", profile="c"),
        ),
        (registry.ForkInstance, pb.ForkInstanceRequest(run_id=NO_RUN, agent_id="coder-0")),
        (registry.GetInstance, pb.GetInstanceRequest(run_id=NO_RUN, agent_id="coder-0")),
        (registry.ListInstances, pb.ListInstancesRequest(run_id=NO_RUN)),
    ):
        refusal = refused(call, request)
        assert (refusal.code, refusal.reason) == (grpc.StatusCode.NOT_FOUND, "RUN_NOT_FOUND"), call
        assert NO_RUN in refusal.message


def test_r47_unknown_agent_ids_are_not_found(registry: RegistryStub) -> None:
    run = create_run(registry, full_profile("coder"))
    open_instance(registry, run.run_id, "coder")
    for call, request in (
        (registry.GetInstance, pb.GetInstanceRequest(run_id=run.run_id, agent_id="coder-7")),
        (
            registry.SpawnSubagent,
            pb.SpawnSubagentRequest(run_id=run.run_id, parent_agent_id="coder-7", profile="coder"),
        ),
        (registry.ForkInstance, pb.ForkInstanceRequest(run_id=run.run_id, agent_id="coder-7")),
    ):
        refusal = refused(call, request)
        assert (refusal.code, refusal.reason) == (grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND"), call
        assert "coder-7" in refusal.message


def test_r47_an_agent_of_another_run_is_not_found_in_this_one(registry: RegistryStub) -> None:
    one = create_run(registry, full_profile("coder"))
    other = create_run(registry, full_profile("coder"))
    agent = open_instance(registry, one.run_id, "coder").agent_id
    refusal = refused(registry.ForkInstance, pb.ForkInstanceRequest(run_id=other.run_id, agent_id=agent))
    assert (refusal.code, refusal.reason) == (grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND")


def test_r47_unknown_profiles_are_not_found_naming_the_runs_profiles(registry: RegistryStub) -> None:
    run = create_run(registry, full_profile("coder"), full_profile("reviewer"))
    lead = open_instance(registry, run.run_id, "coder")
    for call, request in (
        (registry.OpenInstance, pb.OpenInstanceRequest(run_id=run.run_id, profile="tester")),
        (
            registry.SpawnSubagent,
            pb.SpawnSubagentRequest(run_id=run.run_id, parent_agent_id=lead.agent_id, profile="tester"),
        ),
    ):
        refusal = refused(call, request)
        assert (refusal.code, refusal.reason) == (grpc.StatusCode.NOT_FOUND, "PROFILE_NOT_FOUND")
        assert "'tester'" in refusal.message and "coder" in refusal.message and "reviewer" in refusal.message
    assert [
        i.agent_id for i in registry.ListInstances(pb.ListInstancesRequest(run_id=run.run_id)).instances
    ] == [lead.agent_id]
