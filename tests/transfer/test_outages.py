"""Registry or ModuleStore unreachable mid-transfer: the caller gets UNAVAILABLE, never a half state (the
successor stays invisible in Registry until the transfer completes); once the dependency is back, the
resumer or a retry with the same request id gives the final answer, applied once.

ModuleStore and Registry run as OS processes on fixed ports, so a restart keeps the address."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from ggmodules.registry.v1.registry_service_pb2_grpc import RegistryServiceStub
from ggmodules.transfer.v1 import transfer_pb2
from ggmodules.transfer.v1 import transfer_service_pb2 as tr
from ggmodules.transfer.v1.transfer_service_pb2_grpc import TransferServiceStub
from tests.harness import (
    BACKENDS,
    InProcessService,
    LoopThread,
    ServiceProcess,
    assert_refused,
    drop_database,
    new_database_url,
    open_channel,
    refused,
    service_config,
    stubs,
)
from tests.harness.registry import create_run, full_profile, open_instance
from tests.harness.transfers import events_after, head, instance, instance_ids, put_everything, shape
from tests.tools.crashing import CRASH, LAUNCHER

POLL_FIRST, POLL_MAX = 0.01, 0.5
LEASE_ARGS = ("--lease-seconds", "2", "--lease-scan-seconds", "0.5")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@dataclass
class Cluster:
    """ModuleStore and Registry as processes on fixed ports; Transfer in-process or as a process."""

    directory: Path
    backend: str
    urls: dict[str, str] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    procs: dict[str, ServiceProcess] = field(default_factory=dict)
    channels: list[grpc.Channel] = field(default_factory=list)
    loop: LoopThread | None = None
    in_process: InProcessService | None = None

    def address(self, name: str) -> str:
        return f"127.0.0.1:{self.ports[name]}"

    def start(self, name: str) -> None:
        if name not in self.urls:
            self.urls[name] = new_database_url(self.backend, name, self.directory)
            self.ports[name] = free_port()
        args = ["--database-url", self.urls[name], "--port", str(self.ports[name]), "--log-level", "warning"]
        if name == "registry":
            args += ["--modulestore-address", self.address("modulestore")]
        self.procs[name] = ServiceProcess(name, *args)

    def _transfer_database(self) -> None:
        """Transfer's database, made once (`setdefault` made a new PostgreSQL database at every restart of
        Transfer, and left all but the first behind)."""
        if "transfer" not in self.urls:
            self.urls["transfer"] = new_database_url(self.backend, "transfer", self.directory)

    def kill(self, name: str) -> None:
        self.procs.pop(name).kill()

    def transfer_process(self, crash_after: int | None = None) -> ServiceProcess:
        self._transfer_database()
        return ServiceProcess(
            "transfer",
            "--database-url",
            self.urls["transfer"],
            "--log-level",
            "warning",
            "--registry-address",
            self.address("registry"),
            "--modulestore-address",
            self.address("modulestore"),
            # A Transfer started again after a kill -9 waits out the dead process's lease on a transfer it
            # left pending before driving it (server/transfer/leases.py). The default 10 s left a call
            # there 0.3 s short of its own 10 s deadline; a short lease keeps it well inside.
            *LEASE_ARGS,
            env={CRASH: str(crash_after)} if crash_after is not None else {},
            launcher=LAUNCHER,
        )

    def transfer_in_process(self) -> str:
        self._transfer_database()
        self.loop = LoopThread()
        config = service_config(
            "transfer",
            database_url=self.urls["transfer"],
            registry_address=self.address("registry"),
            modulestore_address=self.address("modulestore"),
        )
        self.in_process = InProcessService(self.loop, config)
        return self.in_process.address

    def stub(self, kind: Any, address: str) -> Any:
        channel = open_channel(address)
        self.channels.append(channel)
        return kind(channel)

    def close(self) -> None:
        for channel in self.channels:
            channel.close()
        if self.in_process is not None:
            self.in_process.stop()
        if self.loop is not None:
            self.loop.close()
        for proc in self.procs.values():
            proc.kill()
        for url in self.urls.values():
            drop_database(url)


@pytest.fixture(params=BACKENDS)
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(tmp_path, request.param)
    try:
        c.start("modulestore")
        c.start("registry")
        yield c
    finally:
        c.close()


def current(transfer: Any, run_id: str, request_id: str) -> transfer_pb2.Transfer:
    got: transfer_pb2.Transfer = transfer.GetTransfer(
        tr.GetTransferRequest(run_id=run_id, request_id=request_id)
    ).transfer
    return got


def settled(transfer: Any, run_id: str, request_id: str, timeout: float = 30) -> transfer_pb2.Transfer:
    """GetTransfer until the transfer is no longer pending (the resumer finished it), failing at `timeout`.

    Transfer offers nothing to wait on for a transfer another party drives, so this polls, backing off from
    POLL_FIRST to POLL_MAX seconds between reads instead of spinning."""
    deadline = time.monotonic() + timeout
    delay = POLL_FIRST
    while True:
        got = current(transfer, run_id, request_id)
        left = deadline - time.monotonic()
        if got.state != transfer_pb2.TRANSFER_STATE_PENDING:
            return got
        if left <= 0:
            raise AssertionError(f"transfer {request_id!r} still pending after {timeout}s")
        time.sleep(min(delay, left))
        delay = min(delay * 2, POLL_MAX)


def _exactly_once(modulestore: Any, registry: Any, run_id: str, planner: Any, done: Any, since: int) -> None:
    assert done.state == transfer_pb2.TRANSFER_STATE_COMPLETED
    assert instance_ids(registry, run_id) == [planner.agent_id, done.successor_agent_id]
    events = shape(events_after(modulestore, run_id, since))
    assert len(events) == len(set(events))
    assert [b for b, _, _ in events].count("roster") == 1
    assert sorted(s for b, _, s in events if b == "restate") == sorted(
        r.store_id for r in done.roster if r.enabled
    )


def test_modulestore_unreachable_at_the_handover_then_the_resumer_completes(cluster: Cluster) -> None:
    registry = cluster.stub(RegistryServiceStub, cluster.address("registry"))
    modulestore = cluster.stub(lambda ch: stubs(ch, "modulestore"), cluster.address("modulestore"))
    transfer = cluster.stub(TransferServiceStub, cluster.transfer_in_process())
    run = create_run(registry, full_profile("planner"), full_profile("coder"))
    planner = open_instance(registry, run.run_id, "planner")
    put_everything(modulestore, planner, "kept")
    since = head(modulestore)
    request = tr.ExecRequest(
        request_id="while-down", run_id=run.run_id, agent_id=planner.agent_id, profile="coder"
    )

    cluster.kill("modulestore")
    code, reason, _, message = refused(lambda: transfer.Exec(request))

    assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")
    assert "ModuleStore" in message and "same request_id" in message
    pending = current(transfer, run.run_id, "while-down")
    assert pending.state == transfer_pb2.TRANSFER_STATE_PENDING
    assert instance_ids(registry, run.run_id) == [planner.agent_id]  # reserved, invisible
    assert instance(registry, run.run_id, planner.agent_id).successor_agent_id == ""

    cluster.start("modulestore")
    done = settled(transfer, run.run_id, "while-down")
    _exactly_once(modulestore, registry, run.run_id, planner, done, since)
    assert transfer.Exec(request).transfer == done


def test_registry_unreachable_at_the_start_then_a_retry_completes(cluster: Cluster) -> None:
    registry = cluster.stub(RegistryServiceStub, cluster.address("registry"))
    modulestore = cluster.stub(lambda ch: stubs(ch, "modulestore"), cluster.address("modulestore"))
    transfer = cluster.stub(TransferServiceStub, cluster.transfer_in_process())
    run = create_run(registry, full_profile("planner"), full_profile("coder"))
    planner = open_instance(registry, run.run_id, "planner")
    since = head(modulestore)
    request = tr.ExecRequest(
        request_id="no-registry", run_id=run.run_id, agent_id=planner.agent_id, profile="coder"
    )

    cluster.kill("registry")
    code, reason, _, message = refused(lambda: transfer.Exec(request))
    assert (code, reason) == (grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")
    assert "Registry" in message
    assert events_after(modulestore, run.run_id, since) == []  # nothing handed over

    cluster.start("registry")
    done = transfer.Exec(request).transfer
    _exactly_once(modulestore, registry, run.run_id, planner, done, since)


def test_registry_unreachable_at_completion_rolls_forward_once_it_is_back(cluster: Cluster) -> None:
    """Handed over (step 3), then Transfer dies and Registry is away: the restarted Transfer answers
    UNAVAILABLE, and completes the transfer (never undoes it) once Registry returns."""
    registry = cluster.stub(RegistryServiceStub, cluster.address("registry"))
    modulestore = cluster.stub(lambda ch: stubs(ch, "modulestore"), cluster.address("modulestore"))
    run = create_run(registry, full_profile("planner"), full_profile("coder"))
    planner = open_instance(registry, run.run_id, "planner")
    since = head(modulestore)
    request = tr.ExecRequest(
        request_id="forward", run_id=run.run_id, agent_id=planner.agent_id, profile="coder"
    )
    doomed = cluster.transfer_process(crash_after=3)
    with open_channel(doomed.address) as channel, pytest.raises(grpc.RpcError):
        TransferServiceStub(channel).Exec(request, timeout=30)
    doomed.proc.wait(15)
    assert instance_ids(registry, run.run_id) == [planner.agent_id]  # handed over, not yet visible

    cluster.kill("registry")
    restarted = cluster.transfer_process()
    try:
        transfer = cluster.stub(TransferServiceStub, restarted.address)
        assert_refused(lambda: transfer.Exec(request), grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE")
        cluster.start("registry")
        done = settled(transfer, run.run_id, "forward")
        assert transfer.Exec(request).transfer == done
    finally:
        restarted.terminate()
    _exactly_once(modulestore, registry, run.run_id, planner, done, since)
