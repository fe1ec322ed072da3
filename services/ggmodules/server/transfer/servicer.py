"""TransferService over gRPC: thin. Refusals are raised as DomainError and mapped by the call interceptor."""

from __future__ import annotations

import asyncio
from typing import TypeAlias

import grpc

from ggmodules.server.transfer.transfers import Transfers
from ggmodules.transfer.v1 import transfer_service_pb2 as pb
from ggmodules.transfer.v1 import transfer_service_pb2_grpc

Context: TypeAlias = grpc.aio.ServicerContext


class TransferServicer(transfer_service_pb2_grpc.TransferServiceServicer):
    def __init__(self, transfers: Transfers) -> None:
        self._transfers = transfers

    async def Transition(self, request: pb.TransitionRequest, ctx: Context) -> pb.TransitionResponse:
        return await self._transfers.transition(request)

    async def Exec(self, request: pb.ExecRequest, ctx: Context) -> pb.ExecResponse:
        return await self._transfers.exec(request)

    async def GetTransfer(self, request: pb.GetTransferRequest, ctx: Context) -> pb.GetTransferResponse:
        return await asyncio.to_thread(self._transfers.get, request)
