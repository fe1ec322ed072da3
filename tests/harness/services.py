"""Real services on port 0: in-process (a loop on a background thread) or as OS processes. Nothing here is
mocked: each service is the real grpc.aio server over a real database, with the session's keys (auth on)."""

from __future__ import annotations

import asyncio
import importlib
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import structlog

from ggmodules.cli.main import SERVICES
from ggmodules.core.telemetry.streams import Retention
from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.observability import Observe
from ggmodules.runtime.server import RunningServer, start_server

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]


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


DEFAULT_LAUNCHER = "ggmodules.cli.main"


class ServiceProcess:
    """One service as its own OS process, started with `--port 0`; its address comes from its ready line."""

    def __init__(
        self, service: str, *args: str, env: dict[str, str] | None = None, launcher: str = DEFAULT_LAUNCHER
    ) -> None:
        """`launcher`: the module run with `-m` (a test launcher may add test-only hooks, e.g.
        tests/tools/crashing.py)."""
        self.service = service
        # The log goes to a file, not a pipe nobody drains (a full pipe would block the service).
        self._log = tempfile.NamedTemporaryFile(prefix=f"{service}-", suffix=".log", delete=False)  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", launcher, service, "--port", "0", *args],
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
        self.ready_line = line.strip()

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
