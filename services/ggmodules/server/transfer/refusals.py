"""Refusals to and from the journal: a refusal a step met becomes the saga's outcome (core.transfer.saga), and
a failed transfer's journaled refusal is raised again as the same DomainError for every retry."""

from __future__ import annotations

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
    SuiteDefect,
    Unavailable,
)
from ggmodules.core.transfer.record import TransferRecord
from ggmodules.core.transfer.saga import Lacking, Refused

_REFUSALS: dict[Code, type[DomainError]] = {
    c.code: c
    for c in (
        InvalidArgument, NotFound, AlreadyExists, FailedPrecondition, ResourceExhausted, PermissionDenied,
        Unavailable, Contention, SuiteDefect,
    )
}


def outcome_of(err: DomainError) -> Refused | Lacking:
    """A step's refusal as the saga sees it: KIND_NOT_HELD (from the plan's "kinds" or the handover's
    "kind") is the suite's own defect (R26); anything else is the caller's answer."""
    if err.reason is Reason.KIND_NOT_HELD:
        kinds = err.metadata.get("kinds") or err.metadata.get("kind", "")
        return Lacking(err.message, tuple(k for k in kinds.split(",") if k))
    return Refused(err.code.value, err.reason.value, err.message, dict(err.metadata))


def refusal(record: TransferRecord) -> DomainError:
    """The refusal a failed transfer answered with, again."""
    code = Code(record.failure_code)
    refused = _REFUSALS.get(code, FailedPrecondition)(
        record.failure, reason=Reason(record.failure_reason), metadata=record.failure_metadata
    )
    refused.code = code
    return refused
