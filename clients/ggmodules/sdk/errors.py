"""Typed refusals, rebuilt from the `google.rpc.ErrorInfo` reason a service sends (never from message text).

Every reason in `ggmodules.common.v1.ErrorReason` has its own subclass of `GGModulesError`; a reason this
SDK does not know yet arrives as a plain `GGModulesError` carrying it. Statuses without an ErrorInfo map by
code: DEADLINE_EXCEEDED, UNAVAILABLE (after the retries), INTERNAL/UNKNOWN (a service defect). ABORTED
(`ContentionError`) arrives only after the retries too (gRPC's, by the service config).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import grpc
from google.rpc import error_details_pb2, status_pb2

ERROR_DOMAIN = "ggmodules.dev"


@dataclass(frozen=True)
class Violation:
    """One field at fault (a `google.rpc.BadRequest` field violation)."""

    field: str
    description: str


class GGModulesError(Exception):
    """A refused or failed call. `message` is for a person; `code`, `reason` and `metadata` for a program."""

    REASON: ClassVar[str] = ""
    _by_reason: ClassVar[dict[str, type[GGModulesError]]] = {}

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        if cls.REASON:
            GGModulesError._by_reason[cls.REASON] = cls

    def __init__(
        self,
        code: grpc.StatusCode,
        reason: str,
        message: str,
        metadata: Mapping[str, str] | None = None,
        violations: Sequence[Violation] = (),
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.metadata: dict[str, str] = dict(metadata or {})
        self.violations: tuple[Violation, ...] = tuple(violations)

    def __str__(self) -> str:
        head = f"{self.code.name} {self.reason}".rstrip()
        return f"{head}: {self.message}"

    @staticmethod
    def class_for(reason: str) -> type[GGModulesError]:
        return GGModulesError._by_reason.get(reason, GGModulesError)


class UnknownKindError(GGModulesError):
    """A kind word or value outside the six (R1); `metadata["value"]` is the bad word."""

    REASON = "UNKNOWN_KIND"


class InvalidFieldError(GGModulesError):
    REASON = "INVALID_FIELD"


class RunNotFoundError(GGModulesError):
    REASON = "RUN_NOT_FOUND"


class AgentNotFoundError(GGModulesError):
    REASON = "AGENT_NOT_FOUND"


class StoreNotFoundError(GGModulesError):
    REASON = "STORE_NOT_FOUND"


class ProfileNotFoundError(GGModulesError):
    REASON = "PROFILE_NOT_FOUND"


class NotAHolderError(GGModulesError):
    REASON = "NOT_A_HOLDER"


class ReadOnlyError(GGModulesError):
    REASON = "READ_ONLY"


class CapExceededError(GGModulesError):
    """The write would take the store beyond a cap (R23); the store is unchanged."""

    REASON = "CAP_EXCEEDED"


class TaskCycleError(GGModulesError):
    REASON = "TASK_CYCLE"


class DanglingEdgeError(GGModulesError):
    REASON = "DANGLING_EDGE"


class SystemPromptAlreadySetError(GGModulesError):
    """A window's system prompt is set once and never rewritten (R9)."""

    REASON = "SYSTEM_PROMPT_ALREADY_SET"


class InvalidFsmError(GGModulesError):
    """The FSM failed launch validation (R25); `violations` lists every problem at once."""

    REASON = "INVALID_FSM"

    @property
    def problems(self) -> list[str]:
        return [v.description for v in self.violations]


class TooLargeError(GGModulesError):
    REASON = "TOO_LARGE"


class WrongKindError(GGModulesError):
    REASON = "WRONG_KIND"


class RequestIdReusedError(GGModulesError):
    REASON = "REQUEST_ID_REUSED"


class RunNotRunningError(GGModulesError):
    REASON = "RUN_NOT_RUNNING"


class HistoryRequiredError(GGModulesError):
    """History cannot be turned off (R2)."""

    REASON = "HISTORY_REQUIRED"


class EntryNotFoundError(GGModulesError):
    """A task, issue, file, skill, view or block that does not exist."""

    REASON = "ENTRY_NOT_FOUND"


