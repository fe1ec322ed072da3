"""`make bench ARGS="--only growth"` (issue 14): what the suite stores per byte written, what a write costs as
its store gains holders, and whether a long-lived database stays flat once pruned.

ModuleStore, Registry and Telemetry run as their own OS processes on SQLite files (holder costs on
PostgreSQL too). ModuleStore prunes every 0.5 s with a margin of 100 events and forgets request ids after
5 s, so a pass is seen within the bench's run; the defaults (runtime/housekeeping.py) are the same code on a
slower clock. Stored bytes are SQLite's pages in use after a checkpoint ((page_count - freelist_count) x
page_size): pruned pages are free for the next writes, so this is what the database holds, not the high-water
mark of its file. Figures only: nothing passes or fails; each is printed beside its target.

Stored bytes per appended byte: each append is one message of 200 bytes of made-up LLM-history-like text,
every message different (words drawn from a Zipf vocabulary of 20,000, tests/bench/archive_search.py's
Corpus), so a service that compresses what it stores gains what it would on real text, no more. The same
figure for 200 random printable characters (near-incompressible, about 6.6 bits a byte) is printed beside it
for information, with no target: it shows what the per-row overhead costs when compression cannot help.
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from ggmodules.common.v1 import common_pb2
from ggmodules.modulestore.v1 import modulestore_pb2, modulestore_service_pb2, modulestore_service_pb2_grpc
from ggmodules.telemetry.v1 import telemetry_service_pb2, telemetry_service_pb2_grpc
from tests.bench.archive_search import Corpus
from tests.harness import (
    ServiceProcess,
    drop_database,
    new_database_url,
    open_aio_channel,
    open_channel,
    stubs,
)

PRUNING = {
    "GGMODULES_OUTBOX_PRUNE_MARGIN": "100",
    "GGMODULES_PRUNE_INTERVAL_SECONDS": "0.5",
    "GGMODULES_REQUEST_LOG_RETENTION_SECONDS": "5",
    "GGMODULES_MODULESTORE_MAX_STORE_BYTES_HISTORY": str(64 * 1024 * 1024),
}
PG_DEFAULT = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
MS = modulestore_service_pb2
ROW_LIMIT = 2.0


def used_bytes(url: str) -> int:
    """Pages in use after a checkpoint, for a SQLite URL."""
    path = make_url(url).database
    assert path is not None
    with sqlite3.connect(path, timeout=30) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = db.execute("PRAGMA page_count").fetchone()[0]
        free = db.execute("PRAGMA freelist_count").fetchone()[0]
        size = db.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * size)


def table_bytes(url: str) -> dict[str, int]:
    """Bytes of pages each table and index of a SQLite database takes (after a checkpoint)."""
    path = make_url(url).database
    assert path is not None
    with sqlite3.connect(path, timeout=30) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return {str(n): int(b) for n, b in db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name")}


def payloads(kind: str, n: int, size: int) -> list[str]:
    """`n` different messages of `size` bytes: "text" (Zipf-vocabulary words) or "random" (printable
    characters drawn uniformly)."""
    if kind == "random":
        rng = random.Random(14)
        chars = [chr(c) for c in range(33, 127)]
        return ["".join(rng.choices(chars, k=size)) for _ in range(n)]
    corpus = Corpus()
    out = []
    for _ in range(n):
        words: list[str] = []
        while sum(len(w) + 1 for w in words) <= size:
            words.append(corpus.word())
        out.append(" ".join(words)[:size])
    return out


def rows(url: str, table: str) -> int:
    """The rows of `table`, on SQLite or PostgreSQL."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())
    finally:
        engine.dispose()


def binding(kind: int, action: int, source: str = "") -> modulestore_pb2.Binding:
    origin = (
        common_pb2.ORIGIN_CREATED if action == modulestore_pb2.BIND_ACTION_CREATE else common_pb2.ORIGIN_RUN
    )
    return modulestore_pb2.Binding(
        kind=kind, action=action, source_store_id=source, origin=origin, may_write=True
    )


def bind(
    stub: modulestore_service_pb2_grpc.ModuleStoreServiceStub,
    run: str,
    agent: str,
    *b: modulestore_pb2.Binding,
) -> dict[int, str]:
    resp = stub.BindInstance(
        MS.BindInstanceRequest(
            request_id=uuid.uuid4().hex, run_id=run, agent_id=agent, profile="bench", cause="open", bindings=b
        )
    )
    return {r.kind: r.store_id for r in resp.roster}


def append(run: str, agent: str, store: str, text: str, request_id: str = "") -> MS.WriteRequest:
    message = modulestore_pb2.MessageInput(role="user", content=text)
    return MS.WriteRequest(
        request_id=request_id, run_id=run, agent_id=agent, store_id=store,
        append_messages=MS.AppendMessages(messages=[message]),
    )  # fmt: skip


