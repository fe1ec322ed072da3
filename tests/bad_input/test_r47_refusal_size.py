"""R47: a refusal carries its google.rpc.ErrorInfo whatever it quotes. A refusal travels in the trailers,
which grpc's Python client refuses beyond 16 KiB; on main a refusal quoting a long input (a 10,000-character
profile name, 5,000 dangling task ids) reached the client as RESOURCE_EXHAUSTED without any ErrorInfo.
runtime/errors.py bounds what a refusal quotes, in one place."""

from __future__ import annotations

import urllib.parse

import grpc
from google.rpc import status_pb2

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.core.errors import InvalidArgument, Reason
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.runtime.errors import MESSAGE_BYTES, to_status
from tests.harness import Suite, error_info, refused, stubs
from tests.harness.modulestore import contents, new_run, open_agent, write
from tests.harness.registry import full_profile

CLIENT_METADATA_LIMIT = 16 * 1024
SMILES = "\U0001f600" * 10_000


def test_r47_no_refusal_outgrows_the_trailers_a_client_reads_and_its_reason_survives() -> None:
    err = InvalidArgument(
        f"agent {SMILES!r} is bad; {'x' * 10_000} " + "word " * 5_000,
        reason=Reason.DANGLING_EDGE,
        metadata={f"key{i}": SMILES for i in range(40)},
        violations=[(SMILES, SMILES)] * 500,
    )
    status = to_status(err)
    sizes = {key: len(value) for key, value in status.trailing_metadata}
    encoded_message = urllib.parse.quote(status.details, safe=" ")  # grpc-message is percent-encoded
    assert sizes["grpc-status-details-bin"] * 4 / 3 + len(encoded_message) < 12 * 1024
    assert len(status.details.encode()) <= MESSAGE_BYTES and status.details.endswith("…")
    details = dict(status.trailing_metadata)["grpc-status-details-bin"]
    info = error_info(status_pb2.Status.FromString(details))
    assert info is not None and info.reason == "DANGLING_EDGE"


def test_r47_a_launch_refusal_quoting_a_10000_character_profile_name_keeps_its_error_info(
    suite: Suite,
) -> None:
    registry = stubs(suite.channel(suite.registry.address), "registry")
    request = pb.CreateRunRequest(name="long names", profiles=[full_profile("p" * 10_000)])
    refusal = refused(lambda: registry.CreateRun(request))
    info = refusal.info
    assert refusal.code is grpc.StatusCode.INVALID_ARGUMENT, refusal.message
    assert info is not None and info.reason == "INVALID_FIELD"
    assert "p" * 150 + "…" in refusal.message and "p" * 201 not in refusal.message


def test_r47_r48_5000_dangling_blockers_are_refused_with_their_error_info_and_nothing_changes(
    suite: Suite,
) -> None:
    modulestore = stubs(suite.channel(suite.modulestore.address), "modulestore")
    agent = open_agent(modulestore, new_run(), "coder-0")
    blockers = list(range(1_000_000, 1_005_000))
    task = svc.CreateTask(title="t", blocked_by=blockers)
    refusal = refused(lambda: write(modulestore, agent, c.KIND_TASKS, create_task=task))
    info = refusal.info
    assert refusal.code is grpc.StatusCode.INVALID_ARGUMENT, refusal.message
    assert info is not None and info.reason == "DANGLING_EDGE"
    assert len(info.metadata["tasks"].encode()) <= 256
    assert contents(modulestore, agent, c.KIND_TASKS).store.figures.writes == 0
