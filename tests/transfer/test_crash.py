"""Crash safety (R27): Transfer killed with SIGKILL right after journaling each step, then restarted on the
same database. The caller sees UNAVAILABLE as the process dies; after the restart a retry with the same
request id gets the final answer, and the transfer happened exactly once: one successor in Registry, the
predecessor's stores handed over once, each event once in ModuleStore's outbox. Until step 4 the successor
is invisible in Registry."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.transfer.v1 import transfer_pb2
from ggmodules.transfer.v1 import transfer_service_pb2 as tr
from ggmodules.transfer.v1.transfer_service_pb2_grpc import TransferServiceStub
from tests.harness import ServiceProcess, Suite, drop_database, new_database_url, open_channel, refused
from tests.harness.registry import create_run, edge, fsm, full_profile, module, open_instance, profile
from tests.harness.transfers import events_after, head, holders, instance, instance_ids, put_everything, shape
from tests.tools.crashing import CRASH, LAUNCHER

STEPS = {0: "asked", 1: "planned", 2: "reserved", 3: "handed over", 4: "completed"}
# The killed process's lease on its transfer has to expire before the restarted one takes it over.
LEASE = {"GGMODULES_TRANSFER_LEASE_SECONDS": "1"}


@pytest.fixture()
def transfer_database(suite: Suite, tmp_path: Path) -> Iterator[str]:
    url = new_database_url(suite.backend, "transfer", tmp_path)
    yield url
    drop_database(url)


def start_transfer(suite: Suite, database: str, crash_after: int | None = None) -> ServiceProcess:
    return ServiceProcess(
        "transfer",
        "--database-url",
        database,
        "--log-level",
        "warning",
        "--registry-address",
        suite.registry.address,
        "--modulestore-address",
        suite.modulestore.address,
        env={**LEASE, CRASH: str(crash_after)} if crash_after is not None else LEASE,
        launcher=LAUNCHER,
    )


def ask(mode: str, run_id: str, agent_id: str) -> tuple[str, Any]:
    if mode == "transition":
        return "Transition", tr.TransitionRequest(
            request_id=f"{run_id}/crash", run_id=run_id, agent_id=agent_id, to_state="code"
        )
    return "Exec", tr.ExecRequest(
        request_id=f"{run_id}/crash", run_id=run_id, agent_id=agent_id, profile="coder"
    )


@pytest.mark.parametrize(
    "step", list(STEPS), ids=[f"after-{n}-{w.replace(' ', '-')}" for n, w in STEPS.items()]
)
def test_r27_sigkill_after_each_step_then_restart_completes_exactly_once(
    suite: Suite, registry: Any, modulestore: Any, transfer_database: str, step: int
) -> None:
    mode = "transition" if step % 2 else "exec"
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code", "history", "tasks"))
    coder = profile("coder", tasks=module(), archive=module())
    run = create_run(registry, full_profile("planner"), coder, machine=machine)
    planner = open_instance(registry, run.run_id, "planner")
    put_everything(modulestore, planner, "before the crash")
    since = head(modulestore)
    method, request = ask(mode, run.run_id, planner.agent_id)

    doomed = start_transfer(suite, transfer_database, crash_after=step)
    with open_channel(doomed.address) as channel, pytest.raises(grpc.RpcError) as died:
        getattr(TransferServiceStub(channel), method)(request, timeout=30)
    assert died.value.code() == grpc.StatusCode.UNAVAILABLE
    assert doomed.proc.wait(15) == -9  # SIGKILL, by its own hand
    if step < 4:
        # Never a half state visible as done: the successor is invisible until step 4.
        assert instance_ids(registry, run.run_id) == [planner.agent_id]
        assert instance(registry, run.run_id, planner.agent_id).successor_agent_id == ""

    restarted = start_transfer(suite, transfer_database)
    try:
        with open_channel(restarted.address) as channel:
            stub = TransferServiceStub(channel)
            answer = getattr(stub, method)(request, timeout=30).transfer
            again = getattr(stub, method)(request, timeout=30).transfer
            journal = stub.GetTransfer(
                tr.GetTransferRequest(run_id=run.run_id, request_id=request.request_id)
            )
    finally:
        restarted.terminate()

    assert answer == again == journal.transfer
    assert answer.state == transfer_pb2.TRANSFER_STATE_COMPLETED
    successor = answer.successor_agent_id
    assert instance_ids(registry, run.run_id) == [planner.agent_id, successor]
    assert instance(registry, run.run_id, planner.agent_id).successor_agent_id == successor
    assert list(instance(registry, run.run_id, successor).roster) == list(answer.roster)
    for row in planner.roster:
        if row.enabled:  # handed over once: the predecessor lets go of every store it held
            assert holders(modulestore, run.run_id, row.store_id)[planner.agent_id] is False
    events = shape(events_after(modulestore, run.run_id, since))
    assert len(events) == len(set(events))  # each event once
    assert [b for b, _, _ in events].count("roster") == 1
    held = {r.store_id for r in planner.roster if r.enabled}
    kept = {r.store_id for r in answer.roster if r.enabled}
    assert sorted(s for b, _, s in events if b == "drain") == sorted(held - kept)
    assert sorted(s for b, _, s in events if b == "restate") == sorted(kept)


def test_r27_a_refusal_met_when_resuming_before_step_3_releases_the_reservation(
    suite: Suite, registry: Any, modulestore: Any, transfer_database: str
) -> None:
    """Killed after reserving. Meanwhile ModuleStore handed the predecessor on to someone else, so the
    resumed handover is refused: the reservation is released, the caller gets the refusal, nothing applied."""
    run = create_run(registry, full_profile("planner"), full_profile("coder"))
    planner = open_instance(registry, run.run_id, "planner")
    request = tr.ExecRequest(
        request_id=f"{run.run_id}/late", run_id=run.run_id, agent_id=planner.agent_id, profile="coder"
    )
    doomed = start_transfer(suite, transfer_database, crash_after=2)
    with open_channel(doomed.address) as channel, pytest.raises(grpc.RpcError):
        TransferServiceStub(channel).Exec(request, timeout=30)
    doomed.proc.wait(15)
    history = svc.HandoverKind(
        kind=c.KIND_HISTORY,
        outcome=c.OUTCOME_CARRIED,
        binding=ms.Binding(kind=c.KIND_HISTORY, may_write=True),
    )
    modulestore.Handover(
        svc.HandoverRequest(
            run_id=run.run_id,
            predecessor_agent_id=planner.agent_id,
            successor_agent_id="elsewhere-0",
            profile="coder",
            cause="exec",
            kinds=[history],
        )
    )

    restarted = start_transfer(suite, transfer_database)
    try:
        with open_channel(restarted.address) as channel:
            code, reason, *_ = refused(lambda: TransferServiceStub(channel).Exec(request, timeout=30))
    finally:
        restarted.terminate()

    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "HANDED_ON")
    assert instance_ids(registry, run.run_id) == [planner.agent_id]
    # Released: Registry takes a new reservation for the predecessor.
    again = reg.ReserveSuccessorRequest(
        request_id=f"{run.run_id}/again",
        run_id=run.run_id,
        predecessor_agent_id=planner.agent_id,
        profile="coder",
        cause="exec",
    )
    assert registry.ReserveSuccessor(again).agent_id
