"""Builds the Telemetry service: its database, its event log (the SQL table, or JetStream when
`--event-log nats://...`), one follower per origin, and the servicer.

The event log connects and the followers start with the server (inside its event loop); they stop with it.
The console views come from `ggmodules.server.telemetry.console.build_console(repo, log, event_log)`.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
from collections.abc import Iterator

import grpc
import structlog
from prometheus_client.core import GaugeMetricFamily

from ggmodules.core.telemetry.streams import Retention
from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.database import open_engine
from ggmodules.runtime.health import database_probe
from ggmodules.runtime.housekeeping import Housekeeper, PruneSettings
from ggmodules.runtime.outbox_service import engine_writing
from ggmodules.runtime.security import security_from
from ggmodules.runtime.server import Service
from ggmodules.server.telemetry.ingestion import Follower
from ggmodules.server.telemetry.servicer import ConsoleViews, NoConsole, TelemetryServicer
from ggmodules.server.telemetry.settings import recent_bytes_from, retention_from
from ggmodules.server.telemetry.turns import TurnReports
from ggmodules.storage.telemetry import TelemetryRepository
from ggmodules.storage.telemetry.event_logs import open_event_log
from ggmodules.storage.telemetry.eventlog import EventLog
from ggmodules.storage.telemetry.tables import TelOutboxRow, TelRequestRow
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
    engine = open_engine(config, log)
    kept = retention or retention_from()
    repo = TelemetryRepository(engine, kept, recent_bytes or recent_bytes_from())
    security = security_from(config, log)
    event_log = open_event_log(config.event_log, repo, kept)
    turns = TurnReports(repo, config.registry_address, log, event_log, security)
    servicer = TelemetryServicer(event_log, _console(repo, log, event_log), turns)
    followers = [
        Follower("modulestore", config.modulestore_address, event_log, log, security),
        Follower("registry", config.registry_address, event_log, log, security),
    ]
    log.info(
        "telemetry storage ready",
        backend=engine.dialect.name,
        event_log=event_log.kind,
        retention=repo.retention.events,
    )
    housekeeper = Housekeeper(
        PruneSettings.from_env(),
        engine_writing(engine),
        asyncio.to_thread,
        log,
        requests=TelRequestRow.__table__,  # type: ignore[attr-defined]
        steps=[repo.prune_own_outbox],
        vacuum=(engine, (TelRequestRow.__tablename__, TelOutboxRow.__tablename__)),
    )

    def register(server: grpc.aio.Server) -> None:
        pb_grpc.add_TelemetryServiceServicer_to_server(servicer, server)

    async def on_start() -> None:
        await event_log.start()
        for follower in followers:
            follower.start()
        housekeeper.start()

    async def on_stop() -> None:
        await housekeeper.stop()
        for follower in followers:
            await follower.stop()
        await turns.close()
        await event_log.close()
        repo.close()

    return Service(
        name="telemetry",
        register=register,
        service_names=[SERVICE_NAME],
        on_start=on_start,
        on_stop=on_stop,
        probe=database_probe(engine),
        reachable=event_log.reachable,
        extra={
            "repository": repo,
            "event_log": event_log,
            "collectors": [OutboxLag(followers)],
            "housekeeper": housekeeper,
        },
        security=security,
    )


class OutboxLag:
    """`ggmodules_outbox_lag_events{origin}`: events an origin's outbox holds that Telemetry has not stored
    yet (its newest origin_seq last heard of, less the highest stored), read when /metrics is scraped."""

    def __init__(self, followers: list[Follower]) -> None:
        self._followers = followers

    def collect(self) -> Iterator[GaugeMetricFamily]:
        lag = GaugeMetricFamily(
            "ggmodules_outbox_lag_events", "Events in an origin's outbox not yet stored by Telemetry",
            labels=["origin"],
        )
        for f in self._followers:
            lag.add_metric([f.origin], max(0, f.head_origin_seq - f.stored_origin_seq))
        yield lag


def _console(
    repo: TelemetryRepository, log: structlog.typing.FilteringBoundLogger, event_log: EventLog
) -> ConsoleViews:
    if importlib.util.find_spec(CONSOLE_MODULE) is None:
        return NoConsole()
    console: ConsoleViews = importlib.import_module(CONSOLE_MODULE).build_console(repo, log, event_log)
    return console
