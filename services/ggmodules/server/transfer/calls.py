"""Transfer's calls into Registry and ModuleStore, through their generated stubs (runtime.dependency).

Not reaching a service is UNAVAILABLE: the transfer stays journaled at its step and is resumed.
"""

from __future__ import annotations

import structlog

from ggmodules.internal.v1 import modulestore_internal_service_pb2_grpc as ms_internal
from ggmodules.internal.v1 import registry_internal_service_pb2 as internal
from ggmodules.internal.v1 import registry_internal_service_pb2_grpc as reg_internal
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.runtime.dependency import Dependency
from ggmodules.runtime.security import INSECURE, Security

Log = structlog.typing.FilteringBoundLogger
_UNREACHABLE = (
    "the transfer is journaled and resumes once it is back. "
    "Retry with the same request_id for the final answer"
)


class Calls:
    """The calls a transfer makes, each with a request id derived from the transfer (so each applies once)."""

    def __init__(
        self, registry_address: str, modulestore_address: str, log: Log, security: Security = INSECURE
    ) -> None:
        # Registry's internal surface (plans, successors, FailRun), as this service.
        self.registry_internal = Dependency(
            "Registry", registry_address, reg_internal.RegistryInternalServiceStub, log, _UNREACHABLE,
            security=security,
        )
        self.modulestore = Dependency(
            "ModuleStore", modulestore_address, ms_internal.ModuleStoreInternalServiceStub, log,
            _UNREACHABLE, security=security,
        )

    async def plan(self, request: internal.PlanSuccessorRequest) -> internal.PlanSuccessorResponse:
        answer: internal.PlanSuccessorResponse = await self.registry_internal.call("PlanSuccessor", request)
        return answer

    async def reserve(self, request: reg.ReserveSuccessorRequest) -> reg.ReserveSuccessorResponse:
        answer: reg.ReserveSuccessorResponse = await self.registry_internal.call("ReserveSuccessor", request)
        return answer

    async def complete(self, request: reg.CompleteSuccessorRequest) -> reg.CompleteSuccessorResponse:
        call = self.registry_internal.call("CompleteSuccessor", request)
        answer: reg.CompleteSuccessorResponse = await call
        return answer

    async def release(self, request: reg.ReleaseSuccessorRequest) -> None:
        await self.registry_internal.call("ReleaseSuccessor", request)

    async def fail_run(self, request: reg.FailRunRequest) -> None:
        await self.registry_internal.call("FailRun", request)

    async def handover(self, request: ms.HandoverRequest) -> ms.HandoverResponse:
        answer: ms.HandoverResponse = await self.modulestore.call("Handover", request)
        return answer

    async def close(self) -> None:
        await self.registry_internal.close()
        await self.modulestore.close()

