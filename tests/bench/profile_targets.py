"""The workloads `make profile` samples (tests/bench/profile.py): issue 10's targets, each driven the way its
`make bench` section drives it, with the processes that section starts (the bench modules' own classes).

Each target sets its processes up, warms them up, opens the sampling window (`Window.open`, which returns
when to stop), runs its workload until then, closes the window (`Window.close` prints the tables) and
stops its processes.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.bench import transfer
from tests.bench.common import LONG_HISTORIES, PG_DEFAULT, append_request, bind_history
from tests.bench.profile import Window, until_then
from tests.bench.session import _Session
from tests.bench.telemetry import TelemetryBench
from tests.bench.writes import CALLERS, WritesBench, call_until
from tests.harness import (
    WALLET,
    ServiceProcess,
    drop_database,
    new_database_url,
    open_aio_channel,
    open_channel,
    stubs,
)


def _pg_url() -> str:
    return os.environ.get("GGMODULES_TEST_POSTGRES_URL", PG_DEFAULT)


@contextmanager
def _database(backend: str) -> Iterator[str]:
    """A fresh ModuleStore database (a SQLite file, or a PostgreSQL database), dropped afterwards."""
    with tempfile.TemporaryDirectory() as tmp:
        url = new_database_url(backend, "modulestore", Path(tmp), _pg_url())
        try:
            yield url
        finally:
            drop_database(url)


def noop(window: Window) -> None:
    """The reference: what the same ModuleStore does for the no-op (health Check), one caller."""
    with _database("sqlite") as url:
        bench = WritesBench(url, quick=True)
        try:
            check = health_pb2.HealthCheckRequest()
            until_then(time.perf_counter() + 1, lambda: bench.health.Check(check))
            until = window.open({"modulestore": bench.pid})
            window.close(until_then(until, lambda: bench.health.Check(check)), "no-ops")
        finally:
            bench.close()


# Appends of about 270 bytes to one history store before the next: well under its 2 MB cap (a quiet machine
# makes ~1,000 a second, and one store would be refused within the window).
STORE_APPENDS = 2000


def p1(backend: str) -> Callable[[Window], None]:
    def run(window: Window) -> None:
        with _database(backend) as url:
            bench = WritesBench(url, quick=True)
            try:
                agent, store, appended = "appender-0", bind_history(bench.stub, bench.run, "appender-0"), 0

                def append() -> None:
                    nonlocal agent, store, appended
                    if appended and appended % STORE_APPENDS == 0:  # a fresh store before the cap refuses one
                        agent = f"appender-{appended}"
                        store = bind_history(bench.stub, bench.run, agent)
                    bench.stub.Write(append_request(bench.run, agent, store))
                    appended += 1

                until_then(time.perf_counter() + 1, append)  # warm up
                until = window.open({"modulestore": bench.pid})
                window.close(until_then(until, append), "appends")
            finally:
                bench.close()

    return run


def p2(window: Window) -> None:
    with _database("sqlite") as url:
        bench = WritesBench(url, quick=True)
        try:
            stores = [bind_history(bench.stub, bench.run, f"writer-{i}") for i in range(CALLERS)]

            async def main() -> int:
                async with open_aio_channel(bench.proc.address) as ch:
                    stub, health = stubs(ch, "modulestore"), health_pb2_grpc.HealthStub(ch)
                    await call_until(stub, health, bench.run, stores, time.perf_counter() + 1, True)
                    until = window.open({"modulestore": bench.pid})
                    return await call_until(stub, health, bench.run, stores, until, True)

            window.close(asyncio.run(main()), "appends")
        finally:
            bench.close()


def p4(transition: bool) -> Callable[[Window], None]:
    def run(window: Window) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            bench = transfer.Bench(Path(tmp))
            try:
                run_id, agent = bench.agent(10, fsm=transition)
                moves = 0

                def move() -> None:
                    nonlocal agent, moves
                    agent = bench.move(run_id, agent, moves, transition).successor_agent_id
                    moves += 1

                for _ in range(4):  # warm up
                    move()
                until = window.open({p.service: p.proc.pid for p in bench.procs})
                window.close(until_then(until, move), "transitions" if transition else "execs")
            finally:
                bench.close()

    return run


def p5(fan_out: bool, log: str = "postgres") -> Callable[[Window], None]:
    """`log`: "postgres" (the SQL log, services on PostgreSQL), "sqlite" (the SQL log on SQLite) or
    "jetstream" (the log on NATS JetStream, services on SQLite: issue 9's pair with "sqlite")."""

    def run(window: Window) -> None:
        with tempfile.TemporaryDirectory() as tmp, _event_log(log) as event_log:
            if log == "postgres":
                bench = TelemetryBench(Path(tmp), True, backend="postgres", postgres_url=_pg_url())
            else:
                bench = TelemetryBench(Path(tmp), True, event_log=event_log)
            try:
                pids = {p.service: p.proc.pid for p in bench.procs}
                if fan_out:
                    samples = bench.fan_out(100, window=lambda: window.open(pids))
                else:
                    samples = bench.write_to_subscriber(window=lambda: window.open(pids))
                window.close(len(samples), "writes")
            finally:
                bench.close()

    return run


@contextmanager
def _event_log(log: str) -> Iterator[str]:
    """A stream of its own on the NATS the tests use, dropped afterwards, for "jetstream"; else "" (the SQL
    log)."""
    if log != "jetstream":
        yield ""
        return
    from tests.harness.event_logs import NATS_URL, NO_NATS, drop_stream, fresh_jetstream_url

    if not NATS_URL:
        raise RuntimeError(NO_NATS)
    url = fresh_jetstream_url()
    try:
        yield url
    finally:
        drop_stream(url)


def session(backend: str) -> Callable[[Window], None]:
    def run(window: Window) -> None:
        with _database(backend) as url:
            proc = ServiceProcess("modulestore", "--database-url", url, "--log-level", "warning",
                                  env=LONG_HISTORIES)  # fmt: skip
            channel = open_channel(proc.address)
            try:
                stub = stubs(channel, "modulestore")
                run_id = f"run-{os.urandom(6).hex()}"
                store = bind_history(stub, run_id, "appender-0")
                on = _Session(stub, WALLET.agent(run_id, "appender-0"))

                def append() -> None:
                    on.send(append_request(run_id, "appender-0", store))
                    on.answer()

                until_then(time.perf_counter() + 1, append)  # warm up
                until = window.open({"modulestore": proc.proc.pid})
                window.close(until_then(until, append), "appends")
                on.close()
            finally:
                channel.close()
                proc.terminate()

    return run


# name -> (what it reproduces, the function that runs it), in the order a full run prints them.
TARGETS: dict[str, tuple[str, Callable[[Window], None]]] = {
    "noop": ("reference: the no-op (health Check) on ModuleStore, one caller", noop),
    "p1-sqlite": ("P1 history append, one caller, ModuleStore on SQLite", p1("sqlite")),
    "p1-postgres": ("P1 history append, one caller, ModuleStore on PostgreSQL", p1("postgres")),
    "p2-sqlite": (f"P2 appends from {CALLERS} concurrent callers, ModuleStore on SQLite", p2),
    "p4-exec": ("P4 exec of six kinds (Transfer, Registry, ModuleStore on SQLite)", p4(False)),
    "p4-transition": ("P4 transition of six kinds (Transfer, Registry, ModuleStore on SQLite)", p4(True)),
    "p5-subscriber-postgres": ("P5 write -> subscriber, one stream, on PostgreSQL", p5(False)),
    "p5-fanout-postgres": ("P5 one write to 100 subscribers, on PostgreSQL", p5(True)),
    "p5-subscriber-sqlite": (
        "issue 9: write -> subscriber, one stream, the SQL log on SQLite", p5(False, "sqlite")
    ),
    "p5-subscriber-jetstream": (
        "issue 9: write -> subscriber, one stream, the log on NATS JetStream (ModuleStore publishing to it)",
        p5(False, "jetstream"),
    ),
    "session-sqlite": ("Session append, acknowledged one at a time, on SQLite", session("sqlite")),
    "session-postgres": ("Session append, acknowledged one at a time, on PostgreSQL", session("postgres")),
}
