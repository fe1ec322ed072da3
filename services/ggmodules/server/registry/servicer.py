"""RegistryService over gRPC: thin. Each handler names the caller, calls the operation and returns its answer;
refusals are raised as DomainError and mapped to statuses by the call interceptor.

Credentials (R50) are minted here, on the answers that make an agent or a run, and never recorded: they are
issued as of the agent's or run's creation, so a retry under the same request id (R49) gets the same answer,
credential included (Ed25519 signatures are deterministic).
A run's end reaches ModuleStore (EndRun) before Registry records it, so no write lands after an answer
that says the run ended."""

from __future__ import annotations

import asyncio
from typing import TypeAlias, TypeVar

import grpc

from ggmodules.core.vocabulary import RunStatus
from ggmodules.internal.v1 import registry_internal_service_pb2 as internal_pb
from ggmodules.internal.v1 import registry_internal_service_pb2_grpc as internal_grpc
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1 import registry_service_pb2_grpc
from ggmodules.runtime.credentials import Signer
from ggmodules.runtime.inline import Runner
from ggmodules.server.registry.binder import ModuleStoreBinder
from ggmodules.server.registry.identity import caller_of
from ggmodules.server.registry.instances import Instances
from ggmodules.server.registry.planning import SuccessorPlanner
from ggmodules.server.registry.runs import Runs
from ggmodules.server.registry.successors import Successors

Context: TypeAlias = grpc.aio.ServicerContext
Opened = TypeVar("Opened", pb.OpenInstanceResponse, pb.SpawnSubagentResponse, pb.ForkInstanceResponse)


class RegistryServicer(registry_service_pb2_grpc.RegistryServiceServicer):
    def __init__(
        self, runs: Runs, instances: Instances, binder: ModuleStoreBinder, signer: Signer | None = None
    ) -> None:
        self._runs = runs
        self._instances = instances
        self._binder = binder
        self._signer = signer

    async def CreateRun(self, request: pb.CreateRunRequest, ctx: Context) -> pb.CreateRunResponse:
        response = await asyncio.to_thread(self._runs.create, request, caller_of(ctx))
        if self._signer is not None:
            run, issued = response.run.run_id, response.run.create_time.seconds
            response.operator_credential = self._signer.operator(run, issued_at=issued)
            response.observer_credential = self._signer.observer(run, issued_at=issued)
        return response

    async def GetRun(self, request: pb.GetRunRequest, ctx: Context) -> pb.GetRunResponse:
        return await asyncio.to_thread(self._runs.get, request, caller_of(ctx))

    async def ListRuns(self, request: pb.ListRunsRequest, ctx: Context) -> pb.ListRunsResponse:
        return await asyncio.to_thread(self._runs.list, request, caller_of(ctx))

    async def FinishRun(self, request: pb.FinishRunRequest, ctx: Context) -> pb.FinishRunResponse:
        caller = caller_of(ctx)
        await end_in_modulestore(self._runs, self._binder, request.run_id, RunStatus.FINISHED)
        return await asyncio.to_thread(self._runs.finish, request, caller)

    async def OpenInstance(self, request: pb.OpenInstanceRequest, ctx: Context) -> pb.OpenInstanceResponse:
        return self._credited(await self._instances.open(request, caller_of(ctx)))

    async def SpawnSubagent(self, request: pb.SpawnSubagentRequest, ctx: Context) -> pb.SpawnSubagentResponse:
        return self._credited(await self._instances.spawn(request, caller_of(ctx)))

    async def ForkInstance(self, request: pb.ForkInstanceRequest, ctx: Context) -> pb.ForkInstanceResponse:
        return self._credited(await self._instances.fork(request, caller_of(ctx)))

    async def GetInstance(self, request: pb.GetInstanceRequest, ctx: Context) -> pb.GetInstanceResponse:
        return await asyncio.to_thread(self._instances.get, request, caller_of(ctx))

    async def ListInstances(self, request: pb.ListInstancesRequest, ctx: Context) -> pb.ListInstancesResponse:
        return await asyncio.to_thread(self._instances.list, request, caller_of(ctx))

    def _credited(self, response: Opened) -> Opened:
        return _with_credential(self._signer, response)


class RegistryInternalServicer(internal_grpc.RegistryInternalServiceServicer):
    """ggmodules.internal.v1.RegistryInternalService: Transfer's calls, on a service credential only."""

    def __init__(
        self, runs: Runs, successors: Successors, binder: ModuleStoreBinder, signer: Signer | None = None,
        run: Runner = asyncio.to_thread,
    ) -> None:
        self._runs = runs
        self._successors = successors
        self._planner = SuccessorPlanner(successors.repo)
        self._binder = binder
        self._signer = signer
        # How a transfer's own steps meet the database: inline on SQLite (short local transactions, no
        # thread hand-off), in a worker thread on PostgreSQL.
        self._run = run

    async def PlanSuccessor(
        self, request: internal_pb.PlanSuccessorRequest, ctx: Context
    ) -> internal_pb.PlanSuccessorResponse:
        return await self._run(self._planner.plan, request, caller_of(ctx))

    async def ReserveSuccessor(
        self, request: pb.ReserveSuccessorRequest, ctx: Context
    ) -> pb.ReserveSuccessorResponse:
        return await asyncio.to_thread(self._successors.reserve, request, caller_of(ctx))

    async def CompleteSuccessor(
        self, request: pb.CompleteSuccessorRequest, ctx: Context
    ) -> pb.CompleteSuccessorResponse:
        response = await self._run(self._successors.complete, request, caller_of(ctx))
        return _with_credential(self._signer, response)

    async def ReleaseSuccessor(
        self, request: pb.ReleaseSuccessorRequest, ctx: Context
    ) -> pb.ReleaseSuccessorResponse:
        return await asyncio.to_thread(self._successors.release, request, caller_of(ctx))

    async def FailRun(self, request: pb.FailRunRequest, ctx: Context) -> pb.FailRunResponse:
        caller = caller_of(ctx)
        await end_in_modulestore(self._runs, self._binder, request.run_id, RunStatus.INTERNAL_ERROR)
        return await asyncio.to_thread(self._runs.fail, request, caller)


Credited = TypeVar("Credited", pb.OpenInstanceResponse, pb.SpawnSubagentResponse, pb.ForkInstanceResponse,
                   pb.CompleteSuccessorResponse)


def _with_credential(signer: Signer | None, response: Credited) -> Credited:
    if signer is not None:
        instance = response.instance
        response.credential = signer.agent(instance.run_id, instance.agent_id, instance.create_time.seconds)
    return response


async def end_in_modulestore(runs: Runs, binder: ModuleStoreBinder, run_id: str, status: RunStatus) -> None:
    """Tells ModuleStore a run is ending, for a run that exists (an unknown run is refused by the operation
    itself, NOT_FOUND). Ending twice is harmless: ModuleStore keeps the first end, and Registry answers a
    retry with its recorded answer or RUN_NOT_RUNNING."""
    if not run_id:
        return
    found: bool = await asyncio.to_thread(runs.exists, run_id)
    if found:
        await binder.end_run(run_id, status.word)
