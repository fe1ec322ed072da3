"""Transfer's calls into Registry and ModuleStore, through their generated stubs (runtime.dependency).

Not reaching a service is UNAVAILABLE: the transfer stays journaled at its step and is resumed.
"""

from __future__ import annotations

import structlog

from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.registry.v1 import registry_service_pb2_grpc
from ggmodules.runtime.dependency import Dependency

Log = structlog.typing.FilteringBoundLogger
_UNREACHABLE = (
    "the transfer is journaled and resumes once it is back. "
    "Retry with the same request_id for the final answer"
)


class Calls:
    """The calls a transfer makes, each with a request id derived from the transfer (so each applies once)."""

    def __init__(self, registry_address: str, modulestore_address: str, log: Log) -> None:
        self.registry = Dependency(
            "Registry", registry_address, registry_service_pb2_grpc.RegistryServiceStub, log, _UNREACHABLE
        )
        self.modulestore = Dependency(
            "ModuleStore", modulestore_address, modulestore_service_pb2_grpc.ModuleStoreServiceStub, log,
            _UNREACHABLE,
        )

    async def get_run(self, run_id: str) -> reg.GetRunResponse:
        answer: reg.GetRunResponse = await self.registry.call("GetRun", reg.GetRunRequest(run_id=run_id))
        return answer

    async def get_instance(self, run_id: str, agent_id: str) -> reg.GetInstanceResponse:
        request = reg.GetInstanceRequest(run_id=run_id, agent_id=agent_id)
        answer: reg.GetInstanceResponse = await self.registry.call("GetInstance", request)
        return answer

    async def reserve(self, request: reg.ReserveSuccessorRequest) -> reg.ReserveSuccessorResponse:
        answer: reg.ReserveSuccessorResponse = await self.registry.call("ReserveSuccessor", request)
        return answer

    async def complete(self, request: reg.CompleteSuccessorRequest) -> reg.CompleteSuccessorResponse:
        answer: reg.CompleteSuccessorResponse = await self.registry.call("CompleteSuccessor", request)
        return answer

    async def release(self, request: reg.ReleaseSuccessorRequest) -> None:
        await self.registry.call("ReleaseSuccessor", request)

    async def fail_run(self, request: reg.FailRunRequest) -> None:
        await self.registry.call("FailRun", request)

    async def handover(self, request: ms.HandoverRequest) -> ms.HandoverResponse:
        answer: ms.HandoverResponse = await self.modulestore.call("Handover", request)
        return answer

    async def close(self) -> None:
        await self.registry.close()
        await self.modulestore.close()

