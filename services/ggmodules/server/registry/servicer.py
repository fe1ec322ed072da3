"""RegistryService over gRPC: thin. Each handler names the caller, calls the operation and returns its answer;
refusals are raised as DomainError and mapped to statuses by the call interceptor."""

from __future__ import annotations

import asyncio
from typing import TypeAlias

import grpc

from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.registry.v1 import registry_service_pb2_grpc
from ggmodules.server.registry.identity import caller_of
from ggmodules.server.registry.instances import Instances
from ggmodules.server.registry.runs import Runs
from ggmodules.server.registry.successors import Successors

Context: TypeAlias = grpc.aio.ServicerContext


class RegistryServicer(registry_service_pb2_grpc.RegistryServiceServicer):
    def __init__(self, runs: Runs, instances: Instances, successors: Successors) -> None:
        self._runs = runs
        self._instances = instances
        self._successors = successors

    async def CreateRun(self, request: pb.CreateRunRequest, ctx: Context) -> pb.CreateRunResponse:
        return await asyncio.to_thread(self._runs.create, request, caller_of(ctx))

    async def GetRun(self, request: pb.GetRunRequest, ctx: Context) -> pb.GetRunResponse:
        return await asyncio.to_thread(self._runs.get, request, caller_of(ctx))

    async def ListRuns(self, request: pb.ListRunsRequest, ctx: Context) -> pb.ListRunsResponse:
        return await asyncio.to_thread(self._runs.list, request, caller_of(ctx))

    async def FinishRun(self, request: pb.FinishRunRequest, ctx: Context) -> pb.FinishRunResponse:
        return await asyncio.to_thread(self._runs.finish, request, caller_of(ctx))

    async def OpenInstance(self, request: pb.OpenInstanceRequest, ctx: Context) -> pb.OpenInstanceResponse:
        return await self._instances.open(request, caller_of(ctx))

    async def SpawnSubagent(self, request: pb.SpawnSubagentRequest, ctx: Context) -> pb.SpawnSubagentResponse:
        return await self._instances.spawn(request, caller_of(ctx))

    async def ForkInstance(self, request: pb.ForkInstanceRequest, ctx: Context) -> pb.ForkInstanceResponse:
        return await self._instances.fork(request, caller_of(ctx))

    async def GetInstance(self, request: pb.GetInstanceRequest, ctx: Context) -> pb.GetInstanceResponse:
        return await asyncio.to_thread(self._instances.get, request, caller_of(ctx))

    async def ListInstances(self, request: pb.ListInstancesRequest, ctx: Context) -> pb.ListInstancesResponse:
        return await asyncio.to_thread(self._instances.list, request, caller_of(ctx))

    async def ReserveSuccessor(
        self, request: pb.ReserveSuccessorRequest, ctx: Context
    ) -> pb.ReserveSuccessorResponse:
        return await asyncio.to_thread(self._successors.reserve, request, caller_of(ctx))

    async def CompleteSuccessor(
        self, request: pb.CompleteSuccessorRequest, ctx: Context
    ) -> pb.CompleteSuccessorResponse:
        return await asyncio.to_thread(self._successors.complete, request, caller_of(ctx))

    async def ReleaseSuccessor(
        self, request: pb.ReleaseSuccessorRequest, ctx: Context
    ) -> pb.ReleaseSuccessorResponse:
        return await asyncio.to_thread(self._successors.release, request, caller_of(ctx))

    async def FailRun(self, request: pb.FailRunRequest, ctx: Context) -> pb.FailRunResponse:
        return await asyncio.to_thread(self._runs.fail, request, caller_of(ctx))
