"""`--only transfer`: exec cost with six kinds carried; Transfer, Registry and ModuleStore as three
processes."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from grpc_health.v1 import health_pb2, health_pb2_grpc

from ggmodules.common.v1 import common_pb2
from ggmodules.sdk import Client, Memories, Profile
from ggmodules.transfer.v1 import transfer_service_pb2, transfer_service_pb2_grpc
from tests.bench.common import (
    LONG_HISTORIES,
    append_request,
    percentile,
    timed,
)
from tests.harness import (
    ServiceProcess,
    credit,
    drop_database,
    new_database_url,
    open_channel,
    stubs,
)


class TransferBench:
    """Transfer, Registry and ModuleStore as three processes on SQLite. An agent holding all six kinds
    (history of N messages) execs into the other profile, which has all six too, again and again: each
    exec's successor is the next one's predecessor."""

    PROFILES = [
        Profile(name, memories=Memories(strategy="scratchpad"), tasks=True, skills="team", archive=True)
        for name in ("alpha", "beta")
    ]

    def __init__(self, directory: Path, quick: bool) -> None:
        self.quick = quick
        services = ("modulestore", "registry", "transfer")
        self.urls = [new_database_url("sqlite", service, directory) for service in services]
        quiet = ("--log-level", os.environ.get("GGMODULES_BENCH_LOG_LEVEL", "warning"))
        self.procs: list[ServiceProcess] = []
        try:
            self.procs.append(
                ServiceProcess("modulestore", "--database-url", self.urls[0], *quiet, env=LONG_HISTORIES)
            )
            ms_address = self.procs[0].address
            self.procs.append(ServiceProcess("registry", "--database-url", self.urls[1],
                                             "--modulestore-address", ms_address, *quiet))
            self.procs.append(ServiceProcess("transfer", "--database-url", self.urls[2],
                                             "--modulestore-address", ms_address,
                                             "--registry-address", self.procs[1].address, *quiet))
        except Exception:
            self.close()
            raise
        ms, registry, transfer = (p.address for p in self.procs)
        self.client = Client(registry, ms, transfer)
        self.ms_channel = open_channel(ms)
        self.ms = stubs(self.ms_channel, "modulestore")
        self.channel = open_channel(transfer)
        self.transfer = transfer_service_pb2_grpc.TransferServiceStub(self.channel)
        self.health = health_pb2_grpc.HealthStub(self.channel)

    def close(self) -> None:
        if hasattr(self, "client"):
            self.client.close()
            self.ms_channel.close()
            self.channel.close()
        for proc in reversed(self.procs):
            proc.terminate()
        for url in self.urls:
            drop_database(url)

    def noop(self) -> list[float]:
        check = health_pb2.HealthCheckRequest()
        timed(lambda: self.health.Check(check), 200)  # warm up
        return timed(lambda: self.health.Check(check), 300 if self.quick else 2000)

    def execs(self, size: int, count: int) -> list[float]:
        """`count` execs (after two unmeasured ones) of an agent holding all six kinds, `size` messages."""
        gg = self.client
        run = gg.create_run(f"bench-{size}", self.PROFILES, board=True)
        agent = gg.open_instance(run.id, "alpha")
        store = agent.history.store_id
        credit(run.id, agent.id)  # the bench writes the long history as the agent, beside the SDK
        left = size
        while left:
            batch = min(left, 1000)
            self.ms.Write(append_request(run.id, agent.id, store, batch))
            left -= batch
        agent.history.set_system_prompt("You plan.")
        agent.memories.write_pad("notes")
        agent.tasks.create("a task")
        agent.board.create_issue("GG", "an issue")
        agent.skills.put("plan", "how to plan", "step by step")
        agent.archive.archive_thread("earlier", [("user", "hello")])
        assert all(row.enabled for row in agent.roster)

        current, samples = agent.id, []
        for i in range(count + 2):
            request = transfer_service_pb2.ExecRequest(
                request_id=uuid.uuid4().hex, run_id=run.id, agent_id=current,
                profile="beta" if i % 2 == 0 else "alpha",
            )
            t0 = time.perf_counter()
            answer = self.transfer.Exec(request)
            elapsed = (time.perf_counter() - t0) * 1e6
            current = answer.transfer.successor_agent_id
            if i >= 2:
                samples.append(elapsed)
        moved = answer.transfer
        assert {o.outcome for o in moved.outcomes} == {common_pb2.OUTCOME_CARRIED}, moved
        assert len(moved.outcomes) == 6, moved
        return samples


def transfer_figures(quick: bool) -> None:
    count = 7 if quick else 15
    sizes = [10, 10_000] if quick else [10, 100_000]
    with tempfile.TemporaryDirectory() as tmp:
        bench = TransferBench(Path(tmp), quick)
        try:
            noop = bench.noop()
            execs = {size: bench.execs(size, count) for size in sizes}
        finally:
            bench.close()
    noop_p50 = percentile(noop, 0.5)
    print("\nTransfer (Transfer, Registry and ModuleStore as three processes, SQLite) — µs")
    print(f"  no-op unary RPC (health Check of Transfer)   p50 {noop_p50:8.0f}"
          f"   p99 {percentile(noop, 0.99):8.0f}")
    for size, samples in execs.items():
        median = statistics.median(samples)
        print(f"  exec, six kinds carried, {size:>7,}-message history   median {median:8.0f}"
              f"   (min {min(samples):.0f}, max {max(samples):.0f}, n={len(samples)})"
              f"   = {median / noop_p50:.2f}x no-op (target <= 8x)")
    small, large = (statistics.median(execs[size]) for size in sizes)
    print(f"  exec({sizes[1]:,}) / exec({sizes[0]:,}) = {large / small:.2f} (target: the same within noise)")


def figures(quick: bool) -> None:
    count = 7 if quick else 15
    sizes = [10, 10_000] if quick else [10, 100_000]
    with tempfile.TemporaryDirectory() as tmp:
        bench = TransferBench(Path(tmp), quick)
        try:
            noop = bench.noop()
            execs = {size: bench.execs(size, count) for size in sizes}
        finally:
            bench.close()
    noop_p50 = percentile(noop, 0.5)
    print("\nTransfer (Transfer, Registry and ModuleStore as three processes, SQLite) — µs")
    print(f"  no-op unary RPC (health Check of Transfer)   p50 {noop_p50:8.0f}"
          f"   p99 {percentile(noop, 0.99):8.0f}")
    for size, samples in execs.items():
        median = statistics.median(samples)
        print(f"  exec, six kinds carried, {size:>7,}-message history   median {median:8.0f}"
              f"   (min {min(samples):.0f}, max {max(samples):.0f}, n={len(samples)})"
              f"   = {median / noop_p50:.2f}x no-op (target <= 8x)")
    small, large = (statistics.median(execs[size]) for size in sizes)
    print(f"  exec({sizes[1]:,}) / exec({sizes[0]:,}) = {large / small:.2f} (target: the same within noise)")
