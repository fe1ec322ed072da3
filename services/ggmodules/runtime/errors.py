"""The one mapping from domain errors to gRPC statuses (R47).

Every refusal travels as a `google.rpc.Status` with a `google.rpc.ErrorInfo` (reason, domain, metadata)
and, when fields are at fault, a `google.rpc.BadRequest` listing each of them.

A refusal may quote what the caller sent, and that can be as large as the request. The status travels in
the trailers, which a client refuses beyond its metadata limit (16 KiB for grpc's Python client), and then
it sees RESOURCE_EXHAUSTED without the ErrorInfo. So what a refusal carries is bounded here, in one place:
every run of text without spaces is cut to `QUOTE_CHARS` characters (an id or a value, quoted or not), the
message to `MESSAGE_BYTES`, each metadata value to `VALUE_BYTES`, the violations to `MAX_VIOLATIONS` (each
field and description to `VALUE_BYTES`); a cut ends in "…". Should the details still exceed
`DETAILS_BYTES`, the field violations go first, then the metadata values shrink; the reason is never cut.
With these figures the two trailers a refusal adds stay under 12 KiB, whatever was sent.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from ggmodules.core.errors import Code, DomainError, Unavailable
from ggmodules.runtime.channels import PUSHBACK

ERROR_DOMAIN = "ggmodules.dev"
QUOTE_CHARS = 200
MESSAGE_BYTES = 1024
VALUE_BYTES = 256
MAX_VIOLATIONS = 10
DETAILS_BYTES = 6 * 1024
ELLIPSIS = "…"

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
_LONG_RUN = re.compile(rf"\S{{{QUOTE_CHARS + 1},}}")
NO_RETRY = (PUSHBACK, "-1")


class _Fields(NamedTuple):
    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple[tuple[str, str | bytes], ...]


class _Status(_Fields, grpc.Status):  # type: ignore[misc]  # grpc has no type hints
    """A status with trailers of our own added (grpc_status builds one like it, but its class is private)."""


def to_status(err: DomainError) -> grpc.Status:
    status = rpc_status.to_status(status_message(err))
    if isinstance(err, Unavailable) and err.retried:
        # gRPC's retry pushback (gRFC A6): a negative value tells the caller's channel not to retry this
        # call. This service already retried the dependency it could not reach; a client retrying the whole
        # call on top of that multiplied the attempts (4 x 4 calls to a dead Registry) and the time to the
        # answer (an Exec: 5.7 s, against 1.4 s). Retrying later with the same request id stays safe.
        status = _Status(status.code, status.details, (*status.trailing_metadata, NO_RETRY))
    return status


def status_message(err: DomainError) -> status_pb2.Status:
    """The refusal as a `google.rpc.Status` message: what `to_status` sends as a call's status, and what a
    write session sends inside the answer to the one message it refuses."""
    metadata = {key[:64]: bounded(value, VALUE_BYTES) for key, value in err.metadata.items()}
    status = status_pb2.Status(
        code=_GRPC_CODES[err.code],
        message=bounded(err.message, MESSAGE_BYTES),
        details=[_info(err, metadata), *_bad_request(err)],
    )
    if status.ByteSize() > DETAILS_BYTES:
        small = {key: bounded(value, 32) for key, value in list(metadata.items())[:16]}
        status.ClearField("details")
        status.details.append(_info(err, small))
    return status


def _info(err: DomainError, metadata: dict[str, str]) -> any_pb2.Any:
    return _pack(error_details_pb2.ErrorInfo(reason=err.reason.value, domain=ERROR_DOMAIN, metadata=metadata))


def _bad_request(err: DomainError) -> list[any_pb2.Any]:
    if not err.violations:
        return []
    shown = err.violations[:MAX_VIOLATIONS]
    violations = [
        error_details_pb2.BadRequest.FieldViolation(
            field=bounded(f, VALUE_BYTES), description=bounded(d, VALUE_BYTES)
        )
        for f, d in shown
    ]
    if len(err.violations) > len(shown):
        more = len(err.violations) - len(shown)
        violations.append(error_details_pb2.BadRequest.FieldViolation(description=f"and {more} more"))
    return [_pack(error_details_pb2.BadRequest(field_violations=violations))]


def bounded(text: str, max_bytes: int) -> str:
    """`text` with every run of more than QUOTE_CHARS non-space characters cut, then at most `max_bytes`
    of UTF-8 (cut on a character boundary)."""
    if len(text) > QUOTE_CHARS:
        text = _LONG_RUN.sub(lambda m: m.group()[:QUOTE_CHARS] + ELLIPSIS, text)
    if len(text) * 4 <= max_bytes:
        return text
    encoded = text.encode()
    if len(encoded) <= max_bytes:
        return text
    room = max_bytes - len(ELLIPSIS.encode())
    return encoded[:room].decode(errors="ignore") + ELLIPSIS


def _pack(msg: object) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(msg)  # type: ignore[arg-type]
    return packed
