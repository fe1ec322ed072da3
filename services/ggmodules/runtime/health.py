"""The health a service reports follows its database: NOT_SERVING while the database does not answer, so
a load balancer or an orchestrator stops sending calls to a replica that could only refuse them, and
SERVING again once it answers. `grpc.health.v1` is served by grpcio-health-checking (runtime/server.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import structlog
from grpc_health.v1 import health_pb2
from grpc_health.v1.health import aio as health_aio
from sqlalchemy import text
from sqlalchemy.engine import Engine

from ggmodules.storage.contention import first_line
from ggmodules.storage.engine import CONNECT_TIMEOUT_SECONDS

PROBE_INTERVAL_SECONDS = 1.0
STOP_WAIT_SECONDS = 1.0
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def database_probe(engine: Engine) -> Callable[[], None]:
    """A probe that raises when the database does not answer a trivial query."""

    def probe() -> None:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    return probe


class HealthWatch:
    """Runs `probe` (blocking; raising means the database is unreachable) in a thread and `reachable` (what
    else the service depends on, e.g. Telemetry's event log) every PROBE_INTERVAL_SECONDS, and sets every
    name's status from them, logging each change once."""

    def __init__(
        self,
        probe: Callable[[], None] | None,
        health: health_aio.HealthServicer,
        names: Sequence[str],
        log: structlog.typing.FilteringBoundLogger,
        interval: float = PROBE_INTERVAL_SECONDS,
        reachable: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        self._probe = probe
        self._reachable = reachable
        self._health = health
        self._names = list(names)
        self._log = log
        self._interval = interval
        self._serving = True
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="health-watch")

    async def stop(self) -> None:
        """Cancels the watch and waits for it a moment, not longer: stopping a service must not wait on a
        probe (its thread may sit in a database connect until CONNECT_TIMEOUT_SECONDS), and a cancelled
        watch was seen (CPython 3.11, under load) still pending after a minute."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait({self._task}, timeout=STOP_WAIT_SECONDS)
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                if self._probe is not None:
                    # Awaited in this task, not wrapped in one of its own as wait_for does: a stop that
                    # cancelled that task before its first step left "coroutine 'to_thread' was never
                    # awaited" in the log.
                    async with asyncio.timeout(CONNECT_TIMEOUT_SECONDS + 1):
                        await asyncio.to_thread(self._probe)
                serving, what, error = True, "", ""
            except Exception as err:  # any failure to answer: the database is away for this replica
                serving, what = False, "database"
                error = first_line(err)
            if serving and self._reachable is not None and not await self._reachable():
                serving, what, error = False, "event log", "does not answer"
            if serving != self._serving:
                self._serving = serving
                if serving:
                    self._log.info("database and event log answer again: serving")
                else:
                    self._log.warning(f"{what} unreachable: not serving", error=error)
                for name in self._names:
                    await self._health.set(name, SERVING if serving else NOT_SERVING)
