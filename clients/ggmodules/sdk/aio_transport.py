"""The asyncio transport: executes plans on `grpc.aio` channels, opened in the loop of the first call."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

import grpc
from google.rpc import status_pb2
from grpc_status import rpc_status

from ggmodules.modulestore.v1 import modulestore_service_pb2
from ggmodules.sdk.agent import AsyncAgent, AsyncWriteSession
from ggmodules.sdk.aio_session import open_session
from ggmodules.sdk.channels import Stubs, TransportBase
from ggmodules.sdk.config import ClientConfig
from ggmodules.sdk.credentials import Wallet
from ggmodules.sdk.errors import error_from_status
from ggmodules.sdk.plans import Plan
from ggmodules.sdk.results import Instance

T = TypeVar("T")


class _Channels:
    """Opened on first use, inside the running loop, and shared by every derived transport."""

    def __init__(self, config: ClientConfig, interceptors: Sequence[Any]) -> None:
        self._config = config
        self._interceptors = list(interceptors)
        self.stubs: Stubs | None = None

    def get(self) -> Stubs:
        if self.stubs is None:
            interceptors = self._interceptors or None
            tls = self._config.channel_credentials()

            def open_channel(address: str, options: list[tuple[str, Any]]) -> Any:
                if tls is not None:
                    return grpc.aio.secure_channel(address, tls, options=options, interceptors=interceptors)
                return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)

            self.stubs = Stubs(self._config, open_channel)
        return self.stubs


class AsyncTransport(TransportBase):
    def __init__(self, config: ClientConfig, interceptors: Sequence[Any] = (), *,
                 channels: _Channels | None = None, wallet: Wallet | None = None) -> None:
        super().__init__(config, wallet)
        self._channels = channels or _Channels(config, interceptors)

    def derive(self, config: ClientConfig) -> AsyncTransport:
        return AsyncTransport(config, channels=self._channels, wallet=self.wallet)

    def agent(self, instance: Instance) -> AsyncAgent:
        return AsyncAgent(self, instance)

    def session(self, instance: Instance) -> AsyncWriteSession:
        return open_session(self, instance)

    def open_session(self, run_id: str, agent_id: str) -> Any:
        """A ModuleStore write Session carrying the agent's credential (a grpc.aio stream-stream call: write,
        read, done_writing); no deadline."""
        acting = modulestore_service_pb2.WriteRequest(run_id=run_id, agent_id=agent_id)
        stub = self._channels.get().stub("modulestore", None)
        return stub.Session(metadata=self._stream_metadata("Write", acting, ()))

    def run(self, plan: Plan[T]) -> Awaitable[T]:
        return self._run(plan)

    async def _run(self, plan: Plan[T]) -> T:
        method = self._channels.get().method(plan, self._config.retry)
        call = method(plan.request, timeout=self._config.call_timeout, metadata=self._headers(plan))
        try:
            response = await call
            self.wallet.learn(plan.method, response)
            return plan.convert(response)
        except grpc.aio.AioRpcError as err:
            raise error_from_status(err.code(), err.details(), await _rich_status(call),
                                    attempts=self._attempts(plan, err)) from err

    def stream(self, service: str, method: str, request: Any, metadata: tuple[tuple[str, str], ...]) -> Any:
        """A server stream without a deadline: an async iterator of responses that is also the call."""
        return getattr(self._channels.get().stub(service, None), method)(
            request, metadata=self._stream_metadata(method, request, metadata))

    @staticmethod
    async def raise_typed(call: Any, err: grpc.aio.AioRpcError) -> None:
        raise error_from_status(err.code(), err.details(), await _rich_status(call)) from err

    async def close(self) -> None:
        if self._channels.stubs is not None:
            for channel in list(self._channels.stubs.channels.values()):
                await channel.close()
            self._channels.stubs = None


async def _rich_status(call: Any) -> status_pb2.Status | None:
    try:
        status: status_pb2.Status | None = await rpc_status.aio.from_call(call)
    except ValueError:  # details that contradict the status: trust the status
        return None
    return status