class AlreadyExistsError(GGModulesError):
    REASON = "ALREADY_EXISTS"


class WrongRunError(GGModulesError):
    """The request crosses runs (R50)."""

    REASON = "WRONG_RUN"


class UnknownToolError(GGModulesError):
    REASON = "UNKNOWN_TOOL"


class InvalidPageTokenError(GGModulesError):
    REASON = "INVALID_PAGE_TOKEN"


class ServiceUnavailableError(GGModulesError):
    """UNAVAILABLE, after every retry the policy allowed; `attempts` is how many attempts that was (gRPC makes
    them and does not report a count; it stops early only when the call's deadline is near). Raised both when
    the service itself cannot be reached and when it answers that a service it depends on cannot be."""

    REASON = "UNAVAILABLE"

    def __init__(
        self, code: grpc.StatusCode, reason: str, message: str, attempts: int = 1,
        metadata: dict[str, str] | None = None,
    ) -> None:
        # The service's ErrorInfo metadata (e.g. `dependency` and `address`: which service it could not
        # reach), with `attempts` beside it.
        super().__init__(code, reason, message, {**(metadata or {}), "attempts": str(attempts)})
        self.attempts = attempts


class HandedOnError(GGModulesError):
    """The agent already handed its modules on to a successor (R36): act as the successor instead."""

    REASON = "HANDED_ON"


class NoSuchEdgeError(GGModulesError):
    """The FSM has no edge from the agent's state to the one asked for; the message lists the edges out."""

    REASON = "NO_SUCH_EDGE"


class NotInFsmError(GGModulesError):
    """The agent runs in no FSM state, so it cannot take a transition (an exec needs none)."""

    REASON = "NOT_IN_FSM"


class RunInternalError(GGModulesError):
    """A transfer met a kind its predecessor does not hold: the suite's own defect (R26). The run has ended
    with status internal_error and nothing of the transfer was applied. Arrives as INTERNAL, the one
    INTERNAL that is not an `InternalError`."""

    REASON = "RUN_INTERNAL_ERROR"


class CursorExpiredError(GGModulesError):
    """A stream cursor older than what Telemetry retains: resume after `oldest_cursor - 1`, or from 0."""

    REASON = "CURSOR_EXPIRED"

    @property
    def oldest_cursor(self) -> int:
        """The oldest cursor still available (ErrorInfo metadata `oldest_cursor`)."""
        return int(self.metadata.get("oldest_cursor") or 0)


class CostNoneByConstructionError(GGModulesError):
    """A turn report gave a figure for the archive, whose per-turn cost is none by construction (R43)."""

    REASON = "COST_NONE_BY_CONSTRUCTION"


class TurnAlreadyReportedError(GGModulesError):
    """The agent already reported this turn (under another request id, or none): the first report stands.
    A retry that reuses the first report's request id gets its answer instead."""

    REASON = "TURN_ALREADY_REPORTED"

    @property
    def cursor(self) -> int:
        """Where the first report of the turn is on Telemetry's log (ErrorInfo metadata `cursor`)."""
        return int(self.metadata.get("cursor") or 0)


class TurnOutOfOrderError(GGModulesError):
    """A turn below the last one the agent reported (`metadata["last_turn"]`): turns only go forward."""

    REASON = "TURN_OUT_OF_ORDER"


class ExecLacksEdgeKindsError(GGModulesError):
    """An exec inside an FSM state to a profile lacking a kind the state's outgoing edges carry
    (`metadata["kinds"]`): exec to a profile that enables them, or with `leave_fsm=True`. Nothing changed."""

    REASON = "EXEC_LACKS_EDGE_KINDS"


class ContentionError(GGModulesError):
    """ABORTED: concurrent calls kept colliding in the service's database through every retry the service
    allows, and nothing was applied. The SDK sends the call again under the same request id (as for
    UNAVAILABLE) before raising this; retrying later with the same request id is safe."""

    REASON = "CONTENTION"


class InvalidQueryError(GGModulesError):
    """An archive search query that cannot be searched; `problem` says why (empty, too_long, too_many_terms,
    unclosed_quote, dangling_or, only_exclusions, only_common_words)."""

    REASON = "INVALID_QUERY"

    @property
    def problem(self) -> str:
        return self.metadata.get("problem", "")


