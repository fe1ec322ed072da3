"""Builds the Registry service: its database (tables created on start) and its channel to ModuleStore."""

from __future__ import annotations

import asyncio

import grpc
import structlog

from ggmodules.internal.v1 import registry_internal_service_pb2, registry_internal_service_pb2_grpc
from ggmodules.registry.v1 import registry_service_pb2, registry_service_pb2_grpc
from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.outbox_service import SERVICE_NAME as OUTBOX_SERVICE
from ggmodules.runtime.outbox_service import OutboxServicer, engine_reading
from ggmodules.runtime.security import security_from
from ggmodules.runtime.server import Service
from ggmodules.server.registry.binder import ModuleStoreBinder
from ggmodules.server.registry.instances import Instances
from ggmodules.server.registry.runs import Runs
from ggmodules.server.registry.servicer import RegistryInternalServicer, RegistryServicer
from ggmodules.server.registry.successors import Successors
from ggmodules.storage.engine import make_engine
from ggmodules.storage.registry import RegistryRepository


def build_service(config: ServiceConfig, log: structlog.typing.FilteringBoundLogger) -> Service:
    security = security_from(config, log)
    engine = make_engine(config.database_url)
    repo = RegistryRepository(engine)
    repo.create_tables()
    binder = ModuleStoreBinder(config.modulestore_address, log, security)
    outbox = OutboxServicer(repo.outbox, engine_reading(engine), repo.committed, asyncio.to_thread)
    runs = Runs(repo)
    servicer = RegistryServicer(runs, Instances(repo, binder), binder, security.signer)
    internal = RegistryInternalServicer(runs, Successors(repo), binder, security.signer)

    def register(server: grpc.aio.Server) -> None:
        registry_service_pb2_grpc.add_RegistryServiceServicer_to_server(servicer, server)
        registry_internal_service_pb2_grpc.add_RegistryInternalServiceServicer_to_server(internal, server)
        outbox.register(server)

    async def on_stop() -> None:
        await binder.close()
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
        security=security,
    )
