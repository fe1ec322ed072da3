"""Builds the Telemetry service: its log database, one follower per origin, and the servicer.

Followers start with the server (inside its event loop) and stop with it. The console views come from
`ggmodules.server.telemetry.console.build_console(repo, log)` once that module exists.
"""

from __future__ import annotations

import importlib
import importlib.util

import grpc
import structlog

from ggmodules.core.telemetry.streams import Retention
from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.security import security_from
from ggmodules.runtime.server import Service
from ggmodules.server.telemetry.ingestion import Follower
from ggmodules.server.telemetry.servicer import ConsoleViews, NoConsole, TelemetryServicer
from ggmodules.server.telemetry.settings import recent_bytes_from, retention_from
from ggmodules.server.telemetry.turns import TurnReports
from ggmodules.storage.engine import make_engine
from ggmodules.storage.telemetry import TelemetryRepository
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as pb_grpc

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["TelemetryService"].full_name
CONSOLE_MODULE = "ggmodules.server.telemetry.console"


def build_service(
    config: ServiceConfig,
    log: structlog.typing.FilteringBoundLogger,
    *,
    retention: Retention | None = None,
    recent_bytes: int | None = None,
) -> Service:
    engine = make_engine(config.database_url)
    repo = TelemetryRepository(engine, retention or retention_from(), recent_bytes or recent_bytes_from())
    security = security_from(config, log)
    turns = TurnReports(repo, config.registry_address, log, security)
    servicer = TelemetryServicer(repo, _console(repo, log), turns)
    followers = [
        Follower("modulestore", config.modulestore_address, repo, log, security),
        Follower("registry", config.registry_address, repo, log, security),
    ]
    log.info("telemetry storage ready", backend=engine.dialect.name, retention=repo.retention.events)

    def register(server: grpc.aio.Server) -> None:
        pb_grpc.add_TelemetryServiceServicer_to_server(servicer, server)
        for follower in followers:  # register runs inside the server's event loop
            follower.start()

    async def on_stop() -> None:
        for follower in followers:
            await follower.stop()
        await turns.close()
        repo.close()

    return Service(
        name="telemetry",
        register=register,
        service_names=[SERVICE_NAME],
        on_stop=on_stop,
        extra={"repository": repo},
        security=security,
    )


def _console(repo: TelemetryRepository, log: structlog.typing.FilteringBoundLogger) -> ConsoleViews:
    if importlib.util.find_spec(CONSOLE_MODULE) is None:
        return NoConsole()
    console: ConsoleViews = importlib.import_module(CONSOLE_MODULE).build_console(repo, log)
    return console
