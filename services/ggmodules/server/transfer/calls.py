"""Transfer's calls into Registry and ModuleStore, through their generated stubs.

A refusal that is the caller's travels on unchanged (code, reason, message, metadata, field violations).
Not reaching a service is UNAVAILABLE: the transfer stays journaled at its step and is resumed. Anything
else is a defect and is raised as one.
"""

from __future__ import annotations

from typing import Any

import grpc
import structlog
from google.rpc import error_details_pb2, status_pb2  # type: ignore[import-untyped, unused-ignore]

from ggmodules.core.errors import (
    AlreadyExists,
    Code,
    DomainError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Reason,
    ResourceExhausted,
    Unavailable,
)
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.registry.v1 import registry_service_pb2_grpc

CALL_TIMEOUT_SECONDS = 10.0
# Reconnect quickly once a dependency is back, rather than after grpc's default backoff of up to 2 minutes.
# Its own subchannels (not the process-wide pool), so a channel made afresh connects at once.
CHANNEL_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.use_local_subchannel_pool", 1),
]

_UNREACHABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}
_CALLER_FAULT: dict[grpc.StatusCode, type[DomainError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.OUT_OF_RANGE: FailedPrecondition,
}
_REASONS = {r.value: r for r in Reason}
_STATUS_DETAILS_KEY = "grpc-status-details-bin"
Log = structlog.typing.FilteringBoundLogger


class Dependency:
    """One service's async stub, made on first use inside the serving loop."""

    def __init__(self, name: str, address: str, stub: Any, log: Log) -> None:
        self.name = name
        self.address = address
        self._make_stub = stub
        self._log = log
        self._channel: grpc.aio.Channel | None = None
        self._stub: Any = None

    async def call(self, method: str, request: Any) -> Any:
        if self._stub is None:
            self._channel = grpc.aio.insecure_channel(self.address, options=CHANNEL_OPTIONS)
            self._stub = self._make_stub(self._channel)
        try:
            return await getattr(self._stub, method)(request, timeout=CALL_TIMEOUT_SECONDS)
        except grpc.aio.AioRpcError as err:
            if err.code() is grpc.StatusCode.UNAVAILABLE:
                # A fresh channel on the next call connects at once, instead of waiting out the old one's
                # reconnect backoff, so a retry right after the service is back goes through.
                await self.close()
            raise self._refusal(method, err) from None

    async def close(self) -> None:
        channel, self._channel, self._stub = self._channel, None, None
        if channel is not None:
            await channel.close()

    def _refusal(self, method: str, err: grpc.aio.AioRpcError) -> Exception:
        code = err.code()
        if code in _UNREACHABLE:
            self._log.warning(
                "dependency unreachable", dependency=self.name, address=self.address, method=method,
                code=code.name, details=err.details(),
            )
            return Unavailable(
                f"{self.name} at {self.address} cannot be reached ({code.name}); the transfer is journaled "
                "and resumes once it is back. Retry with the same request_id for the final answer",
                metadata={"dependency": self.name, "address": self.address},
            )
        refusal = _CALLER_FAULT.get(code)
        if refusal is None:
            return RuntimeError(f"{self.name} answered {method} with {code.name}: {err.details()}")
        return _rebuild(refusal, err)


class Calls:
    """The calls a transfer makes, each with a request id derived from the transfer (so each applies once)."""

    def __init__(self, registry_address: str, modulestore_address: str, log: Log) -> None:
        self.registry = Dependency(
            "Registry", registry_address, registry_service_pb2_grpc.RegistryServiceStub, log
        )
        self.modulestore = Dependency(
            "ModuleStore", modulestore_address, modulestore_service_pb2_grpc.ModuleStoreServiceStub, log
        )

    async def get_run(self, run_id: str) -> reg.GetRunResponse:
        answer: reg.GetRunResponse = await self.registry.call("GetRun", reg.GetRunRequest(run_id=run_id))
        return answer

    async def get_instance(self, run_id: str, agent_id: str) -> reg.GetInstanceResponse:
        request = reg.GetInstanceRequest(run_id=run_id, agent_id=agent_id)
        answer: reg.GetInstanceResponse = await self.registry.call("GetInstance", request)
        return answer

    async def reserve(self, request: reg.ReserveSuccessorRequest) -> reg.ReserveSuccessorResponse:
        answer: reg.ReserveSuccessorResponse = await self.registry.call("ReserveSuccessor", request)
        return answer

    async def complete(self, request: reg.CompleteSuccessorRequest) -> reg.CompleteSuccessorResponse:
        answer: reg.CompleteSuccessorResponse = await self.registry.call("CompleteSuccessor", request)
        return answer

    async def release(self, request: reg.ReleaseSuccessorRequest) -> None:
        await self.registry.call("ReleaseSuccessor", request)

    async def fail_run(self, request: reg.FailRunRequest) -> None:
        await self.registry.call("FailRun", request)

    async def handover(self, request: ms.HandoverRequest) -> ms.HandoverResponse:
        answer: ms.HandoverResponse = await self.modulestore.call("Handover", request)
        return answer

    async def close(self) -> None:
        await self.registry.close()
        await self.modulestore.close()


def _rebuild(refusal: type[DomainError], err: grpc.aio.AioRpcError) -> DomainError:
    """The DomainError the dependency raised, rebuilt from its google.rpc.Status."""
    status = status_pb2.Status()
    for key, value in err.trailing_metadata() or ():
        if key == _STATUS_DETAILS_KEY:
            status.ParseFromString(value)
    reason, metadata, violations = None, {}, []
    for detail in status.details:
        info, bad = error_details_pb2.ErrorInfo(), error_details_pb2.BadRequest()
        if detail.Unpack(info):
            reason, metadata = _REASONS.get(info.reason), dict(info.metadata)
        elif detail.Unpack(bad):
            violations = [(v.field, v.description) for v in bad.field_violations]
    rebuilt = refusal(err.details() or "", reason=reason, metadata=metadata, violations=violations)
    if err.code() is grpc.StatusCode.OUT_OF_RANGE:
        rebuilt.code = Code.OUT_OF_RANGE
    return rebuilt
