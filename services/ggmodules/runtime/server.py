"""Starting and stopping one service: a grpc.aio server with health, reflection and the call interceptor.

A service announces itself on stdout with one line, `ready <service> <host:port>`, once it is serving;
supervisors and tests started with `--port 0` read the bound port from it. Logs go to stderr.
"""

from __future__ import annotations

import asyncio
import gc
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import grpc
import structlog
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from grpc_reflection.v1alpha import reflection

from ggmodules.runtime.channels import MAX_MESSAGE_BYTES, MESSAGE_LIMITS, SERVER_KEEPALIVE_OPTIONS
from ggmodules.runtime.health import HealthWatch
from ggmodules.runtime.interceptors import CallInterceptor
from ggmodules.runtime.observability import Metrics, Observe, server_interceptors
from ggmodules.runtime.security import INSECURE, Security

# The suite's message-size limits (runtime/channels.py), the same on every channel opened to the server, and
# its keepalive policy.
SERVER_OPTIONS = [*MESSAGE_LIMITS, *SERVER_KEEPALIVE_OPTIONS, ("grpc.so_reuseport", 0)]


@dataclass
class Service:
    """What a service contributes to its server: servicers to register and their full names."""

    name: str
    register: Callable[[grpc.aio.Server], None]
    service_names: Sequence[str]
    on_stop: Callable[[], Awaitable[None]] | None = None
    # Awaited inside the server's loop before it starts serving (e.g. connecting to an event log).
    on_start: Callable[[], Awaitable[None]] | None = None
    # Raises while the service's database does not answer: health then reports NOT_SERVING.
    probe: Callable[[], None] | None = None
    # Whether something else the service depends on answers (e.g. Telemetry's event log); health reports
    # NOT_SERVING while it does not.
    reachable: Callable[[], Awaitable[bool]] | None = None
    extra: dict[str, object] = field(default_factory=dict)
    # Credentials and TLS (runtime/security.py); INSECURE only under --insecure-dev.
    security: Security = INSECURE


SERVING, NOT_SERVING = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING
# grpc.aio's Server.stop(grace) can fail to return when a streaming call is cancelled at the wrong moment
# (grpc/grpc#28999, open): after its grace and this much more, stopping goes on without it, so the service's
# own shutdown (on_stop: its database, its listeners) still runs and the process can exit.
STOP_OVERRUN_SECONDS = 5.0


class RunningServer:
    def __init__(
        self,
        server: grpc.aio.Server,
        address: str,
        health: health_aio.HealthServicer,
        service: Service,
        calls: CallInterceptor | None = None,
    ) -> None:
        self.server = server
        self.calls = calls
        self.address = address
        self.health = health
        self.service = service
        # The /metrics endpoint when `--metrics-port` is set (runtime/observability.py).
        self.metrics: Metrics | None = None
        self.watch: HealthWatch | None = None

    async def stop(self, grace: float = 5.0) -> None:
        if self.watch is not None:
            await self.watch.stop()
        await self.health.enter_graceful_shutdown()
        if self.calls is not None:
            self.calls.end_streams()  # resumable: not held to the end of the grace
        stopping = asyncio.ensure_future(self.server.stop(grace))
        done, _ = await asyncio.wait({stopping}, timeout=grace + STOP_OVERRUN_SECONDS)
        if not done:
            structlog.get_logger().warning(
                "grpc server did not finish stopping; shutting the service down without it",
                service=self.service.name, grace_seconds=grace,
            )
        if self.service.on_stop is not None:
            await self.service.on_stop()
        if self.metrics is not None:
            self.metrics.close()


async def start_server(
    service: Service,
    host: str,
    port: int,
    log: structlog.typing.FilteringBoundLogger,
    observe: Observe | None = None,
) -> RunningServer:
    security = service.security
    # Traces and metrics only when asked for (`observe`); a service's extra gauges are `extra["collectors"]`.
    metrics = None
    if observe is not None and observe.metrics_port is not None:
        metrics = Metrics(service.name, service.extra.get("collectors", ()))  # type: ignore[arg-type]
    call_interceptor = CallInterceptor(log, MAX_MESSAGE_BYTES, security.guard)
    interceptors = [*server_interceptors(observe, metrics), call_interceptor]
    server = grpc.aio.server(interceptors=interceptors, options=SERVER_OPTIONS)
    service.register(server)
    if service.on_start is not None:
        await service.on_start()
    health = health_aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    names = [*service.service_names, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name]
    reflection.enable_server_reflection([*names, reflection.SERVICE_NAME], server)
    if security.server_credentials is not None:
        bound = server.add_secure_port(f"{host}:{port}", security.server_credentials)
    else:
        bound = server.add_insecure_port(f"{host}:{port}")
    await server.start()
    for name in ["", *service.service_names]:
        await health.set(name, health_pb2.HealthCheckResponse.SERVING)
    running = RunningServer(server, f"{host}:{bound}", health, service, call_interceptor)
    if metrics is not None and observe is not None and observe.metrics_port is not None:
        metrics.serve(host, observe.metrics_port)
        running.metrics = metrics
    if service.probe is not None or service.reachable is not None:
        running.watch = HealthWatch(
            service.probe, health, ["", *service.service_names], log, reachable=service.reachable
        )
        running.watch.start()
    return running


def settle_heap() -> None:
    """Moves what start-up built (modules, tables, prepared statements: ~136,000 objects in ModuleStore)
    out of the cyclic garbage collector's reach (`gc.freeze`): a full collection no longer walks it, which
    cost ~70 ms once per ~8,000 writes and about 3% of a busy server's CPU. It is still freed by reference
    counting; only cycles among it would stay, and start-up's garbage is collected first."""
    gc.collect()
    gc.freeze()


async def serve_forever(
    service: Service,
    host: str,
    port: int,
    grace: float,
    log: structlog.typing.FilteringBoundLogger,
    observe: Observe | None = None,
) -> None:
    """Serves until SIGTERM or SIGINT, then drains in-flight calls for up to `grace` seconds."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    running = await start_server(service, host, port, log, observe)
    settle_heap()
    log.info("serving", service=service.name, address=running.address)
    sys.stdout.write(f"ready {service.name} {running.address}\n")
    if running.metrics is not None:
        log.info("serving metrics", service=service.name, address=running.metrics.address)
        sys.stdout.write(f"metrics {service.name} {running.metrics.address}\n")
    sys.stdout.flush()
    await stop.wait()
    log.info("stopping", service=service.name, grace_seconds=grace)
    await running.stop(grace)
    log.info("stopped", service=service.name)
