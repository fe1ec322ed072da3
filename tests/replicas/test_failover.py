"""A sibling call fails over (issue 9): a Registry configured with both ModuleStore replicas
(`--modulestore-address A,B`) keeps opening instances after one of them is killed with SIGKILL; none of
its answers is UNAVAILABLE, and the test client sends nothing twice."""

from __future__ import annotations

from pathlib import Path

from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.registry.v1 import registry_service_pb2_grpc as reg_grpc
from tests.harness import ServiceProcess, drop_database, needs_postgres, new_database_url, open_channel
from tests.harness.registry import create_run, full_profile

BEFORE, AFTER = 4, 12


@needs_postgres
def test_registry_whose_modulestore_replica_died_keeps_working_through_the_other(tmp_path: Path) -> None:
    url = new_database_url("postgres", "h9rep_failover", tmp_path)
    started: list[ServiceProcess] = []
    try:
        common = ("--database-url", url, "--log-level", "warning")
        started += [ServiceProcess("modulestore", *common) for _ in range(2)]
        both = ",".join(p.address for p in started)
        registry_process = ServiceProcess("registry", *common, "--modulestore-address", both)
        started.append(registry_process)
        with open_channel(registry_process.address) as channel:
            registry = reg_grpc.RegistryServiceStub(channel)
            run = create_run(registry, full_profile("planner"))

            def open_one(n: int) -> str:
                request = reg.OpenInstanceRequest(request_id=f"{run.run_id}/{n}", run_id=run.run_id,
                                                  profile="planner")
                return str(registry.OpenInstance(request, timeout=30).instance.agent_id)

            opened = [open_one(n) for n in range(BEFORE)]
            started[0].kill()  # SIGKILL: one ModuleStore replica dies
            opened += [open_one(n) for n in range(BEFORE, BEFORE + AFTER)]
        assert len(set(opened)) == BEFORE + AFTER
        assert started[1].proc.poll() is None
    finally:
        for p in started:
            if p.proc.poll() is None:
                p.kill()
        drop_database(url)
