"""The floor under write→subscriber on this machine: one grpc.aio process that does nothing but a write's
durable steps and hands the event to a server stream, printed at the end of `--only latency`.

The issue 9 target is write→subscriber p50 at most 3x a no-op unary RPC. A service cannot take less than the
steps its durability asks for: the write's COMMIT before the event leaves (R48: an acknowledged write
survives a crash; and no subscriber may see a write that did not happen); on the embedded SQL log a second
COMMIT, in Telemetry's database, before the event has its cursor; on JetStream a publish acknowledged by the
stream, which assigns the cursor, then its consumer's delivery. This yardstick makes exactly those steps from
the event loop (psycopg's asyncio connection in autocommit, one round trip a statement; SQLite with the
services' pragmas), with no services, no second process, no protobuf, no authentication, and measures each
against a no-op of the same process, in alternating rounds as the services' figures are. What it prints is
what no design of the services can go under here. The services' figures add their work to the same steps
and, on the SQL log, one process hop more (ModuleStore to Telemetry).

Run as its own OS process (`python -m tests.bench.floor SQLITE_PATH [--postgres A B] [--nats URL]`); it
listens on port 0 and prints `ready floor <host:port>` once it serves. `/bench.Floor/Write` takes
`<steps>:<text>` and answers once the steps are done; `/bench.Floor/Listen` streams an empty message once
registered, then every written text (from the JetStream consumer for the `*js` steps).
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc

from tests.bench.common import percentile
from tests.bench.raw_stream import PLAIN, FanOut, identity, serve_bytes

SERVICE = "bench.Floor"
# steps -> what the line says it does
STEPS = {
    "none": "nothing stored, the text handed to the stream",
    "sqlite": "one SQLite INSERT committed (WAL, synchronous=NORMAL, as the services)",
    "sqlitejs": "SQLite INSERT committed, published to JetStream, delivered from its consumer",
    "pg": "one PostgreSQL INSERT committed",
    "pg2": "PostgreSQL INSERT committed in one database, then in another (the SQL log's steps)",
    "pgjs": "PostgreSQL INSERT committed, published to JetStream, delivered from its consumer",
}


async def serve(sqlite_path: str, postgres: list[str], nats_url: str) -> None:
    fan_out = FanOut()

    lite = sqlite3.connect(sqlite_path, isolation_level=None)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL"):
        lite.execute(f"PRAGMA {pragma}")
    lite.execute("CREATE TABLE IF NOT EXISTS floor (id INTEGER PRIMARY KEY, body TEXT)")

    def lite_insert(text: str) -> None:
        lite.execute("BEGIN IMMEDIATE")
        lite.execute("INSERT INTO floor (body) VALUES (?)", (text,))
        lite.execute("COMMIT")

    inserts: list[Callable[[str], Awaitable[object]]] = []
    if postgres:
        import psycopg

        for dsn in postgres:
            conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
            await conn.execute("CREATE TABLE IF NOT EXISTS floor (id bigserial PRIMARY KEY, body text)")
            inserts.append(lambda text, c=conn: c.execute("INSERT INTO floor (body) VALUES (%s)", (text,)))
    publish: Callable[[bytes], Awaitable[object]] | None = None
    stream = ""
    if nats_url:
        import nats

        nc = await nats.connect(nats_url)
        js = nc.jetstream()
        stream = f"GGM_FLOOR_{uuid.uuid4().hex[:10]}"
        await js.add_stream(name=stream, subjects=[f"{stream}.x"])

        async def consumed(msg: nats.aio.msg.Msg) -> None:
            fan_out.deliver(msg.data)

        await js.subscribe(f"{stream}.x", cb=consumed, ordered_consumer=True)

        def publish(body: bytes) -> Awaitable[object]:
            return js.publish(f"{stream}.x", body)

    async def write(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        steps, _, body = request.partition(b":")
        text = body.decode()
        if steps.startswith(b"sqlite"):
            lite_insert(text)
        elif steps.startswith(b"pg"):
            for insert in inserts[: 2 if steps == b"pg2" else 1]:
                await insert(text)
        if steps.endswith(b"js"):
            assert publish is not None
            await publish(body)
        else:
            fan_out.deliver(body)
        return b""

    async def noop(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return b""

    await serve_bytes(SERVICE, {
        "Noop": grpc.unary_unary_rpc_method_handler(noop, **PLAIN),
        "Write": grpc.unary_unary_rpc_method_handler(write, **PLAIN),
        "Listen": grpc.unary_stream_rpc_method_handler(fan_out.listen, **PLAIN),
    }, "floor")
    if stream:
        await js.delete_stream(stream)
        await nc.close()


def _measure(address: str, steps: str, quick: bool) -> tuple[list[float], list[float]]:
    """(no-op samples, write→stream samples) in µs, in 10 alternating rounds after a warm-up, back to back
    as the services' figures are."""
    per_round = 30 if quick else 100
    plain = {"request_serializer": identity, "response_deserializer": identity}
    with grpc.insecure_channel(address) as channel:
        noop = channel.unary_unary(f"/{SERVICE}/Noop", **plain)
        write = channel.unary_unary(f"/{SERVICE}/Write", **plain)
        stream = channel.unary_stream(f"/{SERVICE}/Listen", **plain)(b"")
        next(stream)  # registered

        def written(text: str) -> float:
            t0 = time.perf_counter()
            write(f"{steps}:{text}".encode())
            while next(stream) != text.encode():
                pass
            return (time.perf_counter() - t0) * 1e6

        try:
            for i in range(100):
                noop(b"")
                written(f"warm-up {i}")
            noops: list[float] = []
            writes: list[float] = []
            for r in range(10):
                for _ in range(per_round):
                    t0 = time.perf_counter()
                    noop(b"")
                    noops.append((time.perf_counter() - t0) * 1e6)
                writes += [written(f"{r}.{i}") for i in range(per_round)]
        finally:
            stream.cancel()
    return noops, writes


