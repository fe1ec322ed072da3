"""Starting and stopping one service: a grpc.aio server with health, reflection and the call interceptor.

A service announces itself on stdout with one line, `ready <service> <host:port>`, once it is serving;
supervisors and tests started with `--port 0` read the bound port from it. Logs go to stderr.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import grpc
import structlog
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from grpc_reflection.v1alpha import reflection

from ggmodules.runtime.channels import MAX_MESSAGE_BYTES, MESSAGE_LIMITS
from ggmodules.runtime.interceptors import CallInterceptor
from ggmodules.runtime.security import INSECURE, Security

# The suite's message-size limits (runtime/channels.py), the same on every channel opened to the server.
SERVER_OPTIONS = [*MESSAGE_LIMITS, ("grpc.so_reuseport", 0)]


@dataclass
class Service:
    """What a service contributes to its server: servicers to register and their full names."""

    name: str
    register: Callable[[grpc.aio.Server], None]
    service_names: Sequence[str]
    on_stop: Callable[[], Awaitable[None]] | None = None
    extra: dict[str, object] = field(default_factory=dict)
    # Credentials and TLS (runtime/security.py); INSECURE only under --insecure-dev.
    security: Security = INSECURE


class RunningServer:
    def __init__(
        self, server: grpc.aio.Server, address: str, health: health_aio.HealthServicer, service: Service
    ) -> None:
        self.server = server
        self.address = address
        self.health = health
        self.service = service

    async def stop(self, grace: float = 5.0) -> None:
        await self.health.enter_graceful_shutdown()
        await self.server.stop(grace)
        if self.service.on_stop is not None:
            await self.service.on_stop()


async def start_server(
    service: Service, host: str, port: int, log: structlog.typing.FilteringBoundLogger
) -> RunningServer:
    security = service.security
    interceptor = CallInterceptor(log, MAX_MESSAGE_BYTES, security.guard)
    server = grpc.aio.server(interceptors=[interceptor], options=SERVER_OPTIONS)
    service.register(server)
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
    return RunningServer(server, f"{host}:{bound}", health, service)


async def serve_forever(
    service: Service, host: str, port: int, grace: float, log: structlog.typing.FilteringBoundLogger
) -> None:
    """Serves until SIGTERM or SIGINT, then drains in-flight calls for up to `grace` seconds."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    running = await start_server(service, host, port, log)
    log.info("serving", service=service.name, address=running.address)
    sys.stdout.write(f"ready {service.name} {running.address}\n")
    sys.stdout.flush()
    await stop.wait()
    log.info("stopping", service=service.name, grace_seconds=grace)
    await running.stop(grace)
    log.info("stopped", service=service.name)
