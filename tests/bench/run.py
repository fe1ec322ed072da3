"""`make bench`: latency and throughput figures, each beside a no-op unary RPC of the same run.

Every service runs as its own OS process on this machine, as in production. The no-op is the standard
health Check of the same grpc.aio server, called through the same kind of channel, so the difference is
what the service itself adds. Figures only: nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ggmodules.common.v1 import common_pb2
from ggmodules.modulestore.v1 import modulestore_pb2, modulestore_service_pb2, modulestore_service_pb2_grpc
from tests.harness import ServiceProcess, drop_database, new_database_url

PG_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def bind_history(
    stub: modulestore_service_pb2_grpc.ModuleStoreServiceStub, run: str, agent: str, source: str = ""
) -> str:
    binding = modulestore_pb2.Binding(
        kind=common_pb2.KIND_HISTORY,
        action=modulestore_pb2.BIND_ACTION_FORK if source else modulestore_pb2.BIND_ACTION_CREATE,
        source_store_id=source,
        origin=common_pb2.ORIGIN_FORKED if source else common_pb2.ORIGIN_CREATED,
        may_write=True,
    )
    resp = stub.BindInstance(
        modulestore_service_pb2.BindInstanceRequest(
            request_id=uuid.uuid4().hex,
            run_id=run,
            agent_id=agent,
            profile="bench",
            cause="fork" if source else "open",
            bindings=[binding],
        )
    )
    return next(r.store_id for r in resp.roster if r.kind == common_pb2.KIND_HISTORY)


def append_request(run: str, agent: str, store: str, n: int = 1) -> modulestore_service_pb2.WriteRequest:
    return modulestore_service_pb2.WriteRequest(
        request_id=uuid.uuid4().hex,
        run_id=run,
        agent_id=agent,
        store_id=store,
        append_messages=modulestore_service_pb2.AppendMessages(
            messages=[
                modulestore_pb2.MessageInput(role="user", content=f"message {i} " + "x" * 200)
                for i in range(n)
            ],
        ),
    )


class ModuleStoreBench:
    def __init__(self, label: str, database_url: str, quick: bool) -> None:
        self.label = label
        self.quick = quick
        self.proc = ServiceProcess("modulestore", "--database-url", database_url, "--log-level", "warning")
        self.channel = grpc.insecure_channel(self.proc.address)
        self.stub = modulestore_service_pb2_grpc.ModuleStoreServiceStub(self.channel)
        self.health = health_pb2_grpc.HealthStub(self.channel)
        self.run = f"run-{uuid.uuid4().hex[:12]}"

    def close(self) -> None:
        self.channel.close()
        self.proc.terminate()

    def noop_and_append(self) -> dict[str, float]:
        n = 300 if self.quick else 3000
        check = health_pb2.HealthCheckRequest()
        timed(lambda: self.health.Check(check), 200)  # warm up
        noop = timed(lambda: self.health.Check(check), n)
        store = bind_history(self.stub, self.run, "appender-0")
        timed(lambda: self.stub.Write(append_request(self.run, "appender-0", store)), 200)
        append = timed(lambda: self.stub.Write(append_request(self.run, "appender-0", store)), n)
        return {
            "noop_p50": percentile(noop, 0.5),
            "noop_p99": percentile(noop, 0.99),
            "append_p50": percentile(append, 0.5),
            "append_p99": percentile(append, 0.99),
        }

    def sustained_writes(self, callers: int = 32) -> float:
        seconds = 2.0 if self.quick else 5.0
        stores = [bind_history(self.stub, self.run, f"writer-{i}") for i in range(callers)]

        async def main() -> int:
            async with grpc.aio.insecure_channel(self.proc.address) as ch:
                stub = modulestore_service_pb2_grpc.ModuleStoreServiceStub(ch)
                deadline = time.perf_counter() + seconds
                done = 0

                async def caller(i: int) -> None:
                    nonlocal done
                    while time.perf_counter() < deadline:
                        await stub.Write(append_request(self.run, f"writer-{i}", stores[i]))
                        done += 1

                await asyncio.gather(*(caller(i) for i in range(callers)))
                return done

        t0 = time.perf_counter()
        done = asyncio.run(main())
        return done / (time.perf_counter() - t0)

    def fork_times(self) -> dict[int, float]:
        sizes = [10, 10_000] if self.quick else [10, 10_000, 100_000]
        out = {}
        for size in sizes:
            agent = f"forkee-{size}"
            store = bind_history(self.stub, self.run, agent)
            left = size
            while left:
                batch = min(left, 1000)
                self.stub.Write(append_request(self.run, agent, store, batch))
                left -= batch
            samples = []
            for i in range(7):
                t0 = time.perf_counter()
                bind_history(self.stub, self.run, f"copy-{size}-{i}", source=store)
                samples.append((time.perf_counter() - t0) * 1e6)
            out[size] = statistics.median(samples)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer samples, for a smoke run")
    args = parser.parse_args()
    pg_url = os.environ.get("GGMODULES_TEST_POSTGRES_URL", PG_DEFAULT)
    with tempfile.TemporaryDirectory() as tmp:
        backends = [("SQLite", new_database_url("sqlite", "modulestore", Path(tmp)))]
        try:
            backends.append(("PostgreSQL", new_database_url("postgres", "modulestore", Path(tmp), pg_url)))
        except Exception as err:  # a machine without PostgreSQL still gets the SQLite figures
            print(f"(PostgreSQL figures left out: {err})")
        print("ModuleStore (own process) — µs unless noted")
        for label, url in backends:
            bench = ModuleStoreBench(label, url, args.quick)
            try:
                lat = bench.noop_and_append()
                rate = bench.sustained_writes()
                forks = bench.fork_times()
            finally:
                bench.close()
                drop_database(url)
            ratio = lat["append_p50"] / lat["noop_p50"]
            print(f"\n[{label}]")
            print(
                f"  no-op unary RPC (health Check)  p50 {lat['noop_p50']:8.0f}   p99 {lat['noop_p99']:8.0f}"
            )
            print(
                f"  history append (1 message)      p50 {lat['append_p50']:8.0f}   "
                f"p99 {lat['append_p99']:8.0f}"
                f"   p50 = {ratio:.2f}x no-op (target <= 1.5x)"
            )
            print(f"  sustained appends, 32 callers   {rate:8.0f} writes/s")
            for size, us in forks.items():
                print(f"  fork of a {size:>7,}-message history   {us:8.0f}")
            if 100_000 in forks:
                print(f"  fork(100,000) / fork(10) = {forks[100_000] / forks[10]:.2f} (target <= 2)")


if __name__ == "__main__":
    main()
