"""Channels for tests, each call carrying a credential: `open_channel(address, credential=...)`:
- `AUTO` (the default): the credential a runtime would send, from the session's `WALLET`: the acting
  agent's (picked up from the answers that open agents and transfers, keyed by run and agent id), the
  service credential for the internal services, else the operator's;
- a credential string (`CREDENTIALS.operator`, `CREDENTIALS.service`, an agent's from an answer, one made
  with `CREDENTIALS.signer`): always that one;
- `NONE`: no credential at all.
`stubs(channel, "modulestore")` is one object with the service's public and internal RPCs (and its outbox).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc

from ggmodules.internal.v1 import modulestore_internal_service_pb2_grpc as ms_internal_grpc
from ggmodules.internal.v1 import outbox_service_pb2_grpc as outbox_grpc
from ggmodules.internal.v1 import registry_internal_service_pb2_grpc as reg_internal_grpc
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc as ms_grpc
from ggmodules.registry.v1 import registry_service_pb2_grpc as reg_grpc
from ggmodules.runtime.channels import KEEPALIVE_OPTIONS, MESSAGE_LIMITS
from ggmodules.sdk.credentials import bearer
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as tel_grpc
from ggmodules.transfer.v1 import transfer_service_pb2_grpc as tr_grpc
from tests.harness.credentials import AUTO, WALLET


class _Credential(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Adds `authorization: Bearer` to every call: a fixed credential, none, or the wallet's pick (AUTO),
    and (AUTO) keeps the credentials the answers carry."""

    def __init__(self, credential: str) -> None:
        self._credential = credential

    def _details(self, details: Any, request: Any) -> Any:
        credential = (WALLET.credential_for(details.method, request) if self._credential == AUTO
                      else self._credential)
        metadata = [*(details.metadata or ()), *bearer(credential)]
        return details._replace(metadata=metadata) if hasattr(details, "_replace") else _Details(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready,
            details.compression)

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        outcome = continuation(self._details(details, request), request)
        if self._credential == AUTO and outcome.exception() is None:
            WALLET.learn(details.method.rsplit("/", 1)[-1], outcome.result())
        return outcome

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details, request), request)


class _Details(grpc.ClientCallDetails):  # type: ignore[misc]
    def __init__(self, method: str, timeout: Any, metadata: Any, credentials: Any, wait_for_ready: Any,
                 compression: Any) -> None:
        self.method, self.timeout, self.metadata = method, timeout, metadata
        self.credentials, self.wait_for_ready, self.compression = credentials, wait_for_ready, compression


def open_channel(
    address: str, credential: str = AUTO, options: Sequence[tuple[str, Any]] = ()
) -> grpc.Channel:
    """A channel to a service of the suite carrying `credential` (AUTO, NONE, or a credential string);
    `options` beside the message limits (e.g. the round_robin service config for several replicas)."""
    channel = grpc.insecure_channel(address, options=[*MESSAGE_LIMITS, *KEEPALIVE_OPTIONS, *options])
    return grpc.intercept_channel(channel, _Credential(credential))


class _AioCredential:
    """`_Credential` for asyncio channels (the credential only; AUTO picks from the WALLET). grpc.aio files an
    interceptor under one kind only, so each kind gets its own class below."""

    def __init__(self, credential: str) -> None:
        self._credential = credential

    def _details(self, details: Any, request: Any) -> Any:
        method = details.method.decode() if isinstance(details.method, bytes) else details.method
        credential = (WALLET.credential_for(method, request) if self._credential == AUTO
                      else self._credential)
        metadata = grpc.aio.Metadata(*(details.metadata or ()), *bearer(credential))
        return grpc.aio.ClientCallDetails(details.method, details.timeout, metadata, details.credentials,
                                          details.wait_for_ready)


class _AioUnaryCredential(_AioCredential, grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    async def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details, request), request)


class _AioStreamCredential(_AioCredential, grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    async def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return await continuation(self._details(details, request), request)


def open_aio_channel(address: str, credential: str = AUTO) -> grpc.aio.Channel:
    """`open_channel` for asyncio (open it inside the loop that uses it)."""
    interceptors = [_AioUnaryCredential(credential), _AioStreamCredential(credential)]
    options = [*MESSAGE_LIMITS, *KEEPALIVE_OPTIONS]
    return grpc.aio.insecure_channel(address, options=options, interceptors=interceptors)


class Stubs:
    """One object with every RPC a service serves, public and internal: `stubs(channel, "registry")`."""

    def __init__(self, *stubs: Any) -> None:
        self._stubs = stubs

    def __getattr__(self, name: str) -> Any:
        for stub in self._stubs:
            if hasattr(stub, name):
                return getattr(stub, name)
        raise AttributeError(name)


def stubs(channel: grpc.Channel, service: str) -> Any:
    made = {
        "modulestore": (ms_grpc.ModuleStoreServiceStub, ms_internal_grpc.ModuleStoreInternalServiceStub,
                        outbox_grpc.OutboxServiceStub),
        "registry": (reg_grpc.RegistryServiceStub, reg_internal_grpc.RegistryInternalServiceStub,
                     outbox_grpc.OutboxServiceStub),
        "transfer": (tr_grpc.TransferServiceStub,),
        "telemetry": (tel_grpc.TelemetryServiceStub,),
    }[service]
    return Stubs(*(make(channel) for make in made))
