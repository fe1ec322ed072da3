"""R50: the matrix: every RPC called with each kind of credential (none, another run's agent, a read-only
holder, a handed-on agent, observer, operator, service), and the SDK keeping the credentials its answers
carry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from ggmodules.common.v1 import outbox_service_pb2 as outbox
from ggmodules.internal.v1 import modulestore_internal_service_pb2 as ms_internal
from ggmodules.internal.v1 import registry_internal_service_pb2 as reg_internal
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from ggmodules.transfer.v1 import transfer_service_pb2 as tr
from tests.auth._support.runs import DENIED, UNAUTH, Run, call, history_append, rid, start_run, stores_of
from tests.harness import CREDENTIALS, NONE, Suite
from tests.harness.registry import full_profile

# ---- the matrix: every RPC x every kind of caller --------------------------------------------------------

AGENT, OPERATOR, OBSERVER, SERVICE = "agent", "operator", "observer", "service"
EVERYONE = {AGENT, OPERATOR, OBSERVER, SERVICE}
READERS = {AGENT, OPERATOR, OBSERVER}
# column -> the role of its credential (None: no credential)
COLUMNS = {"none": None, "other_run_agent": AGENT, "read_only_holder": AGENT, "handed_on_agent": AGENT,
           "observer": OBSERVER, "operator": OPERATOR, "service": SERVICE}
AUTH_REFUSALS = {(DENIED, "ROLE_NOT_PERMITTED"), (DENIED, "WRONG_RUN"), (DENIED, "AGENT_MISMATCH")}
ADMITTED = "admitted"
# Never the answer to an admitted call: not authenticated, or a defect (R47).
NEVER = (UNAUTH, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN)


@dataclass(frozen=True)
class Rpc:
    service: str
    method: str
    allowed: set[str]
    # The run the request names: "X" (the run the columns belong to), "Z" (a run a call may end or change
    # without spoiling the other cells) or "" (none).
    run: str
    build: Callable[[Any], Any]
    every_run_only: bool = False
    # Refusals the state of the run decides for some columns (a handed-on agent, a read-only store).
    state: dict[str, tuple[grpc.StatusCode, str]] | None = None


@dataclass
class Cell:
    x: Run
    z: Run
    acting: str
    store: str
    agent_column: bool

    def run(self, which: str) -> str:
        return self.x.run_id if which == "X" else self.z.run_id


def _rpcs() -> list[Rpc]:
    fp = grpc.StatusCode.FAILED_PRECONDITION
    return [
        Rpc("registry", "CreateRun", {OPERATOR}, "", lambda c: reg.CreateRunRequest(
            request_id=rid(), name="m", profiles=[full_profile("p")]), every_run_only=True),
        Rpc("registry", "GetRun", EVERYONE, "X", lambda c: reg.GetRunRequest(run_id=c.x.run_id)),
        Rpc("registry", "ListRuns", READERS, "", lambda c: reg.ListRunsRequest()),
        Rpc("registry", "FinishRun", {OPERATOR}, "Z", lambda c: reg.FinishRunRequest(
            request_id=rid(), run_id=c.z.run_id)),
        Rpc("registry", "OpenInstance", {OPERATOR}, "X", lambda c: reg.OpenInstanceRequest(
            request_id=rid(), run_id=c.x.run_id, profile="planner")),
        Rpc("registry", "SpawnSubagent", {AGENT, OPERATOR}, "X", lambda c: reg.SpawnSubagentRequest(
            request_id=rid(), run_id=c.x.run_id, parent_agent_id=c.acting, profile="planner"),
            state={"handed_on_agent": (fp, "HANDED_ON")}),
        Rpc("registry", "ForkInstance", {AGENT, OPERATOR}, "X", lambda c: reg.ForkInstanceRequest(
            request_id=rid(), run_id=c.x.run_id, agent_id=c.acting),
            state={"handed_on_agent": (fp, "HANDED_ON")}),
        Rpc("registry", "GetInstance", EVERYONE, "X", lambda c: reg.GetInstanceRequest(
            run_id=c.x.run_id, agent_id=c.acting)),
        Rpc("registry", "ListInstances", EVERYONE, "X",
            lambda c: reg.ListInstancesRequest(run_id=c.x.run_id)),
        Rpc("registry", "PlanSuccessor", {SERVICE}, "Z", lambda c: reg_internal.PlanSuccessorRequest(
            request_id=rid(), run_id=c.z.run_id, predecessor_agent_id="nobody-0", cause="exec",
            profile="planner")),
        Rpc("registry", "ReserveSuccessor", {SERVICE}, "Z", lambda c: reg.ReserveSuccessorRequest(
            request_id=rid(), run_id=c.z.run_id, predecessor_agent_id="nobody-0", profile="planner",
            cause="exec")),
        Rpc("registry", "CompleteSuccessor", {SERVICE}, "Z", lambda c: reg.CompleteSuccessorRequest(
            request_id=rid(), run_id=c.z.run_id, agent_id="nobody-0")),
        Rpc("registry", "ReleaseSuccessor", {SERVICE}, "Z", lambda c: reg.ReleaseSuccessorRequest(
            request_id=rid(), run_id=c.z.run_id, agent_id="nobody-0")),
        Rpc("registry", "FailRun", {SERVICE}, "Z", lambda c: reg.FailRunRequest(
            request_id=rid(), run_id=c.z.run_id, detail="matrix")),
        Rpc("registry", "WatchOutbox", {SERVICE}, "", lambda c: outbox.WatchOutboxRequest(heartbeat_ms=50)),
        Rpc("registry", "AckOutbox", {SERVICE}, "", lambda c: outbox.AckOutboxRequest(follower="matrix")),
        Rpc("modulestore", "Write", {AGENT}, "X", lambda c: history_append(c.x.run_id, c.acting, c.store),
            state={"handed_on_agent": (DENIED, "HANDED_ON"), "read_only_holder": (DENIED, "READ_ONLY")}),
        Rpc("modulestore", "GetStore", READERS, "X", lambda c: svc.GetStoreRequest(
            run_id=c.x.run_id, store_id=c.store, agent_id=c.acting if c.agent_column else "")),
        Rpc("modulestore", "ListStores", READERS, "X", lambda c: svc.ListStoresRequest(run_id=c.x.run_id)),
        Rpc("modulestore", "RenderPrompt", {AGENT}, "X", lambda c: svc.RenderPromptRequest(
            run_id=c.x.run_id, agent_id=c.acting)),
        Rpc("modulestore", "ListTools", EVERYONE, "", lambda c: svc.ListToolsRequest()),
        Rpc("modulestore", "CallTool", {AGENT}, "X", lambda c: svc.CallToolRequest(
            request_id=rid(), run_id=c.x.run_id, agent_id=c.acting, tool_name="list_issues",
            arguments_json="{}")),
        Rpc("modulestore", "SearchArchive", {AGENT}, "X", lambda c: svc.SearchArchiveRequest(
            run_id=c.x.run_id, agent_id=c.acting, store_id="archive-0", query="x")),
        Rpc("modulestore", "BindInstance", {SERVICE}, "", lambda c: svc.BindInstanceRequest(
            request_id=rid(), run_id=c.z.run_id, agent_id="bound-0", profile="p", cause="open")),
        Rpc("modulestore", "Handover", {SERVICE}, "", lambda c: svc.HandoverRequest(
            request_id=rid(), run_id=c.z.run_id, predecessor_agent_id="nobody-0", successor_agent_id="x-0",
            profile="planner", cause="exec")),
        Rpc("modulestore", "ReadOutbox", {SERVICE}, "", lambda c: svc.ReadOutboxRequest(page_size=1)),
        Rpc("modulestore", "EndRun", {SERVICE}, "", lambda c: ms_internal.EndRunRequest(
            run_id=c.z.run_id, status="finished")),
        Rpc("modulestore", "WatchOutbox", {SERVICE}, "",
            lambda c: outbox.WatchOutboxRequest(heartbeat_ms=50)),
        Rpc("modulestore", "AckOutbox", {SERVICE}, "", lambda c: outbox.AckOutboxRequest(follower="matrix")),
        Rpc("transfer", "Transition", {AGENT}, "X", lambda c: tr.TransitionRequest(
            request_id=rid(), run_id=c.x.run_id, agent_id=c.acting, to_state="plan")),
        Rpc("transfer", "Exec", {AGENT}, "X", lambda c: tr.ExecRequest(
            request_id=rid(), run_id=c.x.run_id, agent_id=c.acting, profile="nobody")),
        Rpc("transfer", "GetTransfer", READERS, "X", lambda c: tr.GetTransferRequest(
            run_id=c.x.run_id, transfer_id="none")),
        Rpc("telemetry", "Subscribe", READERS, "X", lambda c: tel.SubscribeRequest(
            run_id=c.x.run_id, heartbeat_ms=50)),
        Rpc("telemetry", "ReportTurn", {AGENT}, "X", lambda c: tel.ReportTurnRequest(
            request_id=rid(), run_id=c.x.run_id, agent_id=c.acting, turn=1)),
        Rpc("telemetry", "InspectInstances", READERS, "X", lambda c: tel.InspectInstancesRequest(
            run_id=c.x.run_id)),
        Rpc("telemetry", "InspectModules", READERS, "X",
            lambda c: tel.InspectModulesRequest(run_id=c.x.run_id)),
        Rpc("telemetry", "InspectAgents", READERS, "X",
            lambda c: tel.InspectAgentsRequest(run_id=c.x.run_id)),
        Rpc("telemetry", "GetStoreDetail", READERS, "X", lambda c: tel.GetStoreDetailRequest(
            run_id=c.x.run_id, store_id=c.store)),
    ]


def expected(rpc: Rpc, column: str, credential_run: str, target_run: str) -> Any:
    role = COLUMNS[column]
    if role is None:
        return (UNAUTH, "CREDENTIAL_MISSING")
    if role not in rpc.allowed:
        return (DENIED, "ROLE_NOT_PERMITTED")
    scoped = credential_run != "*"
    if scoped and (rpc.every_run_only or (target_run and target_run != credential_run)):
        return (DENIED, "WRONG_RUN")
    return (rpc.state or {}).get(column, ADMITTED)


def test_r50_every_rpc_with_every_kind_of_credential(suite: Suite) -> None:
    x, y, z = start_run(suite), start_run(suite), start_run(suite)
    suite.telemetry  # noqa: B018 -- started on first use
    x_stores = stores_of(suite, x, x.agent_id)
    columns = {  # column -> (credential, the run it opens, acting agent, store a write or read names)
        "none": (NONE, "", x.agent_id, x_stores["history"]),
        "other_run_agent": (y.agent, y.run_id, x.agent_id, x_stores["history"]),
        "read_only_holder": (x.reader, x.run_id, x.reader_id, stores_of(suite, x, x.reader_id)["memories"]),
        "handed_on_agent": (x.handed, x.run_id, x.handed_id, stores_of(suite, x, x.successor_id)["history"]),
        "observer": (x.observer, x.run_id, x.agent_id, x_stores["history"]),
        "operator": (CREDENTIALS.operator, "*", x.agent_id, x_stores["history"]),
        "service": (CREDENTIALS.service, "*", x.agent_id, x_stores["history"]),
    }
    wrong = []
    for rpc in _rpcs():
        for column, (credential, opens, acting, store) in columns.items():
            cell = Cell(x, z, acting, store, COLUMNS[column] == AGENT)
            target = cell.run(rpc.run) if rpc.run else ""
            want = expected(rpc, column, opens, target)
            got = call(suite, rpc.service, credential, rpc.method, rpc.build(cell))
            if want == ADMITTED:
                if got in AUTH_REFUSALS or got[0] in NEVER:
                    wrong.append(f"{rpc.method} x {column}: admitted expected, got {got}")
            elif got != want:
                wrong.append(f"{rpc.method} x {column}: {want} expected, got {got}")
    assert not wrong, "\n".join(wrong)


def test_r50_the_sdk_keeps_the_credentials_its_answers_carry(suite: Suite) -> None:
    """A runtime holding only an operator credential opens, forks and hands on agents and writes as each;
    the credential of an agent opened elsewhere is added by hand."""
    from ggmodules.sdk import Client, Profile, RoleNotPermittedError
    from ggmodules.sdk.config import ClientConfig

    config = ClientConfig(operator_credential=CREDENTIALS.operator)
    addresses = (suite.registry.address, suite.modulestore.address, suite.transfer.address)
    with Client(*addresses, config=config) as gg:
        run = gg.create_run("sdk", [Profile("planner", tasks=True), Profile("coder", tasks=True)])
        planner = gg.open_instance(run.id, "planner")
        planner.tasks.create("one")
        copy = planner.fork()
        copy.tasks.create("two")
        coder = planner.exec("coder").successor
        coder.tasks.create("three")
        with Client(suite.registry.address, suite.modulestore.address, config=config) as other:
            stranger = other.agent(run.id, copy.id)
            with pytest.raises(RoleNotPermittedError):  # no credential for it: the operator's is sent
                stranger.tasks.create("four")
            other.add_credential(run.id, copy.id, CREDENTIALS.signer.agent(run.id, copy.id))
            stranger.tasks.create("four")
        assert [t.title for t in copy.tasks.contents().tasks] == ["one", "two", "four"]
