"""Transfer leases (R27 with several replicas, issue 9): two Transfer processes on one journal.

The same transfer sent to both at the same moment is applied once, and both callers get the same answer.
A replica killed with SIGKILL right after a step leaves its transfer to the other, which takes the
transfer over once the lease expires and finishes it: nobody sends the transfer again, the test only reads
the journal (GetTransfer) until it has ended. A replica stopped (SIGSTOP) there instead is taken over the
same way, and once thawed applies nothing again.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from ggmodules.transfer.v1 import transfer_pb2
from ggmodules.transfer.v1 import transfer_service_pb2 as tr
from ggmodules.transfer.v1.transfer_service_pb2_grpc import TransferServiceStub
from tests.harness import ServiceProcess, Suite, drop_database, eventually, new_database_url, open_channel
from tests.harness.registry import create_run, full_profile, open_instance
from tests.harness.transfers import events_after, head, instance, instance_ids, shape
from tests.tools.crashing import CRASH, FREEZE, LAUNCHER

DUPLICATES = 12
# Seconds the test reads the journal before reporting the transfer never finished (a lease is 1 s).
TAKEOVER_SECONDS = 30.0


@pytest.fixture()
def journal(suite: Suite, tmp_path: Path) -> Iterator[str]:
    url = new_database_url(suite.backend, "transfer", tmp_path)
    yield url
    drop_database(url)


def replica(suite: Suite, journal: str, env: dict[str, str] | None = None) -> ServiceProcess:
    return ServiceProcess(
        "transfer", "--database-url", journal, "--log-level", "warning", "--registry-address",
        suite.registry.address, "--modulestore-address", suite.modulestore.address, "--lease-seconds", "1",
        "--lease-scan-seconds", "0.2", env=env, launcher=LAUNCHER,
    )


def test_r27_the_same_transfer_sent_to_two_replicas_at_once_is_applied_once_with_one_answer(
    suite: Suite, registry: Any, modulestore: Any, journal: str
) -> None:
    run = create_run(registry, full_profile("planner"), full_profile("coder"))
    planners = [open_instance(registry, run.run_id, "planner") for _ in range(DUPLICATES)]
    since = head(modulestore)
    first, second = replica(suite, journal), replica(suite, journal)
    answers: dict[tuple[str, int], Any] = {}
    try:
        channels = [open_channel(first.address), open_channel(second.address)]
        stubs = [TransferServiceStub(ch) for ch in channels]

        def send(planner: Any, i: int, together: threading.Barrier) -> None:
            request = tr.ExecRequest(request_id=f"{planner.agent_id}/twice", run_id=run.run_id,
                                     agent_id=planner.agent_id, profile="coder")
            together.wait()
            try:
                answers[(planner.agent_id, i)] = stubs[i].Exec(request, timeout=60).transfer
            except grpc.RpcError as err:
                answers[(planner.agent_id, i)] = err.code()

        threads = []
        for planner in planners:
            together = threading.Barrier(2)
            threads += [threading.Thread(target=send, args=(planner, i, together)) for i in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for ch in channels:
            ch.close()
    finally:
        first.terminate()
        second.terminate()

    for planner in planners:
        one, other = answers[(planner.agent_id, 0)], answers[(planner.agent_id, 1)]
        assert isinstance(one, transfer_pb2.Transfer), (planner.agent_id, one)
        assert one == other, f"{planner.agent_id}: the replicas answered differently"
        assert one.state == transfer_pb2.TRANSFER_STATE_COMPLETED
        assert instance(registry, run.run_id, planner.agent_id).successor_agent_id == one.successor_agent_id
    successors = {answers[(p.agent_id, 0)].successor_agent_id for p in planners}
    assert sorted(instance_ids(registry, run.run_id)) == sorted({p.agent_id for p in planners} | successors)
    events = shape(events_after(modulestore, run.run_id, since))
    assert len(events) == len(set(events))  # no handover applied twice
    assert [b for b, _, _ in events].count("roster") == DUPLICATES


@pytest.mark.parametrize("step", [0, 2, 3], ids=["after-asked", "after-reserved", "after-handed-over"])
def test_r27_a_replica_killed_mid_transfer_leaves_it_to_the_other_which_finishes_it_unasked(
    suite: Suite, registry: Any, modulestore: Any, journal: str, step: int
) -> None:
    run = create_run(registry, full_profile("planner"), full_profile("coder"))
    planner = open_instance(registry, run.run_id, "planner")
    request = tr.ExecRequest(request_id=f"{run.run_id}/dies", run_id=run.run_id, agent_id=planner.agent_id,
                             profile="coder")
    survivor = replica(suite, journal)
    doomed = replica(suite, journal, env={CRASH: str(step)})
    try:
        with open_channel(doomed.address) as channel, pytest.raises(grpc.RpcError) as died:
            TransferServiceStub(channel).Exec(request, timeout=30)
        assert died.value.code() == grpc.StatusCode.UNAVAILABLE
        assert doomed.proc.wait(15) == -9
        with open_channel(survivor.address) as channel:
            stub = TransferServiceStub(channel)
            look = tr.GetTransferRequest(run_id=run.run_id, request_id=request.request_id)
            end = time.monotonic() + TAKEOVER_SECONDS
            journaled = stub.GetTransfer(look, timeout=5).transfer
            while journaled.state == transfer_pb2.TRANSFER_STATE_PENDING and time.monotonic() < end:
                time.sleep(0.05)  # reading the journal again; nothing is sent to drive the transfer
                journaled = stub.GetTransfer(look, timeout=5).transfer
            again = stub.Exec(request, timeout=30).transfer  # a retry now only reads the first answer
    finally:
        survivor.terminate()

    assert journaled.state == transfer_pb2.TRANSFER_STATE_COMPLETED, "never taken over"
    assert again == journaled
    assert instance(registry, run.run_id, planner.agent_id).successor_agent_id == journaled.successor_agent_id
    assert instance_ids(registry, run.run_id) == [planner.agent_id, journaled.successor_agent_id]


def test_r27_a_replica_frozen_mid_transfer_is_taken_over_and_once_thawed_applies_nothing_again(
    suite: Suite, registry: Any, modulestore: Any, journal: str
) -> None:
    """A replica that stops (SIGSTOP: a hung process, a paused host) right after journaling the reservation
    keeps its connections and, once thawed, goes on from that very point with a lease that expired long
    ago. The other replica takes the transfer over and finishes it; the thawed one finds its lease gone and
    applies nothing again (its handover repeated under the step's request id is answered from ModuleStore's
    log, and its journal write is refused), and asked again it answers what the other journaled."""
    run = create_run(registry, full_profile("planner"), full_profile("coder"))
    planner = open_instance(registry, run.run_id, "planner")
    request = tr.ExecRequest(request_id=f"{run.run_id}/freezes", run_id=run.run_id, agent_id=planner.agent_id,
                             profile="coder")
    look = tr.GetTransferRequest(run_id=run.run_id, request_id=request.request_id)
    survivor = replica(suite, journal)
    frozen = replica(suite, journal, env={FREEZE: "2"})
    answered: list[object] = []

    def ask_the_one_that_freezes() -> None:
        with open_channel(frozen.address) as channel:
            try:
                answered.append(TransferServiceStub(channel).Exec(request, timeout=60).transfer)
            except grpc.RpcError as err:
                answered.append(err.code())

    caller = threading.Thread(target=ask_the_one_that_freezes, daemon=True)
    try:
        caller.start()
        eventually(lambda: "stopping the process" in frozen.log_text(), "the replica stopped after reserving",
                   30)
        with open_channel(survivor.address) as channel:
            stub = TransferServiceStub(channel)
            pending = transfer_pb2.TRANSFER_STATE_PENDING
            eventually(lambda: stub.GetTransfer(look, timeout=5).transfer.state != pending,
                       "the transfer taken over and ended", TAKEOVER_SECONDS)
            journaled = stub.GetTransfer(look, timeout=5).transfer
        since, instances = head(modulestore), instance_ids(registry, run.run_id)
        os.kill(frozen.proc.pid, signal.SIGCONT)
        eventually(lambda: "taken over by another replica" in frozen.log_text(),
                   "the thawed replica finding its lease gone", 30)
        caller.join(60)
        with open_channel(frozen.address) as channel:
            again = TransferServiceStub(channel).Exec(request, timeout=30).transfer
    finally:
        os.kill(frozen.proc.pid, signal.SIGCONT)
        survivor.terminate()
        frozen.terminate()

    assert journaled.state == transfer_pb2.TRANSFER_STATE_COMPLETED
    assert events_after(modulestore, run.run_id, since) == []  # nothing applied again
    assert instance_ids(registry, run.run_id) == instances == [planner.agent_id, journaled.successor_agent_id]
    assert again == journaled
    # The first caller's connection was closed by its keepalive while the replica stood still, or (thawed in
    # time) it was answered what the journal holds.
    assert answered in ([grpc.StatusCode.UNAVAILABLE], [journaled])
