"""TelemetryService over gRPC: thin. Streams and turns are served here; the console views (Inspect*,
GetStoreDetail) are delegated to the console model, which folds the same log."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, TypeAlias

import grpc

from ggmodules.server.telemetry.subscriptions import subscribe
from ggmodules.server.telemetry.turns import TurnReports
from ggmodules.storage.telemetry.eventlog import EventLog
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as pb_grpc

Context: TypeAlias = grpc.aio.ServicerContext


class ConsoleViews(Protocol):
    """What the console model provides (server/telemetry/console.py: `build_console(repo, log)`)."""

    async def InspectInstances(
        self, request: pb.InspectInstancesRequest, ctx: Context
    ) -> pb.InspectInstancesResponse: ...
    async def InspectModules(
        self, request: pb.InspectModulesRequest, ctx: Context
    ) -> pb.InspectModulesResponse: ...
    async def InspectAgents(
        self, request: pb.InspectAgentsRequest, ctx: Context
    ) -> pb.InspectAgentsResponse: ...
    async def GetStoreDetail(
        self, request: pb.GetStoreDetailRequest, ctx: Context
    ) -> pb.GetStoreDetailResponse: ...


class TelemetryServicer(pb_grpc.TelemetryServiceServicer):
    def __init__(self, log: EventLog, console: ConsoleViews, turns: TurnReports) -> None:
        self._log = log
        self._console = console
        self._turns = turns

    def Subscribe(  # type: ignore[override]
        self, request: pb.SubscribeRequest, ctx: Context
    ) -> AsyncIterator[bytes]:
        """SubscribeResponse messages, already serialized (subscriptions.py: an event is encoded once for
        all its subscribers); the call interceptor iterates the stream itself and sends bytes as they are,
        so no generator is added here per message."""
        return subscribe(self._log, request)

    async def ReportTurn(self, request: pb.ReportTurnRequest, ctx: Context) -> pb.ReportTurnResponse:
        return await self._turns.report(request)

    async def InspectInstances(
        self, request: pb.InspectInstancesRequest, ctx: Context
    ) -> pb.InspectInstancesResponse:
        return await self._console.InspectInstances(request, ctx)

    async def InspectModules(
        self, request: pb.InspectModulesRequest, ctx: Context
    ) -> pb.InspectModulesResponse:
        return await self._console.InspectModules(request, ctx)

    async def InspectAgents(self, request: pb.InspectAgentsRequest, ctx: Context) -> pb.InspectAgentsResponse:
        return await self._console.InspectAgents(request, ctx)

    async def GetStoreDetail(
        self, request: pb.GetStoreDetailRequest, ctx: Context
    ) -> pb.GetStoreDetailResponse:
        return await self._console.GetStoreDetail(request, ctx)


class NoConsole:
    """Stands in until the console model is built: the views answer UNIMPLEMENTED."""

    async def _missing(self, ctx: Context) -> None:
        await ctx.abort(
            grpc.StatusCode.UNIMPLEMENTED, "the console views are not built into this Telemetry yet"
        )

    async def InspectInstances(
        self, request: pb.InspectInstancesRequest, ctx: Context
    ) -> pb.InspectInstancesResponse:
        await self._missing(ctx)
        raise AssertionError("unreachable")

    async def InspectModules(
        self, request: pb.InspectModulesRequest, ctx: Context
    ) -> pb.InspectModulesResponse:
        await self._missing(ctx)
        raise AssertionError("unreachable")

    async def InspectAgents(self, request: pb.InspectAgentsRequest, ctx: Context) -> pb.InspectAgentsResponse:
        await self._missing(ctx)
        raise AssertionError("unreachable")

    async def GetStoreDetail(
        self, request: pb.GetStoreDetailRequest, ctx: Context
    ) -> pb.GetStoreDetailResponse:
        await self._missing(ctx)
        raise AssertionError("unreachable")
