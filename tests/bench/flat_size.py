"""Whether a long-lived database stays flat once pruned (issue 14): the last figure of
`make bench ARGS="--only growth"` (SQLite), and `ARGS="--only growth-postgres"` (PostgreSQL).

ModuleStore, Registry and Telemetry run as their own OS processes, each on its own database. Every write
overwrites one memories pad (the store's own contents stay one pad, so all growth is log: outbox, request ids,
and on PostgreSQL the old versions of the pad) and makes one outbox event and one request id. ModuleStore
prunes every 0.5 s with a margin of 100 events and forgets request ids after 5 s (growth.PRUNING); on
PostgreSQL the services VACUUM every 5 s (storage/vacuum.py); production: every 30 s, a day and a minute, the
same code on a slower clock. Telemetry keeps its newest 1,000 events.

What a database holds: on SQLite its pages in use after a checkpoint (growth.used_bytes); on PostgreSQL the
sum of pg_total_relation_size over its tables, dead rows included, which is what grows when nothing lets
their space be used again (autovacuum is off on this machine's server). Figures only: nothing passes or
fails; each is printed beside its target. The waits below (`time.sleep`) are the bench's: a pruning pass,
the request-log window and a VACUUM each run on their own clock, and nothing reports them done.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from pathlib import Path
from unittest import mock

import grpc
from sqlalchemy import create_engine, text

from ggmodules.common.v1 import common_pb2
from ggmodules.modulestore.v1 import modulestore_pb2
from tests.bench.growth import MS, ROW_LIMIT, Trio, append, bind, binding, used_bytes
from tests.harness import drop_database, new_database_url, open_aio_channel, stubs

SERVICES = ("modulestore", "registry", "telemetry")
# backend -> (writes in all, quick; a pad's filler, so PostgreSQL keeps it out of line as a real pad is; wait)
PLAN = {"sqlite": (100_000, 0, 6.0), "postgres": (30_000, 3000, 12.0)}


def _stored(backend: str, url: str) -> int:
    if backend == "sqlite":
        return used_bytes(url)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            total = "SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_stat_user_tables"
            return int(conn.execute(text(total)).scalar_one())
    finally:
        engine.dispose()


def _taken_in(trio: Trio, run: str, agent: str, marker: str) -> None:
    """Trio.taken_in, subscribed again when retention (1,000 events) passed the subscriber while Telemetry
    was still taking in the writes' events."""
    while True:
        try:
            return trio.taken_in(run, agent, marker)
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.OUT_OF_RANGE:
                raise


def flat_size(directory: Path, quick: bool, backend: str = "sqlite", pg_url: str = "") -> None:
    """Each database's size after 1,000 overwriting writes and after PLAN's total, each time once pruned."""
    most, filler, wait = PLAN[backend]
    if backend == "sqlite":
        urls = None
    else:
        urls = {s: new_database_url("postgres", s, directory, pg_url) for s in SERVICES}
    # The processes Trio starts take the VACUUM interval from the environment.
    with mock.patch.dict(os.environ, {"GGMODULES_VACUUM_INTERVAL_SECONDS": "5"}):
        trio = Trio(directory, {"GGMODULES_TELEMETRY_RETENTION_EVENTS": "1000"}, urls=urls)
    sizes: dict[int, dict[str, int]] = {}
    try:
        run, agent = f"run-{uuid.uuid4().hex[:8]}", "writer-0"
        held = bind(
            trio.ms, run, agent,
            binding(common_pb2.KIND_MEMORIES, modulestore_pb2.BIND_ACTION_CREATE),
            binding(common_pb2.KIND_HISTORY, modulestore_pb2.BIND_ACTION_CREATE),
        )  # fmt: skip
        memories, history = held[common_pb2.KIND_MEMORIES], held[common_pb2.KIND_HISTORY]

        async def overwrite(n: int, callers: int = 16) -> None:
            async with open_aio_channel(trio.ms_address) as ch:
                stub = stubs(ch, "modulestore")
                left = iter(range(n))

                async def caller() -> None:
                    for i in left:
                        pad = MS.WritePad(text=f"pad {i}" + " x" * (filler // 2))
                        await stub.Write(MS.WriteRequest(request_id=uuid.uuid4().hex, run_id=run,
                                                         agent_id=agent, store_id=memories, write_pad=pad))

                await asyncio.gather(*(caller() for _ in range(callers)))

        done = 0
        for total in (1_000, 10_000 if quick else most):
            t0 = time.perf_counter()
            asyncio.run(overwrite(total - done))
            done = total
            marker = f"after {total}"
            trio.ms.Write(append(run, agent, history, marker))
            _taken_in(trio, run, agent, marker)
            trio.pruned()
            time.sleep(wait)  # past the 5 s request-log window, then a pass (and a VACUUM)
            sizes[total] = {s: _stored(backend, u) for s, u in trio.urls.items()}
            took = time.perf_counter() - t0
            print(f"  ({total:,} writes in all; this part took {took:.0f} s with pruning and the wait)")
    finally:
        trio.close()
        for url in (urls or {}).values():
            drop_database(url)
    small, large = sizes[1_000], sizes[max(sizes)]
    name = "SQLite" if backend == "sqlite" else "PostgreSQL"
    print(f"\n[database size after {max(sizes):,} writes and a pruning pass, against after 1,000; {name}]")
    for service in SERVICES:
        ratio = large[service] / small[service]
        note = " (retention: its newest 1,000 events)" if service == "telemetry" else ""
        print(
            f"  {service:<12} {small[service] / 1e6:7.2f} MB -> {large[service] / 1e6:7.2f} MB"
            f"   {ratio:5.2f}x"
            f"   (target: flat within 2x){'' if ratio <= ROW_LIMIT else '   MISSED'}{note}"
        )
