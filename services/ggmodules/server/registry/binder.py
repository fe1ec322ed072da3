"""Registry's one call into ModuleStore: BindInstance, through the generated stub (see runtime.dependency:
refusals that are the caller's fault travel on unchanged, not reaching ModuleStore is UNAVAILABLE)."""

from __future__ import annotations

import structlog

from ggmodules.modulestore.v1 import modulestore_service_pb2, modulestore_service_pb2_grpc
from ggmodules.runtime.dependency import Dependency


class ModuleStoreBinder:
    def __init__(self, address: str, log: structlog.typing.FilteringBoundLogger) -> None:
        self.address = address
        self._modulestore = Dependency(
            "ModuleStore", address, modulestore_service_pb2_grpc.ModuleStoreServiceStub, log,
            unreachable="nothing was opened. Retry with the same request_id once it is back",
        )

    async def bind(
        self, request: modulestore_service_pb2.BindInstanceRequest
    ) -> modulestore_service_pb2.BindInstanceResponse:
        response: modulestore_service_pb2.BindInstanceResponse = await self._modulestore.call(
            "BindInstance", request
        )
        return response

    async def close(self) -> None:
        await self._modulestore.close()
