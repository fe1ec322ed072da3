"""`make bench ARGS="--only fanout"` (issue 14): what a write to a store held by H agents costs now that it is
stored once (one outbox row, the holders' snapshots derived when the outbox is read, storage/fan_out.py), and
how fast Telemetry takes in the derived events.

ModuleStore (and, for the second figure, Registry and Telemetry) run as their own OS processes. For each H
the write figures are the median of three rounds; the ratio is H=256 against H=1 of the same backend.
Figures only: nothing passes or fails; each is printed beside its target.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text

from ggmodules.common.v1 import common_pb2
from ggmodules.modulestore.v1 import modulestore_pb2, modulestore_service_pb2
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc
from tests.bench.growth import PG_DEFAULT, PRUNING, Trio, append, bind, binding, payloads
from tests.harness import ServiceProcess, drop_database, new_database_url, open_channel, stubs

MS = modulestore_service_pb2
HOLDERS = (1, 32, 256)
ROUNDS, WRITES = 3, 150


def _shared_memories(stub: object, run: str, holders: int) -> str:
    history = binding(common_pb2.KIND_HISTORY, modulestore_pb2.BIND_ACTION_CREATE)
    create = binding(common_pb2.KIND_MEMORIES, modulestore_pb2.BIND_ACTION_CREATE)
    memories = bind(stub, run, "a-0", history, create)[common_pb2.KIND_MEMORIES]  # type: ignore[arg-type]
    share = binding(common_pb2.KIND_MEMORIES, modulestore_pb2.BIND_ACTION_SHARE, memories)
    for i in range(1, holders):
        bind(stub, run, f"a-{i}", history, share)  # type: ignore[arg-type]
    return memories


def _outbox_rows(url: str, run: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            query = text("SELECT count(*) FROM ms_outbox WHERE run_id = :run")
            return int(conn.execute(query, {"run": run}).scalar_one())
    finally:
        engine.dispose()


def write_costs(directory: Path, backend: str, pg_url: str) -> None:
    url = new_database_url(backend, "modulestore", directory, pg_url)
    proc = ServiceProcess("modulestore", "--database-url", url, "--log-level", "warning", env=PRUNING)
    channel = open_channel(proc.address)
    stub = stubs(channel, "modulestore")
    p50s: dict[int, list[float]] = {h: [] for h in HOLDERS}
    rates: dict[int, list[float]] = {h: [] for h in HOLDERS}
    rows: dict[int, float] = {}
    try:
        runs = {h: f"run-{uuid.uuid4().hex[:8]}" for h in HOLDERS}
        stores = {h: _shared_memories(stub, runs[h], h) for h in HOLDERS}
        for _ in range(ROUNDS):
            for h in HOLDERS:  # interleaved, so a busy moment of the machine falls on every H alike
                before = _outbox_rows(url, runs[h])
                samples = []
                for i in range(WRITES):
                    request = MS.WriteRequest(
                        run_id=runs[h], agent_id=f"a-{i % h}", store_id=stores[h],
                        write_pad=MS.WritePad(text=f"pad {i}"),
                    )  # fmt: skip
                    t0 = time.perf_counter()
                    stub.Write(request)
                    samples.append(time.perf_counter() - t0)
                rows[h] = (_outbox_rows(url, runs[h]) - before) / WRITES
                p50s[h].append(statistics.median(samples) * 1e6)
                rates[h].append(WRITES / sum(samples))
    finally:
        channel.close()
        proc.terminate()
        drop_database(url)
    print(f"\n[a write to a store held by H agents, {backend}: one caller, write_pad on shared memories]")
    for h in HOLDERS:
        print(
            f"  H = {h:>3}   p50 {statistics.median(p50s[h]):8.0f} µs   {statistics.median(rates[h]):7.0f} "
            f"writes/s   {rows[h]:.0f} outbox row(s) per write (target 1)"
        )
    ratio = statistics.median(p50s[256]) / statistics.median(p50s[1])
    rate_ratio = statistics.median(rates[1]) / statistics.median(rates[256])
    for name, value in (("p50 latency", ratio), ("throughput", rate_ratio)):
        print(f"  {name}: H=256 costs {value:.1f}x H=1   (target <= 2x){'' if value <= 2 else '   MISSED'}")


def telemetry_intake(directory: Path, holders: int = 256, writes: int = 50) -> None:
    """How long Telemetry takes to store the events derived from `writes` writes to a store held by
    `holders` agents (each write: one event and holders - 1 snapshots), from the first write to the last."""
    trio = Trio(directory)
    try:
        run = f"run-{uuid.uuid4().hex[:8]}"
        memories = _shared_memories(trio.ms, run, holders)
        history = bind(
            trio.ms, run, "marker-0", binding(common_pb2.KIND_HISTORY, modulestore_pb2.BIND_ACTION_CREATE)
        )[common_pb2.KIND_HISTORY]
        trio.ms.Write(append(run, "marker-0", history, "start"))
        trio.taken_in(run, "marker-0", "start")
        t0 = time.perf_counter()
        for i in range(writes):
            pad = MS.WritePad(text=f"pad {i}")
            trio.ms.Write(
                MS.WriteRequest(run_id=run, agent_id=f"a-{i % holders}", store_id=memories, write_pad=pad)
            )
        trio.ms.Write(append(run, "marker-0", history, "end"))
        trio.taken_in(run, "marker-0", "end")
        took = time.perf_counter() - t0
    finally:
        trio.close()
    events = writes * holders
    print(
        f"\n[Telemetry taking in the fan-out of {writes} writes to a store held by {holders} agents, SQLite]"
    )
    print(f"  {events:,} events written and stored in {took:.1f} s: {events / took:,.0f} events/s")


def telemetry_bytes_postgres(directory: Path, pg_url: str, n: int = 3000, size: int = 200) -> None:
    """Telemetry's table and index bytes on PostgreSQL per appended byte (ModuleStore and Registry on SQLite):
    `n` appends of `size` bytes, measured with pg_total_relation_size of the rows and the packed blocks after
    a VACUUM (space a VACUUM frees stays in the table for its next rows, so it is counted)."""
    trio = Trio(directory)
    tel_url = new_database_url("postgres", "telemetry", directory, pg_url)
    telemetry = ServiceProcess(
        "telemetry", "--database-url", tel_url, "--modulestore-address", trio.ms_address,
        "--registry-address", trio.procs[1].address, "--log-level", "warning",
    )  # fmt: skip
    engine = create_engine(tel_url, isolation_level="AUTOCOMMIT")

    def stored() -> int:
        with engine.connect() as conn:
            total = 0
            for table in ("tel_events", "tel_event_blocks"):  # rows, then the older ones packed into blocks
                conn.execute(text(f"VACUUM {table}"))
                size = int(conn.execute(text(f"SELECT pg_total_relation_size('{table}')")).scalar_one())
                total += size
            return total

    try:
        trio.tel_channel.close()
        trio.tel_channel = open_channel(telemetry.address)
        trio.tel = telemetry_service_pb2_grpc.TelemetryServiceStub(trio.tel_channel)
        run, agent = f"run-{uuid.uuid4().hex[:8]}", "writer-0"
        history = bind(
            trio.ms, run, agent, binding(common_pb2.KIND_HISTORY, modulestore_pb2.BIND_ACTION_CREATE)
        )[common_pb2.KIND_HISTORY]
        trio.ms.Write(append(run, agent, history, "start"))
        trio.taken_in(run, agent, "start")
        before = stored()
        trio.writes(run, agent, history, payloads("text", n, size))
        trio.ms.Write(append(run, agent, history, "end"))
        trio.taken_in(run, agent, "end")
        ratio = (stored() - before) / (n * size)
    finally:
        engine.dispose()
        telemetry.terminate()
        trio.close()
        drop_database(tel_url)
    print(f"\n[Telemetry's stored bytes per appended byte, PostgreSQL: {n:,} appends of {size} bytes of"
          " made-up LLM history text, as the growth section's]")
    print(
        f"  tel_events and tel_event_blocks with their indexes   {ratio:5.2f}x   (target <= 2x)"
        f"{'' if ratio <= 2 else '   MISSED'}"
    )


def figures(quick: bool) -> None:
    pg_url = os.environ.get("GGMODULES_TEST_POSTGRES_URL", PG_DEFAULT)
    print("\nPer-holder fan-out stored once (issue 14)")
    with tempfile.TemporaryDirectory() as tmp:
        write_costs(Path(tmp), "sqlite", pg_url)
        try:
            write_costs(Path(tmp), "postgres", pg_url)
            telemetry_bytes_postgres(Path(tmp), pg_url)
        except Exception as err:  # a machine without PostgreSQL still gets the SQLite figures
            print(f"(PostgreSQL figures left out: {err})")
        telemetry_intake(Path(tmp), writes=20 if quick else 50)
