"""Builds the Registry service: its database (tables created on start) and its channel to ModuleStore."""

from __future__ import annotations

import asyncio

import grpc
import structlog

from ggmodules.registry.v1 import registry_service_pb2, registry_service_pb2_grpc
from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.database import open_engine
from ggmodules.runtime.health import database_probe
from ggmodules.runtime.outbox_service import SERVICE_NAME as OUTBOX_SERVICE
from ggmodules.runtime.outbox_service import OutboxServicer, engine_reading
from ggmodules.runtime.server import Service
from ggmodules.server.registry.binder import ModuleStoreBinder
from ggmodules.server.registry.instances import Instances
from ggmodules.server.registry.runs import Runs
from ggmodules.server.registry.servicer import RegistryServicer
from ggmodules.server.registry.successors import Successors
from ggmodules.storage.registry import RegistryRepository


def build_service(config: ServiceConfig, log: structlog.typing.FilteringBoundLogger) -> Service:
    engine = open_engine(config, log)
    repo = RegistryRepository(engine)
    repo.create_tables()
    binder = ModuleStoreBinder(config.modulestore_address, log)
    outbox = OutboxServicer(repo.outbox, engine_reading(engine), repo.committed, asyncio.to_thread)
    servicer = RegistryServicer(Runs(repo), Instances(repo, binder), Successors(repo))

    def register(server: grpc.aio.Server) -> None:
        registry_service_pb2_grpc.add_RegistryServiceServicer_to_server(servicer, server)
        outbox.register(server)

    async def on_stop() -> None:
        await binder.close()
        engine.dispose()

    return Service(
        name="registry",
        register=register,
        service_names=[registry_service_pb2.DESCRIPTOR.services_by_name["RegistryService"].full_name,
                       OUTBOX_SERVICE],
        on_stop=on_stop,
        probe=database_probe(engine),
    )
