"""`make bench ARGS="--only growth-postgres"` (issue 14): whether a long-lived database on PostgreSQL stays
flat once pruned, as `growth`'s last figure asks of SQLite.

ModuleStore, Registry and Telemetry run as their own OS processes, each on its own PostgreSQL database.
Every write overwrites one memories pad (the store's state, written again whole) and makes one outbox event
and one request id. ModuleStore prunes every 0.5 s with a margin of 100 events and forgets request ids after
5 s, and VACUUMs every 5 s (storage/vacuum.py; production: every 30 s, a day and a minute, the same code on
a slower clock); Telemetry keeps its newest 1,000 events. A database's size is the sum of
pg_total_relation_size over its tables: the space they hold, dead rows included, which is what grows when
nothing lets it be used again (PostgreSQL's autovacuum is off on this machine). Figures only: nothing passes
or fails; each is printed beside its target.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
import uuid
from pathlib import Path
from unittest import mock

import grpc
from sqlalchemy import create_engine, text

from ggmodules.common.v1 import common_pb2
from ggmodules.modulestore.v1 import modulestore_pb2
from tests.bench.growth import MS, PG_DEFAULT, ROW_LIMIT, Trio, append, bind, binding
from tests.harness import drop_database, new_database_url, open_aio_channel, stubs

SERVICES = ("modulestore", "registry", "telemetry")


def _sizes(urls: dict[str, str]) -> dict[str, int]:
    out = {}
    for service, url in urls.items():
        engine = create_engine(url)
        try:
            with engine.connect() as conn:
                total = conn.execute(
                    text("SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_stat_user_tables")
                ).scalar_one()
        finally:
            engine.dispose()
        out[service] = int(total)
    return out


def _outbox_rows(url: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM ms_outbox")).scalar_one())
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


def flat_size_postgres(directory: Path, pg_url: str, quick: bool) -> None:
    urls = {s: new_database_url("postgres", s, directory, pg_url) for s in SERVICES}
    vacuuming = {"GGMODULES_VACUUM_INTERVAL_SECONDS": "5"}
    with mock.patch.dict(os.environ, vacuuming):  # the processes Trio starts take it from the environment
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
                        pad = MS.WritePad(text=f"pad {i} " + "x" * 3000)  # out of line, as a real pad is
                        await stub.Write(MS.WriteRequest(request_id=uuid.uuid4().hex, run_id=run,
                                                         agent_id=agent, store_id=memories, write_pad=pad))

                await asyncio.gather(*(caller() for _ in range(callers)))

        done = 0
        for total in (1_000, 10_000 if quick else 30_000):
            t0 = time.perf_counter()
            asyncio.run(overwrite(total - done))
            done = total
            marker = f"after {total}"
            trio.ms.Write(append(run, agent, history, marker))
            _taken_in(trio, run, agent, marker)
            end = time.monotonic() + 60
            while _outbox_rows(urls["modulestore"]) > 300 and time.monotonic() < end:
                time.sleep(0.2)
            time.sleep(12)  # past the 5 s request-log window, then a pass, then a VACUUM
            sizes[total] = _sizes(urls)
            took = time.perf_counter() - t0
            print(f"  ({total:,} writes in all; this part took {took:.0f} s with the waits)")
    finally:
        trio.close()
        for url in urls.values():
            drop_database(url)
    small, large = sizes[1_000], sizes[max(sizes)]
    print(f"\n[database size after {max(sizes):,} writes and pruning, against after 1,000; PostgreSQL]")
    for service in SERVICES:
        ratio = large[service] / small[service]
        print(
            f"  {service:<12} {small[service] / 1e6:7.2f} MB -> {large[service] / 1e6:7.2f} MB"
            f"   {ratio:5.2f}x   (target: flat within 2x){'' if ratio <= ROW_LIMIT else '   MISSED'}"
        )


def figures(quick: bool) -> None:
    pg_url = os.environ.get("GGMODULES_TEST_POSTGRES_URL", PG_DEFAULT)
    print("\nBounded growth on PostgreSQL (issue 14)")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            flat_size_postgres(Path(tmp), pg_url, quick)
        except Exception as err:  # a machine without PostgreSQL
            print(f"(PostgreSQL figures left out: {err})")
