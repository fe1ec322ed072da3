"""R49 under concurrency: the same request sent many times at once opens one instance, and every caller
gets the same answer."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.modulestore.v1.modulestore_service_pb2_grpc import ModuleStoreServiceStub as ModuleStoreStub
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub as RegistryStub
from tests.harness.registry import all_run_ids, create_run, full_profile, instance_ids


def test_r49_concurrent_retries_of_one_open_open_one_instance(
    registry: RegistryStub, modulestore: ModuleStoreStub
) -> None:
    run = create_run(registry, full_profile("coder"))
    request = pb.OpenInstanceRequest(request_id="racing-open", run_id=run.run_id, profile="coder")
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: registry.OpenInstance(request), range(8)))
    assert all(a == answers[0] for a in answers)
    assert instance_ids(registry, run.run_id) == [answers[0].instance.agent_id]
    events = modulestore.ReadOutbox(ms.ReadOutboxRequest(run_id=run.run_id, page_size=1000)).events
    assert [e.agent_id for e in events if e.WhichOneof("body") == "roster"] == [answers[0].instance.agent_id]


def test_r49_concurrent_retries_of_one_create_run_create_one_run(registry: RegistryStub) -> None:
    request = pb.CreateRunRequest(request_id="racing-create", name="race", profiles=[full_profile("coder")])
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: registry.CreateRun(request), range(8)))
    assert all(a == answers[0] for a in answers)
    assert all_run_ids(registry).count(answers[0].run.run_id) == 1
