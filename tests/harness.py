"""Test harness: real services on port 0, in-process (a loop on a background thread) or as OS processes.

Nothing here is mocked: each service is the real grpc.aio server over a real database (a SQLite file, or
a fresh PostgreSQL database when `GGMODULES_TEST_POSTGRES_URL` is set).

Every backend-dependent test is parametrised over `BACKENDS`, both always: without a PostgreSQL URL the
PostgreSQL case of each is reported as skipped, with the reason, so a run's summary shows what it did not
cover instead of leaving it out silently.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
import structlog
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from ggmodules.cli.main import SERVICES
from ggmodules.core.telemetry.streams import Retention
from ggmodules.runtime.channels import MESSAGE_LIMITS
from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.observability import Observe
from ggmodules.runtime.server import RunningServer, start_server

T = TypeVar("T")
POSTGRES_URL = os.environ.get("GGMODULES_TEST_POSTGRES_URL", "")
NO_POSTGRES = "GGMODULES_TEST_POSTGRES_URL not set: the PostgreSQL case is not run"
BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param(
        "postgres", id="postgres", marks=pytest.mark.skipif(not POSTGRES_URL, reason=NO_POSTGRES)
    ),
]
# For what only PostgreSQL has (concurrent writers, its visibility rules): reported as skipped without a URL.
POSTGRES_ONLY = BACKENDS[1:]
needs_postgres = pytest.mark.skipif(not POSTGRES_URL, reason=NO_POSTGRES)
ROOT = Path(__file__).resolve().parent.parent


class LoopThread:
    """An asyncio loop on a daemon thread; tests submit coroutines to it and wait for the result."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="servers")
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60) -> T:
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


def new_database_url(backend: str, service: str, directory: Path, postgres_url: str = "") -> str:
    """A database no other test session uses: a new SQLite file, or a new PostgreSQL database created
    through `postgres_url` (default: GGMODULES_TEST_POSTGRES_URL)."""
    if backend == "sqlite":
        return f"sqlite:///{directory / f'{service}-{uuid.uuid4().hex[:8]}.db'}"
    server_url = postgres_url or POSTGRES_URL
    name = f"ggm_test_{service}_{uuid.uuid4().hex[:10]}"
    _admin(server_url, f'CREATE DATABASE "{name}"')
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(url: str) -> None:
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        _admin(
            parsed.set(database="postgres").render_as_string(hide_password=False),
            f'DROP DATABASE IF EXISTS "{parsed.database}" WITH (FORCE)',
        )


def _admin(server_url: str, statement: str) -> None:
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(statement))
    finally:
        admin.dispose()


class InProcessService:
    """One real service on port 0 inside the test process."""

    def __init__(self, loop: LoopThread, config: ServiceConfig, observe: Observe | None = None) -> None:
        self.loop = loop
        self.config = config
        log = structlog.get_logger().bind(service=config.service)
        build = importlib.import_module(SERVICES[config.service]).build_service

        async def _start() -> RunningServer:
            return await start_server(build(config, log), config.host, 0, log, observe)

        self.running = loop.run(_start())
        self.address = self.running.address

    def stop(self) -> None:
        self.loop.run(self.running.stop(0.5))


class InProcessTelemetry:
    """Telemetry on port 0 in a loop thread, following the ModuleStore and Registry its config names, with a
    chosen retention (default: its setting)."""

    def __init__(
        self,
        loop: LoopThread,
        config: ServiceConfig,
        retention: Retention | None = None,
        recent_bytes: int | None = None,
        observe: Observe | None = None,
    ) -> None:
        self.loop = loop
        build = importlib.import_module("ggmodules.server.telemetry.app").build_service
        log = structlog.get_logger().bind(service="telemetry")

        async def _start() -> RunningServer:
            service = build(config, log, retention=retention, recent_bytes=recent_bytes)
            return await start_server(service, config.host, 0, log, observe)

        self.running = loop.run(_start())
        self.address = self.running.address

    @property
    def repository(self) -> Any:
        return self.running.service.extra["repository"]

    def stop(self) -> None:
        self.loop.run(self.running.stop(0.5))


