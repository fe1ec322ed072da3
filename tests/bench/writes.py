"""`make bench ARGS="--only writes"` (issue 10 P1, P2): a history append beside the no-op, one caller and 32.

ModuleStore runs as its own OS process with auth on, on a SQLite file and on PostgreSQL. The no-op is the
health Check of the same server through the same kind of channel.
- P1: one caller, append p50 against no-op p50 (targets: <= 1.5x on SQLite, <= 2x on PostgreSQL).
- P2: 32 callers on one asyncio channel, each appending to its own window as fast as it is answered, against
  32 callers of the no-op (target: appends/s >= 60% of no-ops/s on SQLite; printed for PostgreSQL too).
Every acknowledged append is durable (SQLite WAL, synchronous NORMAL; PostgreSQL synchronous_commit on): on
PostgreSQL the bench also prints what one durable commit of one row costs this machine's disk, measured
from this process, the floor under any durable write.
Server CPU per call (the service process's user + system time over the calls) is printed too: it is what
the figures come from when the machine is quiet, and it holds still when it is not.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy.engine import make_url

from ggmodules.common.v1 import common_pb2
from ggmodules.modulestore.v1 import modulestore_pb2, modulestore_service_pb2
from tests.harness import (
    ServiceProcess,
    drop_database,
    new_database_url,
    open_aio_channel,
    open_channel,
    stubs,
)

PG_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
P1_TARGET = {"SQLite": 1.5, "PostgreSQL": 2.0}
P2_TARGET = 0.60
CALLERS = 32


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


def bind_history(stub: Any, run: str, agent: str) -> str:
    binding = modulestore_pb2.Binding(
        kind=common_pb2.KIND_HISTORY, action=modulestore_pb2.BIND_ACTION_CREATE,
        origin=common_pb2.ORIGIN_CREATED, may_write=True,
    )
    resp = stub.BindInstance(modulestore_service_pb2.BindInstanceRequest(
        request_id=uuid.uuid4().hex, run_id=run, agent_id=agent, profile="bench", cause="open",
        bindings=[binding],
    ))
    return next(r.store_id for r in resp.roster if r.kind == common_pb2.KIND_HISTORY)


def append_request(run: str, agent: str, store: str) -> modulestore_service_pb2.WriteRequest:
    return modulestore_service_pb2.WriteRequest(
        request_id=uuid.uuid4().hex, run_id=run, agent_id=agent, store_id=store,
        append_messages=modulestore_service_pb2.AppendMessages(
            messages=[modulestore_pb2.MessageInput(role="user", content="message " + "x" * 200)],
        ),
    )


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def verdict(ok: bool) -> str:
    return "" if ok else "   MISSED"


class WritesBench:
    def __init__(self, url: str, quick: bool) -> None:
        self.quick = quick
        self.proc = ServiceProcess("modulestore", "--database-url", url, "--log-level", "warning")
        self.pid = self.proc.proc.pid
        self.channel = open_channel(self.proc.address)
        self.stub = stubs(self.channel, "modulestore")
        self.health = health_pb2_grpc.HealthStub(self.channel)
        self.run = f"run-{uuid.uuid4().hex[:12]}"

    def close(self) -> None:
        self.channel.close()
        self.proc.terminate()

    def one_caller(self) -> dict[str, float]:
        n = 300 if self.quick else 2000
        check = health_pb2.HealthCheckRequest()
        store = bind_history(self.stub, self.run, "appender-0")
        timed(lambda: self.health.Check(check), 200)  # warm up
        timed(lambda: self.stub.Write(append_request(self.run, "appender-0", store)), 200)
        def write() -> None:
            self.stub.Write(append_request(self.run, "appender-0", store))

        out: dict[str, float] = {}
        noops: list[float] = []
        appends: list[float] = []
        cpu_noop = cpu_append = 0.0
        # Interleaved rounds: a burst of load on the machine falls on both sides alike.
        rounds = 4
        for _ in range(rounds):
            c0 = cpu_seconds(self.pid)
            noops += timed(lambda: self.health.Check(check), n // rounds)
            c1 = cpu_seconds(self.pid)
            appends += timed(write, n // rounds)
            c2 = cpu_seconds(self.pid)
            cpu_noop += c1 - c0
            cpu_append += c2 - c1
        out["noop_p50"] = percentile(noops, 0.5)
        out["append_p50"] = percentile(appends, 0.5)
        out["noop_cpu"] = cpu_noop / len(noops) * 1e6
        out["append_cpu"] = cpu_append / len(appends) * 1e6
        return out

    def many_callers(self) -> dict[str, float]:
        seconds = 2.0 if self.quick else 4.0
        stores = [bind_history(self.stub, self.run, f"writer-{i}") for i in range(CALLERS)]
        check = health_pb2.HealthCheckRequest()

        async def rate(write: bool) -> tuple[float, float]:
            async with open_aio_channel(self.proc.address) as ch:
                stub = stubs(ch, "modulestore")
                health = health_pb2_grpc.HealthStub(ch)
                await health.Check(check)
                await call_until(stub, health, self.run, stores, time.perf_counter() + 0.3, write)  # warm up
                c0, t0 = cpu_seconds(self.pid), time.perf_counter()
                done = await call_until(stub, health, self.run, stores, t0 + seconds, write)
                elapsed = time.perf_counter() - t0
                return done / elapsed, (cpu_seconds(self.pid) - c0) / max(done, 1) * 1e6

        noop_rate, noop_cpu = asyncio.run(rate(False))
        append_rate, append_cpu = asyncio.run(rate(True))
        return {
            "noop_rate": noop_rate, "append_rate": append_rate, "noop_cpu": noop_cpu, "append_cpu": append_cpu
        }


async def call_until(stub: Any, health: Any, run: str, stores: list[str], until: float, write: bool) -> int:
    """One caller per store, each appending to its own window (writer-i) as fast as it is answered, or
    calling the no-op, until the perf_counter() instant `until`; returns how many calls were answered."""
    check = health_pb2.HealthCheckRequest()
    done = 0

    async def caller(i: int) -> None:
        nonlocal done
        while time.perf_counter() < until:
            if write:
                await stub.Write(append_request(run, f"writer-{i}", stores[i]))
            else:
                await health.Check(check)
            done += 1

    await asyncio.gather(*(caller(i) for i in range(len(stores))))
    return done


def commit_floor(url: str, n: int) -> float:
    """p50 µs of one durable single-row INSERT + COMMIT on PostgreSQL, from this process (psycopg)."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_commit_floor (n int)")
        conn.commit()

        def one() -> None:
            conn.execute("INSERT INTO bench_commit_floor VALUES (1)")
            conn.commit()

        timed(one, 20)
        return percentile(timed(one, n), 0.5)


