"""The SDK's words and error mapping agree with the contracts they stand for."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import status_pb2

from ggmodules.common.v1 import common_pb2, module_pb2
from ggmodules.core.errors import Contention, InvalidArgument, Reason
from ggmodules.core.kinds import UnknownKind
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
    RunStatus,
    SearchMode,
    ServiceUnavailableError,
    TaskStatus,
    UnknownKindError,
    Violation,
)
from ggmodules.sdk.config import MAX_RETRY_SPAN_SECONDS, ClientConfig
from ggmodules.sdk.errors import error_from_status
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


def test_no_retry_starts_after_the_retry_span_even_without_a_deadline() -> None:
    """A request id is forgotten after the services' request-log retention: gRPC retries only within a
    call's deadline, and the SDK never gives a unary call one longer than its retry span (kept below the
    retention), so a retry that could be applied twice is never sent (issue 14)."""
    assert ClientConfig(timeout=None).call_timeout == MAX_RETRY_SPAN_SECONDS
    assert ClientConfig(timeout=86_400).call_timeout == MAX_RETRY_SPAN_SECONDS
    assert ClientConfig(timeout=3).call_timeout == 3
    assert MAX_RETRY_SPAN_SECONDS == housekeeping.MAX_RETRY_SPAN_SECONDS
    assert MAX_RETRY_SPAN_SECONDS < housekeeping.DEFAULT_REQUEST_WINDOW
