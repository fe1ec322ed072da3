"""Builds the Registry service: its database (tables created on start) and its channel to ModuleStore."""

from __future__ import annotations

import asyncio

import grpc
import structlog

from ggmodules.internal.v1 import registry_internal_service_pb2, registry_internal_service_pb2_grpc
from ggmodules.registry.v1 import registry_service_pb2, registry_service_pb2_grpc
from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.database import open_engine
from ggmodules.runtime.health import database_probe
from ggmodules.runtime.housekeeping import Housekeeper, PruneSettings
from ggmodules.runtime.inline import runner_for
from ggmodules.runtime.outbox_service import SERVICE_NAME as OUTBOX_SERVICE
from ggmodules.runtime.outbox_service import OutboxServicer, engine_reading, engine_writing
from ggmodules.runtime.security import security_from
from ggmodules.runtime.server import Service
from ggmodules.server.registry.binder import ModuleStoreBinder
from ggmodules.server.registry.instances import Instances
from ggmodules.server.registry.runs import Runs
from ggmodules.server.registry.servicer import RegistryInternalServicer, RegistryServicer
from ggmodules.server.registry.successors import Successors
from ggmodules.storage.commits import listen_for_commits
from ggmodules.storage.outbox_pruning import OutboxPositions
from ggmodules.storage.registry import RegistryRepository
from ggmodules.storage.registry.tables import RegInstanceRow, RegOutboxPositionRow, RegRequestRow


def build_service(config: ServiceConfig, log: structlog.typing.FilteringBoundLogger) -> Service:
    security = security_from(config, log)
    engine = open_engine(config, log)
    repo = RegistryRepository(engine)
    repo.create_tables()
    binder = ModuleStoreBinder(config.modulestore_address, log, security)
    positions = OutboxPositions(repo.outbox, RegOutboxPositionRow)
    writing = engine_writing(engine)
    outbox = OutboxServicer(
        repo.outbox, engine_reading(engine), repo.committed, asyncio.to_thread, positions, writing
    )
    housekeeper = Housekeeper(
        PruneSettings.from_env(), writing, asyncio.to_thread, log,
        positions=positions, requests=RegRequestRow.__table__,  # type: ignore[attr-defined]
        vacuum=(engine, (repo.outbox.table_name, RegRequestRow.__tablename__, RegInstanceRow.__tablename__)),
    )  # fmt: skip
    runs = Runs(repo)
    servicer = RegistryServicer(runs, Instances(repo, binder), binder, security.signer)
    internal = RegistryInternalServicer(runs, Successors(repo), binder, security.signer, runner_for(engine))
    # Commits of other Registry replicas on the same PostgreSQL database wake WatchOutbox at once.
    listener = listen_for_commits(engine, repo.outbox.table_name, repo.committed.notify)

    def register(server: grpc.aio.Server) -> None:
        registry_service_pb2_grpc.add_RegistryServiceServicer_to_server(servicer, server)
        registry_internal_service_pb2_grpc.add_RegistryInternalServiceServicer_to_server(internal, server)
        outbox.register(server)
        housekeeper.start()

    async def on_stop() -> None:
        await housekeeper.stop()
        if listener is not None:
            listener.stop()
        await binder.close()
        repo.close()
        engine.dispose()

    return Service(
        name="registry",
        register=register,
        service_names=[
            registry_service_pb2.DESCRIPTOR.services_by_name["RegistryService"].full_name,
            registry_internal_service_pb2.DESCRIPTOR.services_by_name["RegistryInternalService"].full_name,
            OUTBOX_SERVICE,
        ],
        on_stop=on_stop,
        probe=database_probe(engine),
        extra={"housekeeper": housekeeper, "commit_listener": listener},
        security=security,
    )
