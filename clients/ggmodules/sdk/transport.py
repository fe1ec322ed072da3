"""The sync transport: executes plans on `grpc` channels, with the deadline of its config (gRPC retries, by
the channels' service config)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import grpc
from google.rpc import status_pb2
from grpc_status import rpc_status

from ggmodules.modulestore.v1 import modulestore_service_pb2
from ggmodules.sdk.agent import Agent, WriteSession
from ggmodules.sdk.channels import Stubs, TransportBase
from ggmodules.sdk.config import ClientConfig
from ggmodules.sdk.credentials import Wallet
from ggmodules.sdk.errors import error_from_status
from ggmodules.sdk.plans import Plan
from ggmodules.sdk.results import Instance
from ggmodules.sdk.session import open_session

T = TypeVar("T")


class SyncTransport(TransportBase):
    def __init__(self, config: ClientConfig, interceptors: Sequence[Any] = (), *,
                 stubs: Stubs | None = None, wallet: Wallet | None = None) -> None:
        super().__init__(config, wallet)

        def open_channel(address: str, options: list[tuple[str, Any]]) -> Any:
            tls = config.channel_credentials()
            channel = (grpc.secure_channel(address, tls, options=options) if tls is not None
                       else grpc.insecure_channel(address, options=options))
            return grpc.intercept_channel(channel, *interceptors) if interceptors else channel

        self._stubs = stubs or Stubs(config, open_channel)

    def derive(self, config: ClientConfig) -> SyncTransport:
        return SyncTransport(config, stubs=self._stubs, wallet=self.wallet)

    def agent(self, instance: Instance) -> Agent:
        return Agent(self, instance)

    def session(self, instance: Instance) -> WriteSession:
        return open_session(self, instance)

    def open_session(self, requests: Iterator[Any], run_id: str, agent_id: str) -> Any:
        """A ModuleStore write Session carrying the agent's credential: an iterator of answers that is also
        the call (`cancel()`); no deadline (it lasts as long as the agent keeps it)."""
        acting = modulestore_service_pb2.WriteRequest(run_id=run_id, agent_id=agent_id)
        stub = self._stubs.stub("modulestore", None)
        return stub.Session(requests, metadata=self._stream_metadata("Write", acting, ()))

    def run(self, plan: Plan[T]) -> T:
        method = self._stubs.method(plan, self._config.retry)
        try:
            response = method(plan.request, timeout=self._config.call_timeout, metadata=self._headers(plan))
            self.wallet.learn(plan.method, response)
            return plan.convert(response)
        except grpc.RpcError as err:
            raise error_from_status(err.code(), err.details(), _rich_status(err),
                                    attempts=self._attempts(plan, err)) from err

    def stream(self, service: str, method: str, request: Any, metadata: tuple[tuple[str, str], ...]) -> Any:
        """A server stream without a deadline: an iterator of responses that is also the call (`cancel()`).
        Its errors are `grpc.RpcError`s; `raise_typed` turns one into the SDK's exception."""
        call: Iterator[Any] = getattr(self._stubs.stub(service, None), method)(
            request, metadata=self._stream_metadata(method, request, metadata))
        return call

    @staticmethod
    def raise_typed(err: grpc.RpcError) -> None:
        raise error_from_status(err.code(), err.details(), _rich_status(err)) from err

    def close(self) -> None:
        for channel in list(self._stubs.channels.values()):
            channel.close()


def _rich_status(err: grpc.RpcError) -> status_pb2.Status | None:
    try:
        status: status_pb2.Status | None = rpc_status.from_call(err)
    except ValueError:  # details that contradict the status: trust the status
        return None
    return status
