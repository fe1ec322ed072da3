"""Refusals as a test reads them: one parser (`refusal_of`) for every gRPC error a test inspects.

`refused(call, *args)` makes the call, expects a refusal and returns it; `assert_refused(call, code, reason)`
also checks its code and ErrorInfo reason. A `Refusal` unpacks (and slices) as
`code, reason, metadata, message`.
`status_of` and `error_metadata` are the two views most assertions compare.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True)
class Refusal:
    """A refusal's code, ErrorInfo reason ("" without one), ErrorInfo metadata and message; its ErrorInfo as
    sent (None without one) and its BadRequest field violations (field, description)."""

    code: grpc.StatusCode
    reason: str
    metadata: dict[str, str]
    message: str
    info: error_details_pb2.ErrorInfo | None = None
    violations: list[tuple[str, str]] = field(default_factory=list)

    def __iter__(self) -> Iterator[Any]:
        return iter((self.code, self.reason, self.metadata, self.message))

    def __getitem__(self, index: Any) -> Any:
        return (self.code, self.reason, self.metadata, self.message)[index]


def rich_status(err: Any) -> status_pb2.Status | None:
    """The google.rpc.Status a call's trailers carry (None without one), read as sent."""
    for key, value in err.trailing_metadata() or ():
        if key == DETAILS_KEY:
            return status_pb2.Status.FromString(value)
    return None


def error_info(status: status_pb2.Status | None) -> error_details_pb2.ErrorInfo | None:
    """The ErrorInfo among a status's details (None without one)."""
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info
    return None


def refusal_of(err: grpc.RpcError) -> Refusal:
    """What a refusal says. Its rich status must agree with its code and message (grpc_status checks)."""
    status = rpc_status.from_call(err)
    info = error_info(status)
    violations: list[tuple[str, str]] = []
    for detail in status.details if status is not None else ():
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            violations = [(v.field, v.description) for v in bad.field_violations]
    return Refusal(
        code=err.code(),
        reason=info.reason if info is not None else "",
        metadata=dict(info.metadata) if info is not None else {},
        message=err.details() or "",
        info=info,
        violations=violations,
    )


def refused(call: Callable[..., Any], *args: Any) -> Refusal:
    """Calls `call(*args)`, expecting a refusal: what it says."""
    with pytest.raises(grpc.RpcError) as caught:
        call(*args)
    return refusal_of(caught.value)


def assert_refused(call: Callable[..., Any], code: grpc.StatusCode, reason: str, *args: Any) -> Refusal:
    """Calls `call(*args)`, expecting a refusal with `code` and ErrorInfo `reason`: what it says."""
    refusal = refused(call, *args)
    assert (refusal.code, refusal.reason) == (code, reason), refusal
    return refusal


def status_of(err: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    """The code and ErrorInfo reason of a refusal."""
    refusal = refusal_of(err)
    return refusal.code, refusal.reason


def error_metadata(err: grpc.RpcError) -> dict[str, str]:
    """The ErrorInfo metadata of a refusal: the machine-readable particulars (which agent, which store)."""
    return refusal_of(err).metadata
