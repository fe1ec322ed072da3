"""`--only telemetry`, `telemetry-postgres`, `telemetry-jetstream`: write-to-subscriber latency, backlog rate
and fan-out of Telemetry, ModuleStore and Registry as processes, beside a raw server stream."""

from __future__ import annotations

import asyncio
import itertools
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ggmodules.telemetry.v1 import telemetry_service_pb2, telemetry_service_pb2_grpc
from tests.bench.common import (
    LONG_HISTORIES,
    PG_DEFAULT,
    bind_history,
    percentile,
    said,
    say,
    timed,
)
from tests.bench.raw_stream import stream_stub
from tests.harness import (
    ROOT,
    ServiceProcess,
    drop_database,
    new_database_url,
    open_aio_channel,
    open_channel,
    stubs,
)


class RawStreamProcess:
    """tests/bench/raw_stream.py as its own OS process; its address comes from its ready line."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.bench.raw_stream"], stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("ready raw-stream "):
            self.proc.kill()
            self.proc.wait(10)
            raise RuntimeError(f"the raw stream server did not start: {line!r}")
        self.address = line.split()[2]

    def terminate(self) -> None:
        self.proc.terminate()
        self.proc.wait(15)


class TelemetryBench:
    """ModuleStore, Registry and Telemetry as three processes on one backend (Telemetry following the other
    two), and the raw stream server as a fourth. Every subscriber reads one agent's stream."""

    def __init__(
        self,
        directory: Path,
        quick: bool,
        backend: str = "sqlite",
        postgres_url: str = "",
        event_log: str = "",
        origin_publishes: bool = True,
    ) -> None:
        """`origin_publishes`: with `event_log` (JetStream), ModuleStore is given it too and publishes its
        own events there (runtime/origin_relay.py), as README's "Running several replicas" has it; False
        leaves the relaying to Telemetry."""
        self.quick = quick
        services = ("modulestore", "registry", "telemetry")
        quiet = ("--log-level", os.environ.get("GGMODULES_BENCH_LOG_LEVEL", "warning"))
        self.urls: list[str] = []
        self.procs: list[ServiceProcess] = []
        self.raw: RawStreamProcess | None = None
        try:
            for service in services:
                self.urls.append(new_database_url(backend, service, directory, postgres_url))
            publishes = ("--event-log", event_log) if event_log and origin_publishes else ()
            self.procs.append(ServiceProcess("modulestore", "--database-url", self.urls[0], *quiet,
                                             *publishes, env=LONG_HISTORIES))
            ms_address = self.procs[0].address
            self.procs.append(ServiceProcess("registry", "--database-url", self.urls[1],
                                             "--modulestore-address", ms_address, *quiet))
            self.procs.append(ServiceProcess("telemetry", "--database-url", self.urls[2],
                                             "--modulestore-address", ms_address,
                                             "--registry-address", self.procs[1].address, *quiet,
                                             *(("--event-log", event_log) if event_log else ())))
            self.raw = RawStreamProcess()
        except Exception:
            self.close()
            raise
        self.ms_address, self.tel_address = ms_address, self.procs[2].address
        self.ms_channel = open_channel(ms_address)
        self.ms = stubs(self.ms_channel, "modulestore")
        self.channel = open_channel(self.tel_address)
        self.tel = telemetry_service_pb2_grpc.TelemetryServiceStub(self.channel)
        self.health = health_pb2_grpc.HealthStub(self.channel)
        self.raw_channel = open_channel(self.raw.address)
        self.run = f"run-{uuid.uuid4().hex[:12]}"

    def close(self) -> None:
        if hasattr(self, "channel"):
            self.ms_channel.close()
            self.channel.close()
            self.raw_channel.close()
        if self.raw is not None:
            self.raw.terminate()
        for proc in reversed(self.procs):
            proc.terminate()
        for url in self.urls:
            drop_database(url)

    def subscribe(self, agent: str) -> grpc.CallIterator[telemetry_service_pb2.SubscribeResponse]:
        """The agent's stream from cursor 0."""
        request = telemetry_service_pb2.SubscribeRequest(run_id=self.run, agent_id=agent)
        call: grpc.CallIterator[telemetry_service_pb2.SubscribeResponse] = self.tel.Subscribe(request)
        return call

    def noop_and_write_to_subscriber(
        self, rounds: int = 10, pause: float = 0.0
    ) -> tuple[list[float], list[float]]:
        """The no-op (health Check of Telemetry) and write-to-subscriber samples, taken in alternating rounds
        of the same size (as --only writes does for append against no-op), so load or drift on the machine
        falls on both figures alike rather than on whichever was measured second.

        Write-to-subscriber: µs from just before a one-message append to its event's arrival on the
        writer's stream (one stream, open throughout). `pause`: seconds every process is left idle before
        each no-op and each write (not timed), as between a runtime's sporadic writes."""
        noops, writes = (300, 100) if self.quick else (2000, 1000)
        if pause:
            noops, writes = (100, 100) if self.quick else (300, 300)
        rounds = min(rounds, noops, writes)
        check = health_pb2.HealthCheckRequest()
        agent = "latency-paced" if pause else "latency-0"
        store = bind_history(self.ms, self.run, agent)
        stream = self.subscribe(agent)

        def noop() -> None:
            if pause:  # back to back: nothing between the calls, as before
                time.sleep(pause)
            t0 = time.perf_counter()
            self.health.Check(check)
            noop_samples.append((time.perf_counter() - t0) * 1e6)

        def write(text: str) -> float:
            request = say(self.run, agent, store, text)
            if pause:
                time.sleep(pause)
            t0 = time.perf_counter()
            self.ms.Write(request)
            while said(next(stream)) != text:
                pass
            return (time.perf_counter() - t0) * 1e6

        noop_samples: list[float] = []
        latency: list[float] = []
        try:
            timed(lambda: self.health.Check(check), 200)  # warm up
            for i in range(20):
                write(f"warm-up {i}")
            for r in range(rounds):
                for _ in range(noops // rounds):
                    noop()
                latency += [write(f"latency {r}.{i}") for i in range(writes // rounds)]
        finally:
            stream.cancel()
        return noop_samples, latency

    def write_to_subscriber(self, window: Callable[[], float] | None = None) -> list[float]:
        """µs from just before a one-message append to its event's arrival on the writer's stream.
        `window` (tests/bench/profile.py): called once the stream is live and warm; instead of a fixed count,
        writes go on until the perf_counter() instant it returns."""
        n = 100 if self.quick else 1000
        agent = "latency-0"
        store = bind_history(self.ms, self.run, agent)
        stream = self.subscribe(agent)
        samples = []
        until = math.inf
        try:
            for i in itertools.count(-20):  # the first 20 warm up
                if i == 0 and window is not None:
                    until = window()
                if (window is None and i >= n) or time.perf_counter() >= until:
                    break
                text = f"latency {i}"
                request = say(self.run, agent, store, text)
                t0 = time.perf_counter()
                self.ms.Write(request)
                while said(next(stream)) != text:
                    pass
                if i >= 0:
                    samples.append((time.perf_counter() - t0) * 1e6)
        finally:
            stream.cancel()
        return samples

    def raw_rate(self, count: int) -> float:
        """Messages/s of the raw stream: from the call to its last message."""
        call = stream_stub(self.raw_channel)
        sum(1 for _ in call(b"1000"))  # warm up
        t0 = time.perf_counter()
        got = sum(1 for _ in call(str(count).encode()))
        elapsed = time.perf_counter() - t0
        assert got == count, got
        return count / elapsed

    def backlog_rate(self, count: int) -> tuple[float, float]:
        """A backlog of `count` one-message appends on one agent (32 concurrent writers), fully ingested
        first; then a fresh subscriber reads the agent's stream from cursor 0. Returns (events/s delivered
        to it, the writers' appends/s)."""
        agent = "backlog-0"
        store = bind_history(self.ms, self.run, agent)
        callers = 32

        async def produce() -> None:
            async with open_aio_channel(self.ms_address) as ch:
                stub = stubs(ch, "modulestore")

                async def caller(i: int) -> None:
                    for j in range(i, count - 1, callers):
                        await stub.Write(say(self.run, agent, store, f"backlog {j}"))

                await asyncio.gather(*(caller(i) for i in range(callers)))
                await stub.Write(say(self.run, agent, store, "backlog end"))

        t0 = time.perf_counter()
        asyncio.run(produce())
        produced = count / (time.perf_counter() - t0)
        # Ingested once the last append is on the stream (one origin is ingested in order).
        first = self.subscribe(agent)
        try:
            while said(next(first)) != "backlog end":
                pass
        finally:
            first.cancel()

        stream = self.subscribe(agent)
        got = 0
        t0 = time.perf_counter()
        try:
            for item in stream:
                if item.WhichOneof("item") == "event" and item.event.event.WhichOneof("body") == "write":
                    got += 1
                    if got == count:
                        break
        finally:
            elapsed = time.perf_counter() - t0
            stream.cancel()
        return count / elapsed, produced

    def fan_out(self, subscribers: int = 100, window: Callable[[], float] | None = None) -> list[float]:
        """µs from just before one append until the last of `subscribers` concurrent streams has its event,
        per write (after one unmeasured write that proves every stream is live). `window`
        (tests/bench/profile.py): called once every stream is live; instead of a fixed count, writes go on
        until the perf_counter() instant it returns."""
        writes = 5 if self.quick else 20
        agent = "fanout-0"
        store = bind_history(self.ms, self.run, agent)

        async def main() -> list[float]:
            channels = [open_aio_channel(self.tel_address) for _ in range(10)]
            ms_channel = open_aio_channel(self.ms_address)
            ms_stub = stubs(ms_channel, "modulestore")
            arrivals: dict[str, list[float]] = {}
            everyone: dict[str, asyncio.Event] = {}

            async def subscriber(i: int) -> None:
                tel = telemetry_service_pb2_grpc.TelemetryServiceStub(channels[i % len(channels)])
                request = telemetry_service_pb2.SubscribeRequest(run_id=self.run, agent_id=agent)
                async for item in tel.Subscribe(request):
                    text = said(item)
                    if text in arrivals:
                        arrivals[text].append(time.perf_counter())
                        if len(arrivals[text]) == subscribers:
                            everyone[text].set()

            tasks = [asyncio.create_task(subscriber(i)) for i in range(subscribers)]
            samples = []
            until = math.inf
            try:
                for i in itertools.count(-1):
                    if i == 0 and window is not None:
                        until = window()
                    if (window is None and i >= writes) or time.perf_counter() >= until:
                        break
                    text = "fan-out ready" if i < 0 else f"fan-out {i}"
                    arrivals[text], everyone[text] = [], asyncio.Event()
                    t0 = time.perf_counter()
                    await ms_stub.Write(say(self.run, agent, store, text))
                    await asyncio.wait_for(everyone[text].wait(), 60)
                    if i >= 0:
                        samples.append((max(arrivals[text]) - t0) * 1e6)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                for ch in [*channels, ms_channel]:
                    await ch.close()
            return samples

        return asyncio.run(main())


def paced_line(noop: list[float], latency: list[float], pause: float) -> None:
    """Both measured after every process was idle `pause` seconds: what a sporadic call costs on this machine,
    beside the back-to-back figures (no target: the target is the back-to-back ratio's)."""
    noop_p50, p50 = percentile(noop, 0.5), percentile(latency, 0.5)
    print(f"  after {pause * 1000:.0f} ms idle each: no-op p50 {noop_p50:8.0f}"
          f"   write-to-subscriber p50 {p50:8.0f}   = {p50 / noop_p50:.2f}x  (n={len(noop)}, {len(latency)})")


def latency_lines(noop: list[float], latency: list[float]) -> None:
    """The no-op and write-to-subscriber lines, the ratio against its target (MISSED when above it)."""
    noop_p50, p50 = percentile(noop, 0.5), percentile(latency, 0.5)
    ratio = p50 / noop_p50
    print(f"  no-op unary RPC (health Check of Telemetry)   p50 {noop_p50:8.0f}"
          f"   p99 {percentile(noop, 0.99):8.0f}")
    print(f"  write-to-subscriber (1-message append)         p50 {p50:8.0f}"
          f"   p99 {percentile(latency, 0.99):8.0f}   (n={len(latency)})"
          f"   p50 = {ratio:.2f}x no-op (target <= 3x){'' if ratio <= 3 else '   MISSED'}")


def figures(quick: bool) -> None:
    count = 2_000 if quick else 20_000
    with tempfile.TemporaryDirectory() as tmp:
        bench = TelemetryBench(Path(tmp), quick)
        try:
            noop, latency = bench.noop_and_write_to_subscriber()
            raw = bench.raw_rate(count)
            delivered, produced = bench.backlog_rate(count)
            fan_out = bench.fan_out()
        finally:
            bench.close()
    noop_p50 = percentile(noop, 0.5)
    print("\nTelemetry (ModuleStore, Registry and Telemetry as three processes, SQLite;"
          " the raw stream its own process) — µs unless noted")
    latency_lines(noop, latency)
    print(f"  raw server stream, {count:,} empty messages     {raw:8.0f} messages/s")
    print(f"  one subscriber, backlog of {count:,} events from cursor 0   {delivered:8.0f} events/s"
          f"   = {delivered / raw:.2f}x the raw stream (target >= 0.5x)")
    print(f"    (the backlog was written by 32 concurrent writers at {produced:.0f} appends/s and fully"
          " ingested before the subscriber started)")
    print(f"  one write to reach 100 subscribers             median {statistics.median(fan_out):8.0f}"
          f"   (min {min(fan_out):.0f}, max {max(fan_out):.0f}, n={len(fan_out)})"
          f"   = {statistics.median(fan_out) / noop_p50:.2f}x no-op")


def postgres_figures(quick: bool) -> None:
    """Write-to-subscriber on PostgreSQL: the outbox feed waits for the database's visibility frontier."""
    pg_url = os.environ.get("GGMODULES_TEST_POSTGRES_URL", PG_DEFAULT)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            bench = TelemetryBench(Path(tmp), quick, "postgres", pg_url)
        except Exception as err:  # a machine without PostgreSQL still gets the SQLite figures
            print(f"\n(Telemetry PostgreSQL figures left out: {err})")
            return
        try:
            noop, latency = bench.noop_and_write_to_subscriber()
        finally:
            bench.close()
    print("\nTelemetry on PostgreSQL (the same three processes, each on its own PostgreSQL database) — µs")
    latency_lines(noop, latency)


def jetstream_figures(quick: bool) -> None:
    """Write-to-subscriber and fan-out with Telemetry's event log on NATS JetStream (a stream of its own)."""
    from tests.harness.event_logs import NATS_URL, NO_NATS, drop_stream, fresh_jetstream_url

    if not NATS_URL:
        print(f"\n(Telemetry JetStream figures left out: {NO_NATS})")
        return
    url = fresh_jetstream_url()
    with tempfile.TemporaryDirectory() as tmp:
        bench = TelemetryBench(Path(tmp), quick, event_log=url)
        try:
            noop, latency = bench.noop_and_write_to_subscriber()
            fan_out = bench.fan_out()
        finally:
            bench.close()
            drop_stream(url)
    noop_p50 = percentile(noop, 0.5)
    print("\nTelemetry on NATS JetStream (the same three processes on SQLite; the event log a JetStream"
          " stream, ModuleStore publishing its own events to it) — µs")
    latency_lines(noop, latency)
    print(f"  one write to reach 100 subscribers             median {statistics.median(fan_out):8.0f}"
          f"   (min {min(fan_out):.0f}, max {max(fan_out):.0f}, n={len(fan_out)})"
          f"   = {statistics.median(fan_out) / noop_p50:.2f}x no-op")