class Trio:
    """ModuleStore, Registry and Telemetry processes, on SQLite files in `directory` unless given `urls`."""

    def __init__(
        self, directory: Path, telemetry_env: dict[str, str] | None = None, urls: dict[str, str] | None = None
    ) -> None:
        """`urls`: each service's database (default: a new SQLite file each)."""
        self.urls = urls or {
            s: new_database_url("sqlite", s, directory) for s in ("modulestore", "registry", "telemetry")
        }
        quiet = ("--log-level", "warning")
        self.procs = [
            ServiceProcess("modulestore", "--database-url", self.urls["modulestore"], *quiet, env=PRUNING)
        ]
        ms = self.procs[0].address
        self.procs.append(
            ServiceProcess(
                "registry",
                "--database-url",
                self.urls["registry"],
                "--modulestore-address",
                ms,
                *quiet,
                env=PRUNING,
            )
        )
        self.procs.append(
            ServiceProcess(
                "telemetry",
                "--database-url",
                self.urls["telemetry"],
                "--modulestore-address",
                ms,
                "--registry-address",
                self.procs[1].address,
                *quiet,
                env=telemetry_env or {},
            )
        )
        self.ms_address = ms
        self.channel = open_channel(ms)
        self.ms = stubs(self.channel, "modulestore")
        self.tel_channel = open_channel(self.procs[2].address)
        self.tel = telemetry_service_pb2_grpc.TelemetryServiceStub(self.tel_channel)

    def close(self) -> None:
        self.channel.close()
        self.tel_channel.close()
        for p in reversed(self.procs):
            p.terminate()

    def taken_in(self, run: str, agent: str, marker: str) -> None:
        """Waits until Telemetry has stored the append carrying `marker`."""
        call = self.tel.Subscribe(telemetry_service_pb2.SubscribeRequest(run_id=run, agent_id=agent))
        try:
            for item in call:
                if item.WhichOneof("item") == "event" and any(
                    m.content == marker for m in item.event.event.write.delta.history.messages
                ):
                    return
        finally:
            call.cancel()

    def pruned(self, keep: int = 300, timeout: float = 60) -> None:
        """Waits until ModuleStore's outbox is down to its margin (Telemetry acknowledged, a pass ran)."""
        end = time.monotonic() + timeout
        while rows(self.urls["modulestore"], "ms_outbox") > keep:
            if time.monotonic() > end:
                print("  (outbox not pruned within the wait: figures below include it)")
                return
            time.sleep(0.2)

    def writes(self, run: str, agent: str, store: str, texts: list[str], callers: int = 16) -> None:
        """An append of each of `texts`, each with its own request id, from `callers` concurrent callers."""

        async def main() -> None:
            async with open_aio_channel(self.ms_address) as ch:
                stub = stubs(ch, "modulestore")
                left = iter(texts)

                async def caller() -> None:
                    for text in left:
                        await stub.Write(append(run, agent, store, text, uuid.uuid4().hex))

                await asyncio.gather(*(caller() for _ in range(callers)))

        asyncio.run(main())


def bytes_per_byte(directory: Path, kind: str = "text", detail: bool = False) -> dict[str, float]:
    """Each service's growth per appended byte for 5,000 appends of 200 bytes of `kind` (see `payloads`)."""
    n, size = 5000, 200
    texts = payloads(kind, n, size)
    trio = Trio(directory)
    try:
        run, agent = f"run-{uuid.uuid4().hex[:8]}", "writer-0"
        store = bind(
            trio.ms, run, agent, binding(common_pb2.KIND_HISTORY, modulestore_pb2.BIND_ACTION_CREATE)
        )[common_pb2.KIND_HISTORY]
        trio.ms.Write(append(run, agent, store, "start"))
        trio.taken_in(run, agent, "start")
        trio.pruned()
        before = {s: used_bytes(u) for s, u in trio.urls.items()}
        tables_before = {s: table_bytes(u) for s, u in trio.urls.items()}
        trio.writes(run, agent, store, texts)
        trio.ms.Write(append(run, agent, store, "end"))
        trio.taken_in(run, agent, "end")
        trio.pruned()
        time.sleep(6)  # past the 5 s request-log window, then a pass
        after = {s: used_bytes(u) for s, u in trio.urls.items()}
        tables_after = {s: table_bytes(u) for s, u in trio.urls.items()}
    finally:
        trio.close()
    payload = n * size
    grown = {s: (after[s] - before[s]) / payload for s in after}
    grown["all"] = sum(after[s] - before[s] for s in after) / payload
    if detail:  # GGMODULES_BENCH_DETAIL=1: where each service's bytes went, table by table
        for service, tables in tables_after.items():
            for name, b in sorted(tables.items(), key=lambda t: -t[1]):
                delta = b - tables_before[service].get(name, 0)
                if delta:
                    print(f"    {service:<12} {name:<40} {delta / payload:6.3f}x")
    return grown


