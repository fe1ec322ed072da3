"""The one mapping from domain errors to gRPC statuses (R47).

Every refusal travels as a `google.rpc.Status` with a `google.rpc.ErrorInfo` (reason, domain, metadata)
and, when fields are at fault, a `google.rpc.BadRequest` listing each of them.
"""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from ggmodules.core.errors import Code, DomainError

ERROR_DOMAIN = "ggmodules.dev"

_GRPC_CODES: dict[Code, int] = {
    Code.INVALID_ARGUMENT: code_pb2.INVALID_ARGUMENT,
    Code.NOT_FOUND: code_pb2.NOT_FOUND,
    Code.ALREADY_EXISTS: code_pb2.ALREADY_EXISTS,
    Code.FAILED_PRECONDITION: code_pb2.FAILED_PRECONDITION,
    Code.RESOURCE_EXHAUSTED: code_pb2.RESOURCE_EXHAUSTED,
    Code.PERMISSION_DENIED: code_pb2.PERMISSION_DENIED,
    Code.UNAUTHENTICATED: code_pb2.UNAUTHENTICATED,
    Code.OUT_OF_RANGE: code_pb2.OUT_OF_RANGE,
    Code.ABORTED: code_pb2.ABORTED,
    Code.UNAVAILABLE: code_pb2.UNAVAILABLE,
    Code.INTERNAL: code_pb2.INTERNAL,
}


def to_status(err: DomainError) -> grpc.Status:
    info = error_details_pb2.ErrorInfo(reason=err.reason.value, domain=ERROR_DOMAIN, metadata=err.metadata)
    details = [_pack(info)]
    if err.violations:
        bad = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(field=f, description=d) for f, d in err.violations
            ]
        )
        details.append(_pack(bad))
    status = status_pb2.Status(code=_GRPC_CODES[err.code], message=err.message, details=details)
    return rpc_status.to_status(status)


def _pack(msg: object) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(msg)  # type: ignore[arg-type]
    return packed