class MalformedRequestError(GGModulesError):
    """The request body did not decode as the RPC's request message; nothing was read or changed."""

    REASON = "MALFORMED_REQUEST"


class CredentialMissingError(GGModulesError):
    """UNAUTHENTICATED: the call carried no credential. Give the client an operator credential
    (`operator_credential=`, or `./var/operator.jwt` from `ggmodules up`); agent credentials come with the
    answers that open agents."""

    REASON = "CREDENTIAL_MISSING"


class CredentialMalformedError(GGModulesError):
    """UNAUTHENTICATED: the credential is not a well-formed JWT."""

    REASON = "CREDENTIAL_MALFORMED"


class CredentialInvalidError(GGModulesError):
    """UNAUTHENTICATED: the credential's signature or claims do not verify (altered, or minted elsewhere)."""

    REASON = "CREDENTIAL_INVALID"


class CredentialExpiredError(GGModulesError):
    """UNAUTHENTICATED: the credential has expired."""

    REASON = "CREDENTIAL_EXPIRED"


class RoleNotPermittedError(GGModulesError):
    """PERMISSION_DENIED: the credential's role may not make this call (`metadata["allowed"]` lists the
    roles that may)."""

    REASON = "ROLE_NOT_PERMITTED"


class AgentMismatchError(GGModulesError):
    """PERMISSION_DENIED: the request names an acting agent other than the credential's."""

    REASON = "AGENT_MISMATCH"
class OutboxPrunedError(GGModulesError):
    """An outbox position older than what the outbox retains (ReadOutbox, WatchOutbox): resume after
    `oldest_origin_seq - 1` and expect a gap."""

    REASON = "OUTBOX_PRUNED"

    @property
    def oldest_origin_seq(self) -> int:
        """The oldest origin_seq still available (ErrorInfo metadata `oldest_origin_seq`)."""
        return int(self.metadata.get("oldest_origin_seq") or 0)


class AckBeyondHeadError(GGModulesError):
    """An AckOutbox position past the outbox's newest event; nothing was recorded."""

    REASON = "ACK_BEYOND_HEAD"


class DeadlineExceededError(GGModulesError):
    """The call's deadline passed before a service answered. Mutations may or may not have applied:
    retrying with the same request id is safe."""


class InternalError(GGModulesError):
    """INTERNAL or UNKNOWN: a defect in a service (R47), except a run ending under internal_error
    (`RunInternalError`: a refusal's reason always wins over its code)."""


class KindNotHeldError(GGModulesError):
    """The agent holds no module of that kind: raised by the SDK, before any call, for a module handle of a
    kind the agent's roster has off, and rebuilt from a service's KIND_NOT_HELD refusal."""

    REASON = "KIND_NOT_HELD"


class TransferNotCompletedError(GGModulesError):
    """Raised by the SDK for the successor of a transfer that is still pending, or failed (GetTransfer)."""


def error_from_status(
    code: grpc.StatusCode, details: str, status: status_pb2.Status | None, *, attempts: int = 1
) -> GGModulesError:
    """The typed exception for a non-OK status and its rich details (None when the service sent none)."""
    reason, metadata, violations = "", {}, []
    for any_detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        bad = error_details_pb2.BadRequest()
        if any_detail.Unpack(info) and info.domain == ERROR_DOMAIN:
            reason, metadata = info.reason, dict(info.metadata)
        elif any_detail.Unpack(bad):
            violations = [Violation(v.field, v.description) for v in bad.field_violations]
    message = status.message if status is not None else (details or "")
    if code == grpc.StatusCode.UNAVAILABLE:
        return ServiceUnavailableError(code, reason, message, attempts, metadata)
    if reason:  # the reason wins over the code: INTERNAL with RUN_INTERNAL_ERROR is a RunInternalError
        return GGModulesError.class_for(reason)(code, reason, message, metadata, violations)
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return DeadlineExceededError(code, "", message)
    if code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN):
        return InternalError(code, "", message)
    return GGModulesError(code, "", message, {}, violations)

