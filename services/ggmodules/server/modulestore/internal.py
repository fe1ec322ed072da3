"""ModuleStoreInternalService: the calls the other services make (ggmodules.internal.v1), on a service
credential only. BindInstance, Handover and ReadOutbox are the ModuleStore servicer's own handlers; EndRun
records a run's end so that its writes are refused (R50)."""

from __future__ import annotations

import grpc

from ggmodules.core.errors import InvalidArgument
from ggmodules.core.modules.limits import check_name
from ggmodules.internal.v1 import modulestore_internal_service_pb2 as pb
from ggmodules.internal.v1 import modulestore_internal_service_pb2_grpc as pb_grpc
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.server.modulestore.servicer import ModuleStoreServicer

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["ModuleStoreInternalService"].full_name
RUN_END_STATUSES = ("finished", "internal_error")


class ModuleStoreInternalServicer(pb_grpc.ModuleStoreInternalServiceServicer):
    def __init__(self, public: ModuleStoreServicer) -> None:
        self._public = public

    async def BindInstance(
        self, request: svc.BindInstanceRequest, context: grpc.aio.ServicerContext
    ) -> svc.BindInstanceResponse:
        return await self._public.BindInstance(request, context)

    async def Handover(
        self, request: svc.HandoverRequest, context: grpc.aio.ServicerContext
    ) -> svc.HandoverResponse:
        return await self._public.Handover(request, context)

    async def ReadOutbox(
        self, request: svc.ReadOutboxRequest, context: grpc.aio.ServicerContext
    ) -> svc.ReadOutboxResponse:
        return await self._public.ReadOutbox(request, context)

    async def EndRun(self, request: pb.EndRunRequest, context: grpc.aio.ServicerContext) -> pb.EndRunResponse:
        check_name("run_id", request.run_id)
        if request.status not in RUN_END_STATUSES:
            raise InvalidArgument(
                f"status must be one of {', '.join(RUN_END_STATUSES)}",
                metadata={"field": "status"},
                violations=[("status", "finished or internal_error")],
            )
        await self._public.end_run(request.run_id, request.status)
        return pb.EndRunResponse()
