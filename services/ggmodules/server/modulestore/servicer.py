"""ModuleStoreService handlers: validate, run a use case (ggmodules.usecases.modulestore) in one
transaction (`repo.mutate`) or read through the repository, convert. Refusals are raised as DomainError;
the call interceptor maps them to statuses."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

from ggmodules.core.modules import handover, pages
from ggmodules.core.modules.archive_search import SearchMode, plan_search
from ggmodules.core.modules.archive_semantic import Embedder
from ggmodules.core.modules.binding import check_plan
from ggmodules.core.modules.limits import check_name
from ggmodules.core.modules.tools.catalog import tools_for
from ggmodules.core.modules.tools.dispatch import plan_call
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc as svc_grpc
from ggmodules.server.modulestore import semantic, session
from ggmodules.storage.idempotency import RequestKey
from ggmodules.storage.modulestore.repository import ModuleStoreRepository
from ggmodules.storage.modulestore.unit import ModuleStoreUnit
from ggmodules.usecases.modulestore.bind import bind
from ggmodules.usecases.modulestore.handover import handover as hand_over
from ggmodules.usecases.modulestore.port import BindUnit, HandoverUnit, ToolCallUnit, WriteUnit
from ggmodules.usecases.modulestore.tool_call import call_tool
from ggmodules.usecases.modulestore.write import run_has_ended, write
from ggmodules.wire import modulestore as convert

T = TypeVar("T")


def _conforms(unit: ModuleStoreUnit) -> tuple[WriteUnit, ToolCallUnit, BindUnit, HandoverUnit]:
    """For mypy: storage's unit of work implements every use case's port."""
    return unit, unit, unit, unit


# How blocking database work is run: inline on the loop, or on a worker thread (see app.py).
Runner = Callable[..., Awaitable[Any]]


def _require(**fields: str) -> None:
    """Ids the call needs: present and well-formed."""
    for name, value in fields.items():
        check_name(name, value)


class ModuleStoreServicer(svc_grpc.ModuleStoreServiceServicer):
    """The public handlers, and BindInstance, Handover and ReadOutbox, served through the internal service
    (server/modulestore/internal.py)."""

    def __init__(self, repo: ModuleStoreRepository, run: Runner, embedder: Embedder | None = None) -> None:
        self._repo = repo
        self._run = run
        self._embedder = embedder
        self._limits = repo.limits
        # Runs Registry has ended (EndRun): their writes are refused whatever credential they carry (R50).
        self._ended: dict[str, str] = repo.ended_runs()

    async def end_run(self, run_id: str, status: str) -> None:
        await self._run(self._repo.end_run, run_id, status)
        self._ended.setdefault(run_id, status)

    def _require_open(self, run_id: str) -> None:
        status = self._ended.get(run_id)  # known here; another replica's EndRun is read by the write
        if status is not None:
            raise run_has_ended(run_id, status)

    async def BindInstance(
        self, request: svc.BindInstanceRequest, context: grpc.aio.ServicerContext
    ) -> svc.BindInstanceResponse:
        plan = convert.plan_from(request)
        check_plan(plan)
        key = RequestKey.of("BindInstance", request)
        result: svc.BindInstanceResponse = await self._run(
            self._repo.mutate,
            key,
            lambda unit: convert.bind_response(bind(unit, plan)),
            svc.BindInstanceResponse,
        )
        return result

    async def Handover(
        self, request: svc.HandoverRequest, context: grpc.aio.ServicerContext
    ) -> svc.HandoverResponse:
        plan = convert.handover_from(request)
        handover.check_plan(plan)
        key = RequestKey.of("Handover", request)
        result: svc.HandoverResponse = await self._run(
            self._repo.mutate,
            key,
            lambda unit: convert.handover_response(*hand_over(unit, plan)),
            svc.HandoverResponse,
        )
        return result

    async def Write(self, request: svc.WriteRequest, context: grpc.aio.ServicerContext) -> svc.WriteResponse:
        return await self.write(request)

    def Session(
        self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[svc.SessionResponse]:
        # The answers' generator itself, not one more generator around it: the call interceptor (always
        # installed, runtime/server.py) iterates it.
        return session.answers(requests, self.write, self._repo.batched.ahead)

    async def write(self, request: svc.WriteRequest) -> svc.WriteResponse:
        """A write, from the unary Write or each of a Session's: checked, then the write use case
        (usecases/modulestore/write.py) with its request id, in a transaction it may share with concurrent
        writes (storage/modulestore/group_commit.py)."""
        _require(run_id=request.run_id, agent_id=request.agent_id, store_id=request.store_id)
        self._require_open(request.run_id)
        op = convert.op_from(request)
        key = RequestKey.of("Write", request)
        run_id, agent_id, store_id, limits = request.run_id, request.agent_id, request.store_id, self._limits
        return await self._repo.batched.mutate(
            key,
            lambda unit: convert.write_response(write(unit, run_id, agent_id, store_id, op, limits)),
            svc.WriteResponse,
            order=(run_id, store_id, agent_id),
        )

    async def GetStore(
        self, request: svc.GetStoreRequest, context: grpc.aio.ServicerContext
    ) -> svc.GetStoreResponse:
        _require(run_id=request.run_id, store_id=request.store_id)
        check_name("agent_id", request.agent_id, required=False)
        view = await self._run(
            self._repo.get_store,
            request.run_id,
            request.store_id,
            request.agent_id,
            pages.after("after_seq", request.after_seq),
            pages.STORE_CONTENTS.size(request.page_size),
        )
        return convert.store_response(view)

    async def ListStores(
        self, request: svc.ListStoresRequest, context: grpc.aio.ServicerContext
    ) -> svc.ListStoresResponse:
        _require(run_id=request.run_id)
        kind = convert.optional_kind(request.kind)
        size = pages.STORES.size(request.page_size)
        run_id, token = request.run_id, request.page_token
        stores, token = await self._run(self._repo.list_stores, run_id, kind, size, token)
        return svc.ListStoresResponse(stores=[convert.store_pb(s) for s in stores], next_page_token=token)

    async def RenderPrompt(
        self, request: svc.RenderPromptRequest, context: grpc.aio.ServicerContext
    ) -> svc.RenderPromptResponse:
        _require(run_id=request.run_id, agent_id=request.agent_id)
        contributions = await self._run(self._repo.render_prompt, request.run_id, request.agent_id)
        return svc.RenderPromptResponse(contributions=[convert.contribution_pb(x) for x in contributions])

    async def ListTools(
        self, request: svc.ListToolsRequest, context: grpc.aio.ServicerContext
    ) -> svc.ListToolsResponse:
        return svc.ListToolsResponse(
            tools=[convert.tool_pb(t) for t in tools_for(convert.optional_kind(request.kind))]
        )

    async def CallTool(
        self, request: svc.CallToolRequest, context: grpc.aio.ServicerContext
    ) -> svc.CallToolResponse:
        _require(run_id=request.run_id, agent_id=request.agent_id, tool_name=request.tool_name)
        self._require_open(request.run_id)
        call = plan_call(request.tool_name, request.arguments_json)
        key = RequestKey.of("CallTool", request)
        run_id, agent_id, limits = request.run_id, request.agent_id, self._limits
        return await self._repo.batched.mutate(
            key,
            lambda unit: convert.tool_response(call_tool(unit, run_id, agent_id, call, limits)),
            svc.CallToolResponse,
        )

    async def SearchArchive(
        self, request: svc.SearchArchiveRequest, context: grpc.aio.ServicerContext
    ) -> svc.SearchArchiveResponse:
        _require(run_id=request.run_id, agent_id=request.agent_id, store_id=request.store_id)
        # Without an embedding provider every mode is answered by TEXT, and the response says so.
        requested = convert.search_mode(request.mode)
        mode = requested if self._embedder else SearchMode.TEXT
        search = plan_search(request.store_id, request.query, request.page_size, request.page_token, mode)
        if mode != SearchMode.TEXT and self._embedder is not None:
            ids = (request.run_id, request.agent_id, request.store_id)
            page = await semantic.search(self._repo, self._run, self._embedder, *ids, search)
        else:
            page = await self._run(
                self._repo.search_archive, request.run_id, request.agent_id, request.store_id, search
            )
        return convert.search_response(page)

    async def ReadOutbox(
        self, request: svc.ReadOutboxRequest, context: grpc.aio.ServicerContext
    ) -> svc.ReadOutboxResponse:
        check_name("run_id", request.run_id, required=False)
        limit = pages.OUTBOX.size(request.page_size)
        after = pages.after("after_origin_seq", request.after_origin_seq)
        page = await self._run(self._repo.read_outbox, after, limit, request.run_id)
        return svc.ReadOutboxResponse(events=page.events, head_origin_seq=page.head)
