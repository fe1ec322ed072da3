"""Calling another service of the suite through its generated async stub.

A refusal that is the caller's fault travels on unchanged: the dependency's DomainError is rebuilt from its
google.rpc.Status (code, reason, message, metadata, field violations), so the one mapping in
`ggmodules.runtime.errors` answers it again. Not reaching the dependency is `Unavailable` (the caller retries
with the same request id). Anything else is a defect and is raised as one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import grpc
import structlog
from google.rpc import error_details_pb2, status_pb2

from ggmodules.core.errors import (
    AlreadyExists,
    Code,
    Contention,
    DomainError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Reason,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from ggmodules.runtime.channels import service_channel
from ggmodules.runtime.security import INSECURE, Security

CALL_TIMEOUT_SECONDS = 10.0

_UNREACHABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.CANCELLED}
_CALLER_FAULT: dict[grpc.StatusCode, type[DomainError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.OUT_OF_RANGE: FailedPrecondition,
    # Not the caller's fault, but nothing was applied and the same request may be sent again.
    grpc.StatusCode.ABORTED: Contention,
}
_REASONS = {r.value: r for r in Reason}
_STATUS_DETAILS_KEY = "grpc-status-details-bin"


class Dependency:
    """One service's async stub, made on first use inside the serving loop the channel must belong to.

    `unreachable` finishes the sentence a caller reads when the dependency cannot be reached, saying what
    that left undone and what to do (e.g. "nothing was opened; retry with the same request_id").
    """

    def __init__(
        self,
        name: str,
        address: str,
        stub: Callable[[grpc.aio.Channel], Any],
        log: structlog.typing.FilteringBoundLogger,
        unreachable: str,
        timeout: float = CALL_TIMEOUT_SECONDS,
        security: Security = INSECURE,
    ) -> None:
        self.name = name
        # The calling service's own credential and TLS (runtime/security.py).
        self._security = security
        self._metadata = security.call_metadata()
        self.address = address
        self._make_stub = stub
        self._log = log
        self._unreachable = unreachable
        self._timeout = timeout
        self._channel: grpc.aio.Channel | None = None
        self._stub: Any = None
        # Channels given up on (UNAVAILABLE) and closing once the calls still on them have ended.
        self._retiring: dict[grpc.aio.Channel, asyncio.Task[None]] = {}

    async def call(self, method: str, request: Any) -> Any:
        # An address naming several replicas: a call that met one dying (UNAVAILABLE) is sent once more, and
        # round_robin takes it to a replica that answers. Every call between the services is a read or
        # carries a request id, so sending it again applies nothing twice.
        attempts = 2 if self.several_replicas else 1
        for attempt in range(1, attempts + 1):
            if self._stub is None:
                self._channel = service_channel(self.address, self._security.channel_credentials)
                self._stub = self._make_stub(self._channel)
            channel, stub = self._channel, self._stub
            try:
                return await getattr(stub, method)(request, timeout=self._timeout, metadata=self._metadata)
            except grpc.aio.AioRpcError as err:
                if err.code() is grpc.StatusCode.UNAVAILABLE:
                    # A fresh channel on the next call connects at once, instead of waiting out the old
                    # one's reconnect backoff, so a retry right after the service is back goes through.
                    # Only the channel that failed: a newer one may carry other calls already.
                    if self._channel is channel:
                        self._retire()
                    if attempt < attempts:
                        continue
                raise self._refusal(method, err) from None
            except asyncio.CancelledError:
                # The call was cancelled under this caller, not the caller itself (a channel closed with
                # the call on it): the dependency was not reached, as for UNAVAILABLE. Left to propagate,
                # it ended the caller's task as if its own client had gone: a Transfer Exec then never
                # answered, and its client waited out its deadline.
                if caller_cancelled():
                    raise
                if attempt < attempts:
                    continue
                cancelled = grpc.StatusCode.CANCELLED
                raise self._unreached(method, cancelled, "the call's channel closed") from None
        raise AssertionError("unreachable")  # the loop returns or raises

    @property
    def several_replicas(self) -> bool:
        return "," in self.address or self.address.startswith("dns:")

    def _retire(self) -> None:
        """Stops using the current channel: the next call opens a fresh one. The old one is closed once the
        calls still on it have ended (each within its deadline), not under them. Closed at once, it
        cancelled every other call in flight on it: in a rolling restart of Registry, one of two Execs a
        Transfer replica drove at once met UNAVAILABLE and closed the channel, and the other's call,
        cancelled, left its Exec unanswered until the client's deadline (3 to 9 Execs of about 1,000 in a
        minute of restarts)."""
        channel, self._channel, self._stub = self._channel, None, None
        if channel is not None:
            task = asyncio.get_running_loop().create_task(channel.close(grace=self._timeout))
            self._retiring[channel] = task
            task.add_done_callback(lambda _: self._retiring.pop(channel, None))

    async def close(self) -> None:
        channel, self._channel, self._stub = self._channel, None, None
        for old, closing in list(self._retiring.items()):  # stopping: no waiting on calls still running
            closing.cancel()
            await old.close()
        if channel is not None:
            await channel.close()

    def _refusal(self, method: str, err: grpc.aio.AioRpcError) -> Exception:
        code = err.code()
        if code in _UNREACHABLE:
            return self._unreached(method, code, err.details() or "")
        refusal = _CALLER_FAULT.get(code)
        if refusal is None:
            return RuntimeError(f"{self.name} answered {method} with {code.name}: {err.details()}")
        return rebuild(refusal, err)

    def _unreached(self, method: str, code: grpc.StatusCode, details: str) -> Unavailable:
        self._log.warning(
            "dependency unreachable", dependency=self.name, address=self.address, method=method,
            code=code.name, details=details,
        )
        return Unavailable(
            f"{self.name} at {self.address} cannot be reached ({code.name}); {self._unreachable}",
            metadata={"dependency": self.name, "address": self.address},
            retried=True,  # by this channel's retry policy (runtime/channels.py)
        )


def caller_cancelled() -> bool:
    """Whether the running task itself is being cancelled (its caller went away), as against an
    asyncio.CancelledError raised under it by something it awaited (a call on a channel closed meanwhile)."""
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def rebuild(refusal: type[DomainError], err: grpc.aio.AioRpcError) -> DomainError:
    """The DomainError the dependency raised, rebuilt from its google.rpc.Status."""
    reason, metadata, violations = _status(err)
    rebuilt = refusal(err.details() or "", reason=reason, metadata=metadata, violations=violations)
    if err.code() is grpc.StatusCode.OUT_OF_RANGE:
        rebuilt.code = Code.OUT_OF_RANGE
    return rebuilt


def _status(err: grpc.aio.AioRpcError) -> tuple[Reason | None, dict[str, str], list[tuple[str, str]]]:
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
    return reason, metadata, violations
