"""Registry's calls into ModuleStore's internal surface, through the generated stub (see
runtime.dependency: refusals that are the caller's fault travel on unchanged, not reaching ModuleStore is
UNAVAILABLE): BindInstance when an agent opens, EndRun when a run ends."""

from __future__ import annotations

import structlog

from ggmodules.internal.v1 import modulestore_internal_service_pb2 as internal
from ggmodules.internal.v1 import modulestore_internal_service_pb2_grpc as internal_grpc
from ggmodules.modulestore.v1 import modulestore_service_pb2
from ggmodules.runtime.dependency import Dependency
from ggmodules.runtime.security import INSECURE, Security


class ModuleStoreBinder:
    def __init__(
        self, address: str, log: structlog.typing.FilteringBoundLogger, security: Security = INSECURE
    ) -> None:
        self.address = address
        self._modulestore = Dependency(
            "ModuleStore", address, internal_grpc.ModuleStoreInternalServiceStub, log,
            unreachable="nothing was changed. Retry with the same request_id once it is back",
            security=security,
        )

    async def bind(
        self, request: modulestore_service_pb2.BindInstanceRequest
    ) -> modulestore_service_pb2.BindInstanceResponse:
        response: modulestore_service_pb2.BindInstanceResponse = await self._modulestore.call(
            "BindInstance", request
        )
        return response

    async def end_run(self, run_id: str, status: str) -> None:
        """ModuleStore refuses the run's writes from now on (R50); idempotent."""
        await self._modulestore.call("EndRun", internal.EndRunRequest(run_id=run_id, status=status))

    async def close(self) -> None:
        await self._modulestore.close()