def figures(quick: bool, postgres_url: str, nats_url: str) -> None:
    """Prints the floor's lines; PostgreSQL's and JetStream's only where they answer."""
    from tests.harness.backends import drop_database, new_database_url, psycopg_dsn

    with tempfile.TemporaryDirectory() as tmp:
        argv = [sys.executable, "-m", "tests.bench.floor", str(Path(tmp) / "floor.db")]
        databases: list[str] = []
        steps = ["none", "sqlite"]
        try:
            try:
                for name in "ab" if postgres_url else "":
                    databases.append(new_database_url("postgres", f"floor_{name}", Path(tmp), postgres_url))
            except Exception as err:  # a machine without PostgreSQL still gets the other lines
                print(f"\n(the floor's PostgreSQL lines left out: {str(err).splitlines()[0]})")
            if len(databases) == 2:
                argv += ["--postgres", *(psycopg_dsn(url) for url in databases)]
                steps += ["pg", "pg2"]
            if nats_url:
                argv += ["--nats", nats_url]
                steps += ["sqlitejs"] + (["pgjs"] if len(databases) == 2 else [])
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
            try:
                assert proc.stdout is not None
                line = proc.stdout.readline()
                if not line.startswith("ready floor "):
                    raise RuntimeError(f"the floor server did not start: {line!r}")
                results = {step: _measure(line.split()[2], step, quick) for step in steps}
            finally:
                proc.terminate()
                proc.wait(15)
        finally:
            for url in databases:
                drop_database(url)
    print("\nThe floor under write→subscriber here: one process doing only a write's durable steps, then"
          " handing the event to a stream (tests/bench/floor.py; no services; each line against its own"
          " no-op, no target: what the services' figures above cannot go under) — µs")
    for step, (noops, writes) in results.items():
        noop, p50 = percentile(noops, 0.5), percentile(writes, 0.5)
        print(f"  {STEPS[step]:<84} p50 {p50:6.0f}   no-op {noop:5.0f}   = {p50 / noop:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sqlite_path")
    parser.add_argument("--postgres", nargs=2, default=[], metavar=("DSN_A", "DSN_B"))
    parser.add_argument("--nats", default="")
    args = parser.parse_args()
    asyncio.run(serve(args.sqlite_path, args.postgres, args.nats))


if __name__ == "__main__":
    main()
