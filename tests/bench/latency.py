"""The event path's latency (issue 9, issue 10 P5), on the embedded SQL log (SQLite and PostgreSQL) and on
NATS JetStream: `python -m tests.bench.run --only latency`.

Each backend gets its own three processes (TelemetryBench, tests/bench/telemetry.py) and the raw stream
server as a fourth, and prints, beside its target:
- write→subscriber p50 against the no-op (health Check of the same Telemetry, same kind of channel), the two
  measured in alternating rounds of equal size so drift on the machine falls on both alike; then both again
  with every process left idle `PAUSE` before each call (see PAUSE; no target of its own);
- one write reaching 100 subscribers against a raw gRPC fan-out measured in the same run: one message
  published to 100 bare server streams (tests/bench/raw_stream.py, the same client layout: 10 asyncio
  channels, one publishing channel), from just before the publish until the last stream has it.
Last, the floor under write→subscriber on this machine (tests/bench/floor.py): one process making only a
write's durable steps, each against a no-op of its own, beside which the services' figures read.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from tests.bench import floor
from tests.bench.common import PG_DEFAULT, percentile
from tests.bench.raw_stream import fan_out_stubs
from tests.bench.telemetry import TelemetryBench, latency_lines, paced_line
from tests.harness import open_aio_channel

SUBSCRIBERS = 100
# Seconds every process is idle before each call of the paced figures. On a virtual machine whose idle vCPUs
# halt, a call to a process that was idle costs more than one to a busy process (seen here: a bare grpc.aio
# no-op p50 641 µs back to back, 1,210 µs after 1.5 ms idle, 1,761 µs after 3 ms). Back-to-back no-ops keep
# every process busy; a write's way to its subscriber leaves each process idle while the others work, so
# the back-to-back ratio carries that cost on one side only. The paced line measures both sides alike.
PAUSE = 0.005
# About the size of a one-message append's event on a Subscribe stream.
RAW_MESSAGE_BYTES = 300


def raw_fan_out(address: str, writes: int, subscribers: int = SUBSCRIBERS) -> list[float]:
    """µs from just before one publish until the last of `subscribers` raw streams has it, per publish
    (after one unmeasured publish)."""

    async def main() -> list[float]:
        channels = [open_aio_channel(address) for _ in range(10)]
        publisher = open_aio_channel(address)
        _, publish = fan_out_stubs(publisher)
        arrivals: list[list[float]] = [[] for _ in range(writes + 1)]
        everyone = [asyncio.Event() for _ in range(writes + 1)]
        registered = 0
        all_registered = asyncio.Event()

        async def listener(i: int) -> None:
            nonlocal registered
            listen, _ = fan_out_stubs(channels[i % len(channels)])
            call = listen(b"")
            await call.read()  # registered
            registered += 1
            if registered == subscribers:
                all_registered.set()
            async for message in call:
                n = int(message[:8])
                arrivals[n].append(time.perf_counter())
                if len(arrivals[n]) == subscribers:
                    everyone[n].set()

        tasks = [asyncio.create_task(listener(i)) for i in range(subscribers)]
        samples = []
        try:
            await asyncio.wait_for(all_registered.wait(), 60)
            for n in range(writes + 1):
                body = f"{n:08d}".encode().ljust(RAW_MESSAGE_BYTES, b".")
                t0 = time.perf_counter()
                await publish(body)
                await asyncio.wait_for(everyone[n].wait(), 60)
                if n:
                    samples.append((max(arrivals[n]) - t0) * 1e6)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for ch in [*channels, publisher]:
                await ch.close()
        return samples

    return asyncio.run(main())


def _one(label: str, quick: bool, **bench_args: str | bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        try:
            bench = TelemetryBench(Path(tmp), quick, **bench_args)  # type: ignore[arg-type]
        except Exception as err:  # a machine without PostgreSQL or NATS still gets the other figures
            print(f"\n({label} left out: {err})")
            return
        try:
            noop, latency = bench.noop_and_write_to_subscriber()
            paced = bench.noop_and_write_to_subscriber(pause=PAUSE)
            fan_out = bench.fan_out(SUBSCRIBERS)
            assert bench.raw is not None
            raw = raw_fan_out(bench.raw.address, len(fan_out))
        finally:
            bench.close()
    print(f"\nEvent path latency, {label} — µs")
    latency_lines(noop, latency)
    paced_line(*paced, PAUSE)
    fan, base = statistics.median(fan_out), statistics.median(raw)
    ratio = fan / base
    print(f"  raw gRPC fan-out, one {RAW_MESSAGE_BYTES}-byte message to {SUBSCRIBERS} streams   median"
          f" {base:8.0f}   (n={len(raw)})")
    print(f"  one write to reach {SUBSCRIBERS} subscribers             median {fan:8.0f}"
          f"   (min {min(fan_out):.0f}, max {max(fan_out):.0f}, n={len(fan_out)})"
          f"   = {ratio:.2f}x the raw fan-out (target <= 2x){'' if ratio <= 2 else '   MISSED'}"
          f"   ({fan / percentile(noop, 0.5):.1f}x no-op)")


def figures(quick: bool) -> None:
    _one("embedded SQL log on SQLite (three processes)", quick)
    pg_url = os.environ.get("GGMODULES_TEST_POSTGRES_URL", PG_DEFAULT)
    _one("embedded SQL log on PostgreSQL (each service its own database)", quick,
         backend="postgres", postgres_url=pg_url)  # fmt: skip
    from tests.harness.event_logs import NATS_URL, NO_NATS, drop_stream, fresh_jetstream_url

    if not NATS_URL:
        print(f"\n(JetStream figures left out: {NO_NATS})")
        floor.figures(quick, pg_url, "")
        return
    on_postgres = {"backend": "postgres", "postgres_url": pg_url}
    js = "event log on NATS JetStream"
    for label, publishes, backend in (
        (f"{js}, ModuleStore publishing its own events (services on SQLite)", True, {}),
        (f"{js}, Telemetry relaying ModuleStore's events (services on SQLite)", False, {}),
        (f"{js}, ModuleStore publishing its own events, services on PostgreSQL (README's \"Running several"
         " replicas\", one replica of each)", True, on_postgres),
    ):
        url = fresh_jetstream_url()
        try:
            _one(label, quick, event_log=url, origin_publishes=publishes, **backend)
        finally:
            drop_stream(url)
    floor.figures(quick, pg_url, NATS_URL)
