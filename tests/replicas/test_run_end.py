"""R50 across replicas: a run ended through one ModuleStore replica (Registry's EndRun reaches only one)
takes no write through another. Each replica used to keep the ended runs in memory, read from the database
at start, so the other replica went on accepting the run's writes until it restarted."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.internal.v1 import modulestore_internal_service_pb2 as ms_internal
from tests.harness import ServiceProcess, drop_database, needs_postgres, new_database_url, open_channel, stubs
from tests.harness.modulestore import append, contents, new_run, open_agent
from tests.harness.refusals import refusal_of


@needs_postgres
def test_r50_a_run_ended_through_one_modulestore_replica_takes_no_write_through_the_other(
    tmp_path: Path,
) -> None:
    url = new_database_url("postgres", "ended_replicas", tmp_path)
    started: list[ServiceProcess] = []
    try:
        common = ("--database-url", url, "--log-level", "warning")
        started += [ServiceProcess("modulestore", *common) for _ in range(2)]
        with open_channel(started[0].address) as one, open_channel(started[1].address) as other:
            first, second = stubs(one, "modulestore"), stubs(other, "modulestore")
            run = new_run()
            agent = open_agent(first, run, "coder-0")
            append(second, agent, "before the end")  # the second replica serves this run's writes
            first.EndRun(ms_internal.EndRunRequest(run_id=run, status="finished"))
            with pytest.raises(grpc.RpcError) as caught:
                append(second, agent, "after the end")
            refused = refusal_of(caught.value)
            assert (refused.code, refused.reason) == (grpc.StatusCode.FAILED_PRECONDITION, "RUN_NOT_RUNNING")
            assert refused.metadata["status"] == "finished"
            history = contents(second, agent, c.KIND_HISTORY).contents.history
            assert [m.content for m in history.messages] == ["before the end"]
    finally:
        for p in started:
            p.kill()
        drop_database(url)
