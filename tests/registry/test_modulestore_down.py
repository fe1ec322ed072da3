"""Opening spans Registry and ModuleStore. With ModuleStore unreachable the answer is UNAVAILABLE and nothing
is half-visible; a retry with the same request id, even after Registry crashed, opens that one instance."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.modulestore.v1.modulestore_service_pb2_grpc import ModuleStoreServiceStub as ModuleStoreStub
from ggmodules.registry.v1 import registry_service_pb2 as pb
from tests.harness import ServiceProcess, Suite, drop_database, new_database_url, open_channel, refused, stubs
from tests.harness.registry import create_run, full_profile, instance_ids, open_instance


@pytest.fixture()
def registry_database(suite: Suite, tmp_path: Path) -> Iterator[str]:
    url = new_database_url(suite.backend, "registry", tmp_path)
    yield url
    drop_database(url)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_unreachable_modulestore_is_unavailable_and_a_retry_after_a_crash_opens_one_instance(
    registry_database: str, suite: Suite, modulestore: ModuleStoreStub
) -> None:
    cut_off = ServiceProcess(
        "registry", "--database-url", registry_database, "--modulestore-address", f"127.0.0.1:{closed_port()}"
    )
    try:
        with open_channel(cut_off.address) as channel:
            registry = stubs(channel, "registry")
            run = create_run(registry, full_profile("coder"))
            request = pb.OpenInstanceRequest(request_id="open-while-down", run_id=run.run_id, profile="coder")
            for _ in range(2):
                refusal = refused(registry.OpenInstance, request)
                assert (refusal.code, refusal.reason) == (grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")
                assert "same request_id" in refusal.message
            assert instance_ids(registry, run.run_id) == []
            hidden = refused(
                registry.GetInstance, pb.GetInstanceRequest(run_id=run.run_id, agent_id="coder-0")
            )
            assert (hidden.code, hidden.reason) == (grpc.StatusCode.NOT_FOUND, "AGENT_NOT_FOUND")
    finally:
        cut_off.kill()

    restarted = ServiceProcess(
        "registry", "--database-url", registry_database, "--modulestore-address", suite.modulestore.address
    )
    try:
        with open_channel(restarted.address) as channel:
            registry = stubs(channel, "registry")
            opened = registry.OpenInstance(request).instance
            assert opened.agent_id == "coder-0"
            assert registry.OpenInstance(request).instance == opened
            assert instance_ids(registry, run.run_id) == ["coder-0"]
            assert open_instance(registry, run.run_id, "coder").agent_id == "coder-1"
    finally:
        assert restarted.terminate() == 0

    events = modulestore.ReadOutbox(ms.ReadOutboxRequest(run_id=run.run_id, page_size=1000)).events
    assert [e.agent_id for e in events if e.WhichOneof("body") == "roster"] == ["coder-0", "coder-1"]