class Suite:
    """ModuleStore, Registry and Transfer, started in-process against one backend; Telemetry, following
    them, started the first time a test asks for it (`telemetry`)."""

    def __init__(self, backend: str, directory: Path) -> None:
        self.backend = backend
        self.directory = directory
        self._telemetry: InProcessTelemetry | None = None
        self.loop = LoopThread()
        names = ("modulestore", "registry", "transfer")
        self.urls = {name: new_database_url(backend, name, directory) for name in names}
        base = ServiceConfig(service="modulestore", port=0, log_level="warning")
        self.modulestore = InProcessService(
            self.loop, replace(base, service="modulestore", database_url=self.urls["modulestore"])
        )
        self.registry = InProcessService(
            self.loop,
            replace(
                base,
                service="registry",
                database_url=self.urls["registry"],
                modulestore_address=self.modulestore.address,
            ),
        )
        self.transfer = InProcessService(
            self.loop,
            replace(
                base,
                service="transfer",
                database_url=self.urls["transfer"],
                registry_address=self.registry.address,
                modulestore_address=self.modulestore.address,
            ),
        )
        self._channels: list[grpc.Channel] = []

    @property
    def telemetry(self) -> InProcessTelemetry:
        """Telemetry following this suite's ModuleStore and Registry (it catches up on what they already
        hold when it starts)."""
        if self._telemetry is None:
            self.urls["telemetry"] = new_database_url(self.backend, "telemetry", self.directory)
            config = ServiceConfig(
                service="telemetry",
                port=0,
                log_level="warning",
                database_url=self.urls["telemetry"],
                modulestore_address=self.modulestore.address,
                registry_address=self.registry.address,
            )
            self._telemetry = InProcessTelemetry(self.loop, config)
        return self._telemetry

    def channel(self, address: str) -> grpc.Channel:
        ch = grpc.insecure_channel(address, options=list(MESSAGE_LIMITS))
        self._channels.append(ch)
        return ch

    def close(self) -> None:
        for ch in self._channels:
            ch.close()
        if self._telemetry is not None:
            self._telemetry.stop()
        self.transfer.stop()
        self.registry.stop()
        self.modulestore.stop()
        self.loop.close()
        for url in self.urls.values():
            drop_database(url)


class ServiceProcess:
    """One service as its own OS process, started with `--port 0`; its address comes from its ready line."""

    def __init__(self, service: str, *args: str, env: dict[str, str] | None = None) -> None:
        self.service = service
        # The log goes to a file, not a pipe nobody drains (a full pipe would block the service).
        self._log = tempfile.NamedTemporaryFile(prefix=f"{service}-", suffix=".log", delete=False)  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ggmodules.cli.main", service, "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith(f"ready {service} "):
            self.proc.kill()
            self.proc.wait(10)
            raise RuntimeError(f"{service} did not start: {line!r}\n{self.log_text()}")
        self.address = line.split()[2]

    def log_text(self) -> str:
        """What the service logged to stderr so far (structlog JSON lines)."""
        return Path(self._log.name).read_text()

    def terminate(self, timeout: float = 15) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(15)


@contextmanager
def processes(*specs: tuple[str, tuple[str, ...]]) -> Iterator[list[ServiceProcess]]:
    started: list[ServiceProcess] = []
    try:
        for service, args in specs:
            started.append(ServiceProcess(service, *args))
        yield started
    finally:
        for p in reversed(started):
            if p.proc.poll() is None:
                p.kill()


def error_metadata(err: grpc.RpcError) -> dict[str, str]:
    """The ErrorInfo metadata of a refusal: the machine-readable particulars (which agent, which store)."""
    st = rpc_status.from_call(err)
    for d in st.details if st is not None else ():
        info = error_details_pb2.ErrorInfo()
        if d.Unpack(info):
            return dict(info.metadata)
    return {}


def status_of(err: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    """The code and ErrorInfo reason of a refusal."""
    st = rpc_status.from_call(err)
    reason = ""
    if st is not None:
        for d in st.details:
            info = error_details_pb2.ErrorInfo()
            if d.Unpack(info):
                reason = info.reason
    return err.code(), reason
