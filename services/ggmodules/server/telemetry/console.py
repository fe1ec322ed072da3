"""The console views over Telemetry's log (R37-R46): the run's events folded (`ggmodules.core.console`) into
the typed views. The model is built from the log alone, so the answer is the same after a restart of
Telemetry; between requests it is kept per run and only the events after its cursor are read and folded."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence

import grpc
import structlog

from ggmodules.common.v1 import event_pb2
from ggmodules.core.console import ConsoleModel, fold
from ggmodules.core.errors import NotFound, Reason
from ggmodules.core.modules.limits import check_name
from ggmodules.core.telemetry.streams import StreamFilter
from ggmodules.storage.telemetry import TelemetryRepository
from ggmodules.storage.telemetry.eventlog import EventLog, SqlEventLog
from ggmodules.telemetry.v1 import telemetry_pb2
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from ggmodules.wire import console as wire

# Loads one run's events after a cursor, oldest first: Telemetry's stored events (cursor kept), or bare
# events in log order (each then gets its position, counting from 1, as its cursor; such a loader returns
# them all every time and the fold skips what it has). An unknown run loads nothing.
EventLoader = Callable[
    [str, int], Awaitable[Sequence[telemetry_pb2.StreamEvent] | Sequence[event_pb2.Event]]
]
PAGE = 1000
# Runs whose folded model is kept between requests; the least recently inspected goes first.
KEPT_RUNS = 64


class Console:
    """The Inspect* RPCs of a run, answered from `load(run_id)`."""

    def __init__(self, load: EventLoader) -> None:
        self._load = load
        self._models: OrderedDict[str, ConsoleModel] = OrderedDict()

    async def model(self, run_id: str) -> ConsoleModel:
        check_name("run_id", run_id)
        kept = self._models.get(run_id)
        events = wire.events_from(await self._load(run_id, kept.cursor if kept else 0))
        if kept is None:
            if not events:
                raise NotFound(
                    f"run {run_id!r} has no telemetry; check the run id (ListRuns) and that Telemetry "
                    "follows the services that host it",
                    reason=Reason.RUN_NOT_FOUND,
                    metadata={"run_id": run_id},
                )
            # Another request may have kept one while this one loaded; folding skips what it has.
            kept = self._models.setdefault(run_id, fold(()))
        kept.apply(events)
        self._models.move_to_end(run_id)
        while len(self._models) > KEPT_RUNS:
            self._models.popitem(last=False)
        return kept

    async def inspect_instances(self, request: pb.InspectInstancesRequest) -> pb.InspectInstancesResponse:
        view = (await self.model(request.run_id)).instances()
        return pb.InspectInstancesResponse(
            instances=[wire.folder_pb(f) for f in view.instances],
            modules_view=view.modules_view,
            cursor=view.cursor,
        )

    async def inspect_modules(self, request: pb.InspectModulesRequest) -> pb.InspectModulesResponse:
        view = (await self.model(request.run_id)).modules()
        return pb.InspectModulesResponse(
            kinds=[wire.overview_pb(o) for o in view.kinds],
            modules_view=view.modules_view,
            cursor=view.cursor,
        )

    async def inspect_agents(self, request: pb.InspectAgentsRequest) -> pb.InspectAgentsResponse:
        view = (await self.model(request.run_id)).agents()
        profiles = [wire.profile_pb(p) for p in view.profiles]
        return pb.InspectAgentsResponse(profiles=profiles, cursor=view.cursor)

    async def get_store_detail(self, request: pb.GetStoreDetailRequest) -> pb.GetStoreDetailResponse:
        check_name("store_id", request.store_id)
        model = await self.model(request.run_id)
        detail = model.store_detail(request.store_id)
        if detail is None:
            raise NotFound(
                f"run {request.run_id!r} reported nothing about store {request.store_id!r}; the Modules view "
                "lists the run's stores",
                reason=Reason.STORE_NOT_FOUND,
                metadata={"run_id": request.run_id, "store_id": request.store_id},
            )
        return pb.GetStoreDetailResponse(detail=wire.detail_pb(detail), cursor=detail.cursor)

    # The servicer's shape (`ConsoleViews` in servicer.py): refusals are raised as DomainErrors and mapped
    # by the interceptor.

    async def InspectInstances(
        self, request: pb.InspectInstancesRequest, ctx: grpc.aio.ServicerContext
    ) -> pb.InspectInstancesResponse:
        return await self.inspect_instances(request)

    async def InspectModules(
        self, request: pb.InspectModulesRequest, ctx: grpc.aio.ServicerContext
    ) -> pb.InspectModulesResponse:
        return await self.inspect_modules(request)

    async def InspectAgents(
        self, request: pb.InspectAgentsRequest, ctx: grpc.aio.ServicerContext
    ) -> pb.InspectAgentsResponse:
        return await self.inspect_agents(request)

    async def GetStoreDetail(
        self, request: pb.GetStoreDetailRequest, ctx: grpc.aio.ServicerContext
    ) -> pb.GetStoreDetailResponse:
        return await self.get_store_detail(request)


def repository_loader(repo: TelemetryRepository) -> EventLoader:
    """A run's whole retained stream, read page by page off Telemetry's SQL log."""
    return event_log_loader(SqlEventLog(repo))


def event_log_loader(event_log: EventLog) -> EventLoader:
    """A run's whole retained stream, read page by page off Telemetry's event log (SQL or JetStream)."""

    async def load(run_id: str, after: int) -> list[telemetry_pb2.StreamEvent]:
        out: list[telemetry_pb2.StreamEvent] = []
        where = StreamFilter(run_id=run_id)
        while True:
            page = await event_log.read(where, after, PAGE)
            out.extend(telemetry_pb2.StreamEvent(cursor=s.cursor, event=s.event) for s in page.events)
            if not page.full or not page.events:
                return out
            after = page.events[-1].cursor

    return load


def build_console(
    repo: TelemetryRepository, log: structlog.typing.FilteringBoundLogger, event_log: EventLog | None = None
) -> Console:
    return Console(event_log_loader(event_log or SqlEventLog(repo)))
