"""Registry's one call into ModuleStore: BindInstance, through the generated stub.

ModuleStore's refusals that are the caller's fault travel on unchanged (code, reason, message, metadata,
field violations). Not reaching ModuleStore is UNAVAILABLE: the caller retries with the same request id.
Anything else from ModuleStore is a defect and is answered as one.
"""

from __future__ import annotations

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
from ggmodules.modulestore.v1 import modulestore_service_pb2, modulestore_service_pb2_grpc

BIND_TIMEOUT_SECONDS = 10.0
# Reconnect quickly once ModuleStore is back, rather than after grpc's default backoff of up to 2 minutes.
CHANNEL_OPTIONS = [("grpc.initial_reconnect_backoff_ms", 200), ("grpc.max_reconnect_backoff_ms", 2000)]

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


class ModuleStoreBinder:
    def __init__(self, address: str, log: structlog.typing.FilteringBoundLogger) -> None:
        self.address = address
        self._log = log
        self._channel: grpc.aio.Channel | None = None
        self._stub: modulestore_service_pb2_grpc.ModuleStoreServiceAsyncStub | None = None

    async def bind(
        self, request: modulestore_service_pb2.BindInstanceRequest
    ) -> modulestore_service_pb2.BindInstanceResponse:
        try:
            response: modulestore_service_pb2.BindInstanceResponse = await self._modulestore().BindInstance(
                request, timeout=BIND_TIMEOUT_SECONDS
            )
        except grpc.aio.AioRpcError as err:
            raise self._refusal(err) from None
        return response

    async def close(self) -> None:
        if self._channel is not None:
            await self._channel.close()
            self._channel = self._stub = None

    def _modulestore(self) -> modulestore_service_pb2_grpc.ModuleStoreServiceAsyncStub:
        # Made on first use, inside the serving loop the channel must belong to.
        if self._stub is None:
            self._channel = grpc.aio.insecure_channel(self.address, options=CHANNEL_OPTIONS)
            self._stub = modulestore_service_pb2_grpc.ModuleStoreServiceStub(self._channel)  # type: ignore[assignment]
        assert self._stub is not None
        return self._stub

    def _refusal(self, err: grpc.aio.AioRpcError) -> Exception:
        code = err.code()
        if code in _UNREACHABLE:
            self._log.warning(
                "modulestore unreachable", address=self.address, code=code.name, details=err.details()
            )
            return Unavailable(
                f"ModuleStore at {self.address} cannot be reached ({code.name}); nothing was opened. "
                "Retry with the same request_id once it is back",
                metadata={"dependency": "modulestore", "address": self.address},
            )
        refusal = _CALLER_FAULT.get(code)
        if refusal is None:
            return RuntimeError(f"ModuleStore answered BindInstance with {code.name}: {err.details()}")
        return _rebuild(refusal, err)


def _rebuild(refusal: type[DomainError], err: grpc.aio.AioRpcError) -> DomainError:
    """The DomainError ModuleStore raised, rebuilt from its google.rpc.Status."""
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
