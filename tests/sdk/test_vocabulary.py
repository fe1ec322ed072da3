"""The SDK's words, error mapping and retry budget agree with the contracts they stand for."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import status_pb2

from ggmodules.common.v1 import common_pb2, module_pb2
from ggmodules.core.errors import Contention, InvalidArgument, Reason, UnknownKind
from ggmodules.modulestore.v1 import modulestore_pb2
from ggmodules.registry.v1 import registry_pb2
from ggmodules.runtime import housekeeping
from ggmodules.runtime.errors import to_status
from ggmodules.sdk import (
    ContentionError,
    InvalidFsmError,
    IssueStatus,
    Kind,
    MemoryScope,
    MemoryStrategy,
    Origin,
    RetryPolicy,
    RunStatus,
    SearchMode,
    ServiceUnavailableError,
    TaskStatus,
    UnknownKindError,
    Violation,
)
from ggmodules.sdk.errors import error_from_status
from ggmodules.sdk.retry import MAX_RETRY_SPAN_SECONDS, Attempts
from ggmodules.sdk.words import Word

VOCABULARIES: list[tuple[type[Word], object]] = [
    (Kind, common_pb2.Kind), (Origin, common_pb2.Origin), (MemoryScope, common_pb2.MemoryScope),
    (MemoryStrategy, common_pb2.MemoryStrategy), (TaskStatus, module_pb2.TaskStatus),
    (IssueStatus, module_pb2.IssueStatus), (RunStatus, registry_pb2.RunStatus),
    (SearchMode, modulestore_pb2.SearchMode),
]


@pytest.mark.parametrize(("words", "pb_enum"), VOCABULARIES, ids=lambda v: getattr(v, "__name__", ""))
def test_every_word_names_exactly_one_contract_value(words: type[Word], pb_enum: object) -> None:
    numbers = [n for n in pb_enum.values() if n != 0]  # type: ignore[attr-defined]
    assert [w.number for w in words] == numbers
    assert [words.from_number(n) for n in numbers] == list(words)
    assert words.from_number(0) is None


def test_r1_kind_words_are_the_six_in_kind_order() -> None:
    assert [str(k) for k in Kind] == ["history", "memories", "tasks", "board", "skills", "archive"]
    assert Kind.parse("tasks") == "tasks"


def _over_the_wire(err: Exception) -> tuple[grpc.StatusCode, str, status_pb2.Status]:
    """What a client receives for a domain error: the runtime's status, rebuilt from its trailer."""
    status = to_status(err)  # type: ignore[arg-type]
    (key, raw), = status.trailing_metadata
    assert key == "grpc-status-details-bin"
    return status.code, status.details, status_pb2.Status.FromString(raw)


def test_r47_the_services_mapping_and_the_sdks_agree_on_reason_metadata_and_violations() -> None:
    err = error_from_status(*_over_the_wire(UnknownKind("gossip", field="profiles[p].modules")))
    assert isinstance(err, UnknownKindError)
    assert err.metadata["value"] == "gossip"
    assert err.violations[0].field == "profiles[p].modules"

    fsm = InvalidArgument("the FSM is invalid", reason=Reason.INVALID_FSM,
                          violations=[("edges[0].carry", "gossip"), ("edges[1].carry", "archive")])
    err = error_from_status(*_over_the_wire(fsm))
    assert isinstance(err, InvalidFsmError) and err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.violations == (Violation("edges[0].carry", "gossip"), Violation("edges[1].carry", "archive"))


def test_unavailable_becomes_service_unavailable_with_its_attempt_count() -> None:
    err = error_from_status(grpc.StatusCode.UNAVAILABLE, "connection refused", None, attempts=4)
    assert isinstance(err, ServiceUnavailableError) and err.attempts == 4


def test_r47_contention_becomes_a_typed_contention_error() -> None:
    refusal = Contention("lost to concurrent calls 6 times; retry with the same request id")
    err = error_from_status(*_over_the_wire(refusal))
    assert isinstance(err, ContentionError) and err.code == grpc.StatusCode.ABORTED
    assert err.reason == "CONTENTION"


def test_backoff_grows_and_stays_bounded() -> None:
    policy = RetryPolicy(initial_backoff=0.1, max_backoff=1.0, multiplier=2.0, jitter=0.5)
    assert [policy.delay(n, 0.0) for n in range(1, 6)] == [0.1, 0.2, 0.4, 0.8, 1.0]
    assert policy.delay(3, 0.999) == pytest.approx(0.4 * 0.5005)


def test_only_unavailable_and_aborted_on_a_retryable_call_are_retried_within_attempts_and_deadline() -> None:
    policy = RetryPolicy(max_attempts=3, initial_backoff=0.01, jitter=0)
    read = Attempts(policy, 60, retryable=True)
    read.timeout()
    assert read.retry_after(grpc.StatusCode.DEADLINE_EXCEEDED) is None
    assert read.retry_after(grpc.StatusCode.INTERNAL) is None
    assert read.retry_after(grpc.StatusCode.UNAVAILABLE) == 0.01
    assert read.retry_after(grpc.StatusCode.ABORTED) == 0.01  # contention: nothing was applied
    read.timeout()
    read.timeout()
    assert read.retry_after(grpc.StatusCode.UNAVAILABLE) is None  # third attempt was the last

    unkeyed = Attempts(policy, 60, retryable=False)
    unkeyed.timeout()
    assert unkeyed.retry_after(grpc.StatusCode.UNAVAILABLE) is None
    assert unkeyed.retry_after(grpc.StatusCode.ABORTED) is None

    short = Attempts(RetryPolicy(initial_backoff=5, jitter=0), 1, retryable=True)
    short.timeout()
    assert short.retry_after(grpc.StatusCode.UNAVAILABLE) is None  # the backoff would outlive the deadline


def test_no_retry_starts_after_the_retry_span_even_without_a_deadline() -> None:
    """A request id is forgotten after the services' request-log retention: a retry later than the SDK's
    retry span (kept below it) could be applied twice, so the SDK never sends one (issue 14)."""
    now = [0.0]
    policy = RetryPolicy(max_attempts=10, initial_backoff=1, max_backoff=1, jitter=0)
    call = Attempts(policy, None, retryable=True, clock=lambda: now[0])
    call.timeout()
    assert call.retry_after(grpc.StatusCode.UNAVAILABLE) == 1
    now[0] = MAX_RETRY_SPAN_SECONDS - 0.5  # one attempt hung for almost the whole span (no deadline)
    call.timeout()
    assert call.retry_after(grpc.StatusCode.UNAVAILABLE) is None
    assert MAX_RETRY_SPAN_SECONDS == housekeeping.MAX_RETRY_SPAN_SECONDS
    assert MAX_RETRY_SPAN_SECONDS < housekeeping.DEFAULT_REQUEST_WINDOW
