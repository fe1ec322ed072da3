"""`make bench ARGS="--only transfer"` (issue 10 P4): exec and transition of six kinds against the no-op.

Transfer, Registry and ModuleStore run as three processes on SQLite files, auth on. An agent holding all
six kinds (a history of N messages) execs into the other profile again and again (each successor is the
next one's predecessor); in a run whose FSM has edges a -> b and b -> a carrying every kind, an agent
transitions back and forth the same way. Each figure is printed beside the no-op (the health Check of the
same Transfer) and the target, at most 8x the no-op and flat in history size; "MISSED" when missed.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from grpc_health.v1 import health_pb2, health_pb2_grpc

from ggmodules.common.v1 import common_pb2
from ggmodules.modulestore.v1 import modulestore_pb2, modulestore_service_pb2
from ggmodules.sdk import Client, Edge, Fsm, Memories, Profile
from ggmodules.transfer.v1 import transfer_pb2, transfer_service_pb2, transfer_service_pb2_grpc
from tests.harness import ServiceProcess, credit, drop_database, new_database_url, open_channel, stubs

TARGET = 8.0
# Histories of 100,000 messages (27 MB) are past the 2 MiB a store may hold by default.
LONG_HISTORIES = {"GGMODULES_MODULESTORE_MAX_STORE_BYTES_HISTORY": str(64 * 1024 * 1024)}
KINDS = ["history", "memories", "tasks", "skills", "archive"]  # and the board, carried in a run with one
PROFILES = [
    Profile(name, memories=Memories(strategy="scratchpad"), tasks=True, skills="team", archive=True)
    for name in ("alpha", "beta")
]
FSM = Fsm("a", {"a": "alpha", "b": "beta"}, [Edge("a", "b", carry=KINDS), Edge("b", "a", carry=KINDS)])


def _append(run: str, agent: str, store: str, n: int) -> modulestore_service_pb2.WriteRequest:
    text = "x" * 200
    messages = [modulestore_pb2.MessageInput(role="user", content=f"message {i} {text}") for i in range(n)]
    return modulestore_service_pb2.WriteRequest(
        request_id=uuid.uuid4().hex, run_id=run, agent_id=agent, store_id=store,
        append_messages=modulestore_service_pb2.AppendMessages(messages=messages),
    )


class Bench:
    def __init__(self, directory: Path) -> None:
        services = ("modulestore", "registry", "transfer")
        self.urls = [new_database_url("sqlite", service, directory) for service in services]
        quiet = ("--log-level", os.environ.get("GGMODULES_BENCH_LOG_LEVEL", "warning"))
        self.procs: list[ServiceProcess] = []
        try:
            self.procs.append(
                ServiceProcess("modulestore", "--database-url", self.urls[0], *quiet, env=LONG_HISTORIES)
            )
            ms = self.procs[0].address
            self.procs.append(ServiceProcess("registry", "--database-url", self.urls[1],
                                             "--modulestore-address", ms, *quiet))
            self.procs.append(ServiceProcess("transfer", "--database-url", self.urls[2],
                                             "--modulestore-address", ms,
                                             "--registry-address", self.procs[1].address, *quiet))
        except Exception:
            self.close()
            raise
        self.client = Client(self.procs[1].address, ms, self.procs[2].address)
        self.ms_channel = open_channel(ms)
        self.ms = stubs(self.ms_channel, "modulestore")
        self.channel = open_channel(self.procs[2].address)
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

    def noop(self, n: int) -> list[float]:
        check = health_pb2.HealthCheckRequest()
        return _timed(lambda: self.health.Check(check), n)

    def agent(self, size: int, fsm: bool) -> tuple[str, str]:
        """A run and an agent holding all six kinds, its history `size` messages long."""
        gg = self.client
        run = gg.create_run(f"bench-{size}", PROFILES, board=True, fsm=FSM if fsm else None)
        agent = gg.open_instance(run.id, "alpha")
        store = agent.history.store_id
        credit(run.id, agent.id)  # the bench writes the long history as the agent, beside the SDK
        left = size
        while left:
            batch = min(left, 1000)
            self.ms.Write(_append(run.id, agent.id, store, batch))
            left -= batch
        agent.history.set_system_prompt("You plan.")
        agent.memories.write_pad("notes")
        agent.tasks.create("a task")
        agent.board.create_issue("GG", "an issue")
        agent.skills.put("plan", "how to plan", "step by step")
        agent.archive.archive_thread("earlier", [("user", "hello")])
        return run.id, agent.id

    def move(self, run: str, current: str, i: int, transition: bool) -> transfer_pb2.Transfer:
        """One exec (or transition) of `current`, to the other profile (state) than the i-th before it."""
        rid = uuid.uuid4().hex
        if transition:
            to = "b" if i % 2 == 0 else "a"
            return self.transfer.Transition(transfer_service_pb2.TransitionRequest(
                request_id=rid, run_id=run, agent_id=current, to_state=to)).transfer
        profile = "beta" if i % 2 == 0 else "alpha"
        return self.transfer.Exec(transfer_service_pb2.ExecRequest(
            request_id=rid, run_id=run, agent_id=current, profile=profile)).transfer

    def moves(self, size: int, count: int, transition: bool) -> list[float]:
        """`count` transfers in a row (after two unmeasured ones), each from the previous one's successor."""
        run, current = self.agent(size, fsm=transition)
        samples: list[float] = []
        moved = None
        for i in range(count + 2):
            t0 = time.perf_counter()
            moved = self.move(run, current, i, transition)
            elapsed = (time.perf_counter() - t0) * 1e6
            current = moved.successor_agent_id
            if i >= 2:
                samples.append(elapsed)
        assert moved is not None
        assert [o.outcome for o in moved.outcomes] == [common_pb2.OUTCOME_CARRIED] * 6, moved
        return samples


def _timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def figures(quick: bool) -> None:
    count = 7 if quick else 21
    sizes = [10, 10_000] if quick else [10, 100_000]
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(Path(tmp))
        try:
            bench.noop(200)  # warm up
            noop = bench.noop(300 if quick else 2000)
            moved = {
                (what, size): bench.moves(size, count, transition=what == "transition")
                for what in ("exec", "transition") for size in sizes
            }
            noop_after = bench.noop(300 if quick else 2000)
        finally:
            bench.close()
    base = statistics.median(noop + noop_after)
    print("\nTransfer (Transfer, Registry and ModuleStore as three processes, SQLite) — µs, p50")
    print(f"  no-op unary RPC (health Check of Transfer)      p50 {base:8.0f}")
    for (what, size), samples in moved.items():
        p50 = statistics.median(samples)
        ratio = p50 / base
        verdict = "" if ratio <= TARGET else "   MISSED"
        print(f"  {what:<10} six kinds carried, {size:>7,}-message history  p50 {p50:8.0f}"
              f"  (min {min(samples):.0f}, max {max(samples):.0f}, n={len(samples)})"
              f"  = {ratio:5.2f}x no-op (target <= {TARGET:.0f}x){verdict}")
    for what in ("exec", "transition"):
        small, large = (statistics.median(moved[(what, size)]) for size in sizes)
        flat = large / small
        verdict = "" if flat <= 1.25 else "   MISSED"
        print(f"  {what}({sizes[1]:,}) / {what}({sizes[0]:,}) = {flat:.2f} "
              f"(target: flat in history size, <= 1.25){verdict}")


if __name__ == "__main__":
    import sys

    figures("--quick" in sys.argv)
