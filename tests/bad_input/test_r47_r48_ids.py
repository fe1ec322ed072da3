"""R47, R48: ids and request ids are held to one rule in every service (core/ids.py), before any SQL.

Found by fuzzing main: a NUL in an id answered INTERNAL on PostgreSQL (and NOT_FOUND on SQLite, as if the
id were merely unknown); a request id of 3,000 characters answered INTERNAL on PostgreSQL (index row too
large); a 10,000-character id came back quoted in a refusal whose trailers the client could not read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_service_pb2 as pb
from ggmodules.telemetry.v1 import telemetry_pb2
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as tel_grpc
from ggmodules.transfer.v1 import transfer_service_pb2 as tr
from ggmodules.transfer.v1 import transfer_service_pb2_grpc as tr_grpc
from tests.harness import Suite, refused
from tests.harness import stubs as service_stubs
from tests.harness.registry import (
    all_run_ids,
    create_run,
    edge,
    fsm,
    full_profile,
    instance_ids,
    open_instance,
)
from tests.harness.registry import store_ids as stores_of
from tests.harness.transfers import instance

NUL = "\x00"


class Stubs:
    def __init__(self, suite: Suite) -> None:
        self.registry = service_stubs(suite.channel(suite.registry.address), "registry")
        self.modulestore = service_stubs(suite.channel(suite.modulestore.address), "modulestore")
        self.transfer = tr_grpc.TransferServiceStub(suite.channel(suite.transfer.address))
        self.telemetry = tel_grpc.TelemetryServiceStub(suite.channel(suite.telemetry.address))


@pytest.fixture(scope="module")
def stubs(suite: Suite) -> Stubs:
    return Stubs(suite)


def new_run(stubs: Stubs) -> tuple[str, str]:
    """A running FSM run and its first planner."""
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code", "history"))
    run = create_run(stubs.registry, full_profile("planner"), full_profile("coder"), machine=machine)
    return run.run_id, open_instance(stubs.registry, run.run_id, "planner").agent_id


# The six RPCs the fuzzer found answering INTERNAL on PostgreSQL: (field with the NUL, the call).
NUL_CALLS: dict[str, tuple[str, Callable[[Stubs, str, str], Any]]] = {
    "GetRun": ("run_id", lambda s, run, agent: s.registry.GetRun(pb.GetRunRequest(run_id=run + NUL))),
    "OpenInstance": (
        "run_id",
        lambda s, run, agent: s.registry.OpenInstance(
            pb.OpenInstanceRequest(run_id=run + NUL, profile="planner")
        ),
    ),
    "SpawnSubagent": (
        "parent_agent_id",
        lambda s, run, agent: s.registry.SpawnSubagent(
            pb.SpawnSubagentRequest(run_id=run, parent_agent_id=agent + NUL, profile="coder")
        ),
    ),
    "ListInstances": (
        "run_id",
        lambda s, run, agent: s.registry.ListInstances(pb.ListInstancesRequest(run_id=run + NUL)),
    ),
    "Exec": (
        "agent_id",
        lambda s, run, agent: s.transfer.Exec(
            tr.ExecRequest(run_id=run, agent_id=agent + NUL, profile="coder")
        ),
    ),
    "GetTransfer": (
        "transfer_id",
        lambda s, run, agent: s.transfer.GetTransfer(
            tr.GetTransferRequest(run_id=run, transfer_id="t" + NUL)
        ),
    ),
}
INVALID = (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")


@pytest.mark.parametrize("rpc", sorted(NUL_CALLS))
def test_r47_r48_a_nul_in_an_id_is_refused_invalid_argument_naming_the_field(
    stubs: Stubs, rpc: str
) -> None:
    field, call = NUL_CALLS[rpc]
    run_id, agent_id = new_run(stubs)
    code, reason, metadata, message = refused(lambda: call(stubs, run_id, agent_id))
    assert (code, reason, metadata.get("field")) == (*INVALID, field)
    assert "U+0000" in message
    assert instance_ids(stubs.registry, run_id) == [agent_id]
    assert not instance(stubs.registry, run_id, agent_id).successor_agent_id


LONG_REQUEST_ID = "r" * 3_000


def test_r47_r48_a_3000_character_request_id_to_create_run_is_refused_and_creates_nothing(
    stubs: Stubs,
) -> None:
    before = set(all_run_ids(stubs.registry))
    request = pb.CreateRunRequest(
        request_id=LONG_REQUEST_ID, name="long", profiles=[full_profile("planner")]
    )
    code, reason, metadata, _ = refused(lambda: stubs.registry.CreateRun(request))
    assert (code, reason, metadata.get("field")) == (*INVALID, "request_id")
    assert set(all_run_ids(stubs.registry)) == before


def test_r47_r48_a_3000_character_request_id_to_write_is_refused_and_writes_nothing(
    stubs: Stubs,
) -> None:
    run_id, agent_id = new_run(stubs)
    history = stores_of(instance(stubs.registry, run_id, agent_id))["history"]
    request = svc.WriteRequest(
        request_id=LONG_REQUEST_ID, run_id=run_id, agent_id=agent_id, store_id=history,
        append_messages=svc.AppendMessages(messages=[ms.MessageInput(role="user", content="hi")]),
    )
    code, reason, metadata, _ = refused(lambda: stubs.modulestore.Write(request))
    assert (code, reason, metadata.get("field")) == (*INVALID, "request_id")
    read = svc.GetStoreRequest(run_id=run_id, store_id=history, agent_id=agent_id)
    assert stubs.modulestore.GetStore(read).store.figures.writes == 0


def test_r47_r48_a_3000_character_request_id_to_transition_is_refused_and_moves_nothing(
    stubs: Stubs,
) -> None:
    run_id, agent_id = new_run(stubs)
    request = tr.TransitionRequest(
        request_id=LONG_REQUEST_ID, run_id=run_id, agent_id=agent_id, to_state="code"
    )
    code, reason, metadata, _ = refused(lambda: stubs.transfer.Transition(request))
    assert (code, reason, metadata.get("field")) == (*INVALID, "request_id")
    assert instance_ids(stubs.registry, run_id) == [agent_id]


def test_r47_a_3000_character_request_id_to_report_turn_is_refused(stubs: Stubs) -> None:
    run_id, agent_id = new_run(stubs)
    history = stores_of(instance(stubs.registry, run_id, agent_id))["history"]
    request = tel.ReportTurnRequest(
        request_id=LONG_REQUEST_ID, run_id=run_id, agent_id=agent_id, turn=1,
        modules=[telemetry_pb2.ModuleTokens(kind=c.KIND_HISTORY, store_id=history, tokens=10)],
    )
    code, reason, metadata, _ = refused(lambda: stubs.telemetry.ReportTurn(request))
    assert (code, reason, metadata.get("field")) == (*INVALID, "request_id")


HUGE_ID = "x" * 10_000


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.registry.GetRun(pb.GetRunRequest(run_id=HUGE_ID)),
        lambda s: s.registry.GetInstance(pb.GetInstanceRequest(run_id="run-1", agent_id=HUGE_ID)),
        lambda s: s.transfer.GetTransfer(tr.GetTransferRequest(run_id=HUGE_ID, transfer_id="t")),
        lambda s: s.transfer.Exec(tr.ExecRequest(run_id="run-1", agent_id="a-0", profile=HUGE_ID)),
        lambda s: s.modulestore.RenderPrompt(svc.RenderPromptRequest(run_id="run-1", agent_id=HUGE_ID)),
        lambda s: s.telemetry.InspectAgents(tel.InspectAgentsRequest(run_id=HUGE_ID)),
    ],
    ids=["GetRun", "GetInstance", "GetTransfer", "Exec", "RenderPrompt", "InspectAgents"],
)
def test_r47_a_10000_character_id_is_refused_with_its_error_info_and_without_echoing_it(
    stubs: Stubs, call: Callable[[Stubs], Any]
) -> None:
    code, reason, metadata, message = refused(lambda: call(stubs))
    assert (code, reason) == INVALID
    assert metadata.get("limit") == "128" and "10000 characters" in message
    assert HUGE_ID[:129] not in message and all(HUGE_ID[:129] not in v for v in metadata.values())
