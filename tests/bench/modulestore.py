"""`--only modulestore`: no-op and append latency, sustained appends and fork cost of ModuleStore in its own
process, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.bench.common import (
    LONG_HISTORIES,
    PG_DEFAULT,
    append_request,
    bind_history,
    percentile,
    timed,
)
from tests.harness import (
    ServiceProcess,
    drop_database,
    new_database_url,
    open_aio_channel,
    open_channel,
    stubs,
)

# issue 10 P1: history append p50 against the no-op's.
P1_TARGET = {"SQLite": 1.5, "PostgreSQL": 2.0}


class ModuleStoreBench:
    def __init__(self, label: str, database_url: str, quick: bool) -> None:
        self.label = label
        self.quick = quick
        self.proc = ServiceProcess(
            "modulestore", "--database-url", database_url, "--log-level", "warning", env=LONG_HISTORIES
        )
        self.channel = open_channel(self.proc.address)
        self.stub = stubs(self.channel, "modulestore")
        self.health = health_pb2_grpc.HealthStub(self.channel)
        self.run = f"run-{uuid.uuid4().hex[:12]}"

    def close(self) -> None:
        self.channel.close()
        self.proc.terminate()

    def noop_and_append(self) -> dict[str, float]:
        """The no-op and the append measured in alternating rounds (as `--only writes` does): a burst of load
        on the machine, or a drift over the run, falls on both sides of the ratio alike."""
        n = 300 if self.quick else 3000
        rounds = 6
        check = health_pb2.HealthCheckRequest()
        timed(lambda: self.health.Check(check), 200)  # warm up
        store = bind_history(self.stub, self.run, "appender-0")
        timed(lambda: self.stub.Write(append_request(self.run, "appender-0", store)), 200)
        noop: list[float] = []
        append: list[float] = []
        def write() -> None:
            self.stub.Write(append_request(self.run, "appender-0", store))

        for _ in range(rounds):
            noop += timed(lambda: self.health.Check(check), n // rounds)
            append += timed(write, n // rounds)
        return {
            "noop_p50": percentile(noop, 0.5),
            "noop_p99": percentile(noop, 0.99),
            "append_p50": percentile(append, 0.5),
            "append_p99": percentile(append, 0.99),
        }

    def sustained_writes(self, callers: int = 32) -> tuple[float, float]:
        """Appends/s of `callers` concurrent callers, each to its own window, and no-ops/s (health Check) of
        as many callers measured the same way on the same server (issue 10 P2 compares the two)."""
        seconds = 2.0 if self.quick else 5.0
        stores = [bind_history(self.stub, self.run, f"writer-{i}") for i in range(callers)]
        check = health_pb2.HealthCheckRequest()

        async def main(write: bool) -> int:
            async with open_aio_channel(self.proc.address) as ch:
                stub = stubs(ch, "modulestore")
                health = health_pb2_grpc.HealthStub(ch)
                deadline = time.perf_counter() + seconds
                done = 0

                async def caller(i: int) -> None:
                    nonlocal done
                    while time.perf_counter() < deadline:
                        if write:
                            await stub.Write(append_request(self.run, f"writer-{i}", stores[i]))
                        else:
                            await health.Check(check)
                        done += 1

                await asyncio.gather(*(caller(i) for i in range(callers)))
                return done

        rates = []
        for write in (False, True):
            t0 = time.perf_counter()
            done = asyncio.run(main(write))
            rates.append(done / (time.perf_counter() - t0))
        return rates[1], rates[0]

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


def figures(quick: bool) -> None:
    pg_url = os.environ.get("GGMODULES_TEST_POSTGRES_URL", PG_DEFAULT)
    with tempfile.TemporaryDirectory() as tmp:
        backends = [("SQLite", new_database_url("sqlite", "modulestore", Path(tmp)))]
        try:
            backends.append(("PostgreSQL", new_database_url("postgres", "modulestore", Path(tmp), pg_url)))
        except Exception as err:  # a machine without PostgreSQL still gets the SQLite figures
            print(f"(PostgreSQL figures left out: {err})")
        print("ModuleStore (own process) — µs unless noted")
        for label, url in backends:
            bench = ModuleStoreBench(label, url, quick)
            try:
                lat = bench.noop_and_append()
                rate, noop_rate = bench.sustained_writes()
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
                f"   p50 = {ratio:.2f}x no-op (target <= {P1_TARGET[label]}x)"
                f"{'' if ratio <= P1_TARGET[label] else '   MISSED'}"
            )
            share = rate / noop_rate
            missed = "" if share >= 0.60 or label != "SQLite" else "   MISSED"
            target = "(target >= 60%)" if label == "SQLite" else "(target on SQLite only)"
            print(f"  no-op, 32 callers               {noop_rate:8.0f} calls/s")
            print(f"  sustained appends, 32 callers   {rate:8.0f} writes/s   = {share:.0%} of no-op "
                  f"{target}{missed}")
            for size, us in forks.items():
                print(f"  fork of a {size:>7,}-message history   {us:8.0f}")
            if 100_000 in forks:
                print(f"  fork(100,000) / fork(10) = {forks[100_000] / forks[10]:.2f} (target <= 2)")