def figures(quick: bool) -> None:
    pg_url = os.environ.get("GGMODULES_TEST_POSTGRES_URL", PG_DEFAULT)
    with tempfile.TemporaryDirectory() as tmp:
        backends = [("SQLite", new_database_url("sqlite", "modulestore", Path(tmp)))]
        try:
            backends.append(("PostgreSQL", new_database_url("postgres", "modulestore", Path(tmp), pg_url)))
        except Exception as err:  # a machine without PostgreSQL still gets the SQLite figures
            print(f"(PostgreSQL figures left out: {err})")
        print("\nWrites (ModuleStore in its own process, auth on) — µs unless noted")
        for label, url in backends:
            bench = WritesBench(url, quick)
            try:
                one = bench.one_caller()
                many = bench.many_callers()
                floor = commit_floor(url, 100 if quick else 400) if label == "PostgreSQL" else None
            finally:
                bench.close()
                drop_database(url)
            ratio = one["append_p50"] / one["noop_p50"]
            share = many["append_rate"] / many["noop_rate"]
            print(f"\n[{label}]")
            print(f"  no-op unary RPC (health Check)    p50 {one['noop_p50']:7.0f}   server CPU/call "
                  f"{one['noop_cpu']:5.0f}")
            print(f"  P1 history append (1 message)     p50 {one['append_p50']:7.0f}   server CPU/call "
                  f"{one['append_cpu']:5.0f}   p50 = {ratio:.2f}x no-op (target <= {P1_TARGET[label]}x)"
                  f"{verdict(ratio <= P1_TARGET[label])}")
            if floor is not None:
                print(f"  one durable commit of one row (psycopg, this disk)  p50 {floor:7.0f}"
                      f"   = {floor / one['noop_p50']:.2f}x no-op")
            print(f"  no-op, {CALLERS} callers                {many['noop_rate']:7.0f} calls/s   server "
                  f"CPU/call {many['noop_cpu']:5.0f}")
            target = f"(target >= {P2_TARGET:.0%})" if label == "SQLite" else "(target on SQLite only)"
            print(f"  P2 appends, {CALLERS} callers           {many['append_rate']:7.0f} writes/s   server "
                  f"CPU/call {many['append_cpu']:5.0f}   = {share:.0%} of no-op {target}"
                  f"{verdict(share >= P2_TARGET) if label == 'SQLite' else ''}")