def stored_per_byte(directory: Path) -> None:
    detail = os.environ.get("GGMODULES_BENCH_DETAIL") == "1"
    text = bytes_per_byte(directory, "text", detail)
    noise = bytes_per_byte(directory, "random", detail)
    print(
        "\n[stored bytes per appended byte, SQLite: 5,000 appends of 200 bytes = 1.0 MB, each message"
        "\n different: made-up LLM history text (Zipf-vocabulary words); beside it, for information only,"
        "\n 200 random printable characters each: near-incompressible, the floor compression cannot lower]"
    )
    print("                                 text      random")

    def line(label: str, key: str, target: float | None) -> None:
        mark = (
            ""
            if target is None
            else f"   (target <= {target:g}x){'' if text[key] <= target else '   MISSED'}"
        )
        print(f"  {label:<28} {text[key]:5.2f}x   {noise[key]:5.2f}x{mark}")

    line("ModuleStore, once pruned", "modulestore", 1.5)
    line("Telemetry", "telemetry", 2.0)
    line("Registry", "registry", None)
    # Issue 14's "<= 2x in all": the services' growth summed (the 6.6x was that sum, for "x" * 200).
    line("all three together", "all", 2.0)
    print("  (issue 14 measured 6.6x on main, for 200 bytes of one repeated character)")


def holder_costs(directory: Path, backend: str, pg_url: str) -> None:
    url = new_database_url(backend, "modulestore", directory, pg_url)
    proc = ServiceProcess("modulestore", "--database-url", url, "--log-level", "warning", env=PRUNING)
    channel = open_channel(proc.address)
    stub = stubs(channel, "modulestore")
    results: dict[int, tuple[float, float]] = {}
    try:
        for holders in (1, 32, 256):
            run = f"run-{uuid.uuid4().hex[:8]}"
            history = binding(common_pb2.KIND_HISTORY, modulestore_pb2.BIND_ACTION_CREATE)
            create = binding(common_pb2.KIND_MEMORIES, modulestore_pb2.BIND_ACTION_CREATE)
            memories = bind(stub, run, "a-0", history, create)[common_pb2.KIND_MEMORIES]
            share = binding(common_pb2.KIND_MEMORIES, modulestore_pb2.BIND_ACTION_SHARE, memories)
            for i in range(1, holders):
                bind(stub, run, f"a-{i}", history, share)
            n = 300
            samples = []
            for i in range(n + 30):
                request = MS.WriteRequest(
                    run_id=run,
                    agent_id=f"a-{i % holders}",
                    store_id=memories,
                    write_pad=MS.WritePad(text=f"pad {i}"),
                )
                t0 = time.perf_counter()
                stub.Write(request)
                if i >= 30:  # after a warm-up
                    samples.append(time.perf_counter() - t0)
            samples.sort()
            results[holders] = (samples[len(samples) // 2] * 1e6, n / sum(samples))
    finally:
        channel.close()
        proc.terminate()
        drop_database(url)
    print(f"\n[a write to a store held by H agents, {backend}: one caller, write_pad on shared memories]")
    for holders, (p50, rate) in results.items():
        print(f"  H = {holders:>3}   p50 {p50:8.0f} µs   {rate:7.0f} writes/s")
    ratio = results[256][0] / results[1][0]
    print(f"  H=256 / H=1 = {ratio:.1f}x   (target <= 2x){'' if ratio <= 2 else '   MISSED'}")


def figures(quick: bool) -> None:
    from tests.bench.flat_size import flat_size  # which imports this module's Trio

    pg_url = os.environ.get("GGMODULES_TEST_POSTGRES_URL", PG_DEFAULT)
    print("\nBounded growth (issue 14)")
    with tempfile.TemporaryDirectory() as tmp:
        stored_per_byte(Path(tmp))
        holder_costs(Path(tmp), "sqlite", pg_url)
        try:
            holder_costs(Path(tmp), "postgres", pg_url)
        except Exception as err:  # a machine without PostgreSQL still gets the SQLite figures
            print(f"(PostgreSQL figures left out: {err})")
        flat_size(Path(tmp), quick)


def postgres_figures(quick: bool) -> None:
    """`--only growth-postgres`: the database sizes on PostgreSQL (tests/bench/flat_size.py)."""
    from tests.bench.flat_size import flat_size

    pg_url = os.environ.get("GGMODULES_TEST_POSTGRES_URL", PG_DEFAULT)
    print("\nBounded growth on PostgreSQL (issue 14)")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            flat_size(Path(tmp), quick, "postgres", pg_url)
        except Exception as err:  # a machine without PostgreSQL
            print(f"(PostgreSQL figures left out: {err})")
