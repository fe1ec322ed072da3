"""`make bench ARGS="--only session"`: an acknowledged, durable history append on a write Session beside the
no-op unary call (health Check) and the unary append, ModuleStore in its own process on SQLite and PostgreSQL.

Measured in alternating batches so every figure sees the same machine load; each sample is one write sent
and its durable acknowledgement received (one at a time: the next is sent after the previous is answered).
Also printed: the cost per write when 32 are pipelined (sent together, answers read as they come).
Target (issue 10): session append p50 < 1.0x the no-op unary call.
"""

from __future__ import annotations

import os
import queue
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from grpc_health.v1 import health_pb2, health_pb2_grpc

from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.sdk.credentials import bearer
from tests.bench.common import LONG_HISTORIES, PG_DEFAULT, append_request, bind_history, percentile
from tests.harness import WALLET, ServiceProcess, drop_database, new_database_url, open_channel, stubs

PIPELINED = 32


class _Session:
    """One Session stream: `send` a write, `answer` waits for the next acknowledgement."""

    def __init__(self, stub: Any, credential: str) -> None:
        self._outbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        requests: Iterator[Any] = iter(self._outbox.get, None)
        self._answers = stub.Session(requests, metadata=bearer(credential))

    def send(self, request: svc.WriteRequest) -> None:
        self._outbox.put(svc.SessionRequest(write=request))

    def answer(self) -> svc.SessionResponse:
        answer: svc.SessionResponse = next(self._answers)
        assert answer.WhichOneof("outcome") == "written", answer
        return answer

    def close(self) -> None:
        self._outbox.put(None)
        for _ in self._answers:
            pass


def _timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def measure(database_url: str, quick: bool) -> dict[str, float]:
    proc = ServiceProcess("modulestore", "--database-url", database_url, "--log-level", "warning",
                          env=LONG_HISTORIES)
    channel = open_channel(proc.address)
    try:
        stub = stubs(channel, "modulestore")
        health = health_pb2_grpc.HealthStub(channel)
        run = f"run-{uuid.uuid4().hex[:12]}"
        store = bind_history(stub, run, "appender-0")
        session = _Session(stub, WALLET.agent(run, "appender-0"))

        def on_session() -> None:
            session.send(append_request(run, "appender-0", store))
            session.answer()

        def pipelined() -> None:
            for _ in range(PIPELINED):
                session.send(append_request(run, "appender-0", store))
            for _ in range(PIPELINED):
                session.answer()

        check = health_pb2.HealthCheckRequest()
        samples: dict[str, list[float]] = {"noop": [], "unary": [], "session": [], "pipelined": []}
        for batch in range(6 if quick else 30):
            got = {
                "noop": _timed(lambda: health.Check(check), 100),
                "unary": _timed(lambda: stub.Write(append_request(run, "appender-0", store)), 100),
                "session": _timed(on_session, 100),
                "pipelined": [us / PIPELINED for us in _timed(pipelined, 4)],
            }
            if batch > 0:  # the first batch warms up
                for key, values in got.items():
                    samples[key] += values
        session.close()
    finally:
        channel.close()
        proc.terminate()
    return {key: percentile(values, 0.5) for key, values in samples.items()}


def figures(quick: bool) -> None:
    pg_url = os.environ.get("GGMODULES_TEST_POSTGRES_URL", PG_DEFAULT)
    with tempfile.TemporaryDirectory() as tmp:
        backends = [("SQLite", new_database_url("sqlite", "modulestore", Path(tmp)))]
        try:
            backends.append(("PostgreSQL", new_database_url("postgres", "modulestore", Path(tmp), pg_url)))
        except Exception as err:  # a machine without PostgreSQL still gets the SQLite figures
            print(f"(PostgreSQL session figures left out: {err})")
        print("\nWrite Session (ModuleStore in its own process; alternating batches) — µs")
        for label, url in backends:
            try:
                p50 = measure(url, quick)
            finally:
                drop_database(url)
            ratio = p50["session"] / p50["noop"]
            verdict = "met" if ratio < 1.0 else "MISSED"
            print(f"\n[{label}]")
            print(f"  no-op unary RPC (health Check)               p50 {p50['noop']:8.0f}")
            print(f"  history append, unary Write                  p50 {p50['unary']:8.0f}"
                  f"   = {p50['unary'] / p50['noop']:.2f}x no-op")
            print(f"  history append on a session, acknowledged    p50 {p50['session']:8.0f}"
                  f"   = {ratio:.2f}x no-op (target < 1.0x: {verdict})")
            print(f"  per append, {PIPELINED} pipelined on a session       p50 {p50['pipelined']:8.0f}"
                  f"   = {p50['pipelined'] / p50['noop']:.2f}x no-op")
