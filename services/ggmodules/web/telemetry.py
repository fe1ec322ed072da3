"""The consoles' only way in: Telemetry's public RPCs (Inspect*, GetStoreDetail, Subscribe) over one
grpc.aio channel (TLS when a CA is known), each call carrying the caller's credential
(`authorization: Bearer <token>`) when one is given and a deadline."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import grpc

from ggmodules.runtime.channels import KEEPALIVE_OPTIONS, MESSAGE_LIMITS
from ggmodules.runtime.config import DEFAULT_PORTS
from ggmodules.sdk.config import DEFAULT_CA_FILE, operator_credential_from
from ggmodules.telemetry.v1 import telemetry_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as pb_grpc

CALL_SECONDS = 15.0
TOKEN_ENV = "GGMODULES_TOKEN"


def telemetry_address(flag: str | None, env: Mapping[str, str]) -> str:
    """The flag, else GGMODULES_CONSOLE_TELEMETRY_ADDRESS or GGMODULES_TELEMETRY_ADDRESS, else the default."""
    default = f"127.0.0.1:{DEFAULT_PORTS['telemetry']}"
    shared = env.get("GGMODULES_TELEMETRY_ADDRESS", default)
    return flag or env.get("GGMODULES_CONSOLE_TELEMETRY_ADDRESS", shared)


def token_of(flag: str | None, env: Mapping[str, str] | None = None) -> str:
    """`--token`, else GGMODULES_TOKEN, else the operator credential `ggmodules up` wrote
    (GGMODULES_OPERATOR_CREDENTIAL[_FILE], default ./var/auth/operator.jwt when it exists), else none."""
    env = os.environ if env is None else env
    return flag or env.get(TOKEN_ENV, "") or operator_credential_from(env)


def tls_of(flag: str | None, env: Mapping[str, str] | None = None) -> grpc.ChannelCredentials | None:
    """TLS to Telemetry when a CA is known: `--tls-ca-file`, else GGMODULES_TLS_CA_FILE (empty: plaintext),
    else ./var/tls/ca.crt when it exists; None = plaintext."""
    env = os.environ if env is None else env
    if flag is not None:
        ca = flag
    elif "GGMODULES_TLS_CA_FILE" in env:
        ca = env["GGMODULES_TLS_CA_FILE"]
    else:
        ca = DEFAULT_CA_FILE if Path(DEFAULT_CA_FILE).is_file() else ""
    return grpc.ssl_channel_credentials(Path(ca).read_bytes()) if ca else None


def credential_metadata(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


@dataclass(frozen=True, slots=True)
class RunViews:
    """The three views of a run, read together."""

    instances: pb.InspectInstancesResponse
    modules: pb.InspectModulesResponse
    agents: pb.InspectAgentsResponse


class TelemetryReader:
    """Reads a run's console from Telemetry. Refusals surface as `grpc.aio.AioRpcError`."""

    def __init__(self, address: str, token: str = "", tls: grpc.ChannelCredentials | None = None) -> None:
        self.address = address
        options = [*MESSAGE_LIMITS, *KEEPALIVE_OPTIONS]
        self._channel = (grpc.aio.secure_channel(address, tls, options=options) if tls is not None
                         else grpc.aio.insecure_channel(address, options=options))
        self._stub = pb_grpc.TelemetryServiceStub(self._channel)
        self._metadata = credential_metadata(token)

    async def close(self) -> None:
        await self._channel.close()

    async def instances(self, run_id: str) -> pb.InspectInstancesResponse:
        request = pb.InspectInstancesRequest(run_id=run_id)
        answer: pb.InspectInstancesResponse = await self._stub.InspectInstances(
            request, timeout=CALL_SECONDS, metadata=self._metadata
        )
        return answer

    async def modules(self, run_id: str) -> pb.InspectModulesResponse:
        request = pb.InspectModulesRequest(run_id=run_id)
        answer: pb.InspectModulesResponse = await self._stub.InspectModules(
            request, timeout=CALL_SECONDS, metadata=self._metadata
        )
        return answer

    async def agents(self, run_id: str) -> pb.InspectAgentsResponse:
        request = pb.InspectAgentsRequest(run_id=run_id)
        answer: pb.InspectAgentsResponse = await self._stub.InspectAgents(
            request, timeout=CALL_SECONDS, metadata=self._metadata
        )
        return answer

    async def views(self, run_id: str) -> RunViews:
        return RunViews(await self.instances(run_id), await self.modules(run_id), await self.agents(run_id))

    async def store_detail(self, run_id: str, store_id: str) -> tel.StoreDetail:
        request = pb.GetStoreDetailRequest(run_id=run_id, store_id=store_id)
        answer: pb.GetStoreDetailResponse = await self._stub.GetStoreDetail(
            request, timeout=CALL_SECONDS, metadata=self._metadata
        )
        return answer.detail

    async def subscribe(
        self, run_id: str = "", after_cursor: int = 0, heartbeat_ms: int = 1000
    ) -> AsyncIterator[pb.SubscribeResponse]:
        """The stream (one run's, or every run's with no run_id) from after `after_cursor`; no deadline: it
        lasts as long as the caller reads it."""
        request = pb.SubscribeRequest(run_id=run_id, after_cursor=after_cursor, heartbeat_ms=heartbeat_ms)
        call = self._stub.Subscribe(request, metadata=self._metadata)
        try:
            async for response in call:
                yield response
        finally:
            call.cancel()
