"""Domain errors: plain exceptions carrying a status category and a machine-readable reason.

One place (`ggmodules.runtime.errors`) maps them to gRPC statuses with a `google.rpc.ErrorInfo`; the
SDK rebuilds typed exceptions from the reason. Reasons are `ggmodules.common.v1.ErrorReason` names
without their prefix.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence


class Code(enum.Enum):
    """Status categories, named as gRPC names them (the core imports no grpc)."""

    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    OUT_OF_RANGE = "OUT_OF_RANGE"
    ABORTED = "ABORTED"
    UNAVAILABLE = "UNAVAILABLE"
    INTERNAL = "INTERNAL"


class Reason(enum.Enum):
    UNKNOWN_KIND = "UNKNOWN_KIND"
    INVALID_FIELD = "INVALID_FIELD"
    RUN_NOT_FOUND = "RUN_NOT_FOUND"
    AGENT_NOT_FOUND = "AGENT_NOT_FOUND"
    STORE_NOT_FOUND = "STORE_NOT_FOUND"
    PROFILE_NOT_FOUND = "PROFILE_NOT_FOUND"
    NOT_A_HOLDER = "NOT_A_HOLDER"
    READ_ONLY = "READ_ONLY"
    CAP_EXCEEDED = "CAP_EXCEEDED"
    TASK_CYCLE = "TASK_CYCLE"
    DANGLING_EDGE = "DANGLING_EDGE"
    SYSTEM_PROMPT_ALREADY_SET = "SYSTEM_PROMPT_ALREADY_SET"
    INVALID_FSM = "INVALID_FSM"
    TOO_LARGE = "TOO_LARGE"
    WRONG_KIND = "WRONG_KIND"
    REQUEST_ID_REUSED = "REQUEST_ID_REUSED"
    RUN_NOT_RUNNING = "RUN_NOT_RUNNING"
    HISTORY_REQUIRED = "HISTORY_REQUIRED"
    ENTRY_NOT_FOUND = "ENTRY_NOT_FOUND"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    WRONG_RUN = "WRONG_RUN"
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    INVALID_PAGE_TOKEN = "INVALID_PAGE_TOKEN"
    UNAVAILABLE = "UNAVAILABLE"
    HANDED_ON = "HANDED_ON"
    NO_SUCH_EDGE = "NO_SUCH_EDGE"
    RUN_INTERNAL_ERROR = "RUN_INTERNAL_ERROR"
    NOT_IN_FSM = "NOT_IN_FSM"
    KIND_NOT_HELD = "KIND_NOT_HELD"
    CURSOR_EXPIRED = "CURSOR_EXPIRED"
    COST_NONE_BY_CONSTRUCTION = "COST_NONE_BY_CONSTRUCTION"
    TURN_ALREADY_REPORTED = "TURN_ALREADY_REPORTED"
    TURN_OUT_OF_ORDER = "TURN_OUT_OF_ORDER"
    EXEC_LACKS_EDGE_KINDS = "EXEC_LACKS_EDGE_KINDS"
    CONTENTION = "CONTENTION"
    INVALID_QUERY = "INVALID_QUERY"
    MALFORMED_REQUEST = "MALFORMED_REQUEST"
    CREDENTIAL_MISSING = "CREDENTIAL_MISSING"
    CREDENTIAL_MALFORMED = "CREDENTIAL_MALFORMED"
    CREDENTIAL_INVALID = "CREDENTIAL_INVALID"
    CREDENTIAL_EXPIRED = "CREDENTIAL_EXPIRED"
    ROLE_NOT_PERMITTED = "ROLE_NOT_PERMITTED"
    AGENT_MISMATCH = "AGENT_MISMATCH"
    OUTBOX_PRUNED = "OUTBOX_PRUNED"
    ACK_BEYOND_HEAD = "ACK_BEYOND_HEAD"


class DomainError(Exception):
    """A refusal. `message` is for a person; `reason` and `metadata` are for a program."""

    code: Code = Code.FAILED_PRECONDITION
    default_reason: Reason = Reason.INVALID_FIELD

    def __init__(
        self,
        message: str,
        *,
        reason: Reason | None = None,
        metadata: Mapping[str, str] | None = None,
        violations: Sequence[tuple[str, str]] = (),
    ) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or self.default_reason
        self.metadata: dict[str, str] = dict(metadata or {})
        # (field, description) pairs, carried as google.rpc.BadRequest field violations.
        self.violations: list[tuple[str, str]] = list(violations)


class InvalidArgument(DomainError):
    code = Code.INVALID_ARGUMENT
    default_reason = Reason.INVALID_FIELD


class NotFound(DomainError):
    code = Code.NOT_FOUND
    default_reason = Reason.ENTRY_NOT_FOUND


class AlreadyExists(DomainError):
    code = Code.ALREADY_EXISTS
    default_reason = Reason.ALREADY_EXISTS


class FailedPrecondition(DomainError):
    code = Code.FAILED_PRECONDITION
    default_reason = Reason.INVALID_FIELD


class ResourceExhausted(DomainError):
    code = Code.RESOURCE_EXHAUSTED
    default_reason = Reason.CAP_EXCEEDED


class PermissionDenied(DomainError):
    code = Code.PERMISSION_DENIED
    default_reason = Reason.NOT_A_HOLDER


class Unauthenticated(DomainError):
    """No credential, or one that does not verify (malformed, altered, expired): the caller is unknown."""

    code = Code.UNAUTHENTICATED
    default_reason = Reason.CREDENTIAL_MISSING


class Unavailable(DomainError):
    """A dependency (another service, the database) cannot be reached; safe to retry.

    `retried`: the service already sent the call it could not get through as often as its own retry policy
    allows (a call to another service of the suite). The caller's client is then told not to send the whole
    call again at once (runtime/errors.py): retries at each hop would multiply."""

    code = Code.UNAVAILABLE
    default_reason = Reason.UNAVAILABLE

    def __init__(
        self,
        message: str,
        *,
        reason: Reason | None = None,
        metadata: Mapping[str, str] | None = None,
        retried: bool = False,
    ) -> None:
        super().__init__(message, reason=reason, metadata=metadata)
        self.retried = retried


class Contention(DomainError):
    """Concurrent calls kept colliding in the database (a deadlock, a serialization failure, a busy
    database) through every retry the service allows; nothing was applied. Safe to retry with the same
    request id."""

    code = Code.ABORTED
    default_reason = Reason.CONTENTION


# Refusals after which nothing was applied and the same request, under the same request id, may succeed.
TRANSIENT: tuple[type[DomainError], ...] = (Unavailable, Contention)


class OutOfRange(DomainError):
    """A position past what the service still holds, e.g. a stream cursor older than its retention."""

    code = Code.OUT_OF_RANGE
    default_reason = Reason.CURSOR_EXPIRED


class SuiteDefect(DomainError):
    """The suite met its own defect (R26): the run has ended under internal_error. The one refusal that
    reaches a client as INTERNAL."""

    code = Code.INTERNAL
    default_reason = Reason.RUN_INTERNAL_ERROR


def missing(field: str) -> InvalidArgument:
    return InvalidArgument(
        f"{field} is required", metadata={"field": field}, violations=[(field, "required")]
    )
