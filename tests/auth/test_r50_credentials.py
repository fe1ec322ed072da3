"""R50: run-scoped credentials. Every RPC checks the credential it carries before anything else runs; the
issue's attacks (impersonation, invented binds, a direct Handover, FailRun and the outboxes read by anyone,
writes after a run's end, a handed-on agent as a source) are each a named test here, and the matrix at the
end calls every RPC with each kind of credential."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
import jwt
import pytest

from ggmodules.common.v1 import outbox_service_pb2 as outbox
from ggmodules.internal.v1 import modulestore_internal_service_pb2 as ms_internal
from ggmodules.internal.v1 import registry_internal_service_pb2 as reg_internal
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.runtime.credentials import Role, Signer, new_signing_key
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from ggmodules.transfer.v1 import transfer_service_pb2 as tr
from tests.harness import CREDENTIALS, NONE, Suite, status_of, stubs
from tests.registry.builders import edge, fsm, full_profile, store_ids

DENIED = grpc.StatusCode.PERMISSION_DENIED
UNAUTH = grpc.StatusCode.UNAUTHENTICATED


def rid() -> str:
    return uuid.uuid4().hex


@dataclass
class Run:
    run_id: str
    operator: str
    observer: str
    agent_id: str
    agent: str  # the agent's credential
    reader_id: str
    reader: str  # a holder of a read-only memories store
    handed_id: str
    handed: str  # an agent that transitioned: handed on
    successor_id: str


def start_run(suite: Suite) -> Run:
    """A run with a writer, a read-only holder and a handed-on agent, opened as a runtime would."""
    registry = stubs(suite.channel(suite.registry.address, CREDENTIALS.operator), "registry")
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code", "history"))
    created = registry.CreateRun(reg.CreateRunRequest(
        request_id=rid(), name="auth", board_enabled=True, fsm=machine,
        profiles=[full_profile("planner"), full_profile("coder", read_only=True, scope=2)],
    ))
    run_id = created.run.run_id
    opened = registry.OpenInstance(
        reg.OpenInstanceRequest(request_id=rid(), run_id=run_id, profile="planner")
    )
    reader = registry.OpenInstance(
        reg.OpenInstanceRequest(request_id=rid(), run_id=run_id, profile="coder", fsm_state="code")
    )
    leaving = registry.OpenInstance(
        reg.OpenInstanceRequest(request_id=rid(), run_id=run_id, profile="planner")
    )
    transfer = stubs(suite.channel(suite.transfer.address, leaving.credential), "transfer")
    moved = transfer.Transition(tr.TransitionRequest(
        request_id=rid(), run_id=run_id, agent_id=leaving.instance.agent_id, to_state="code"
    ))
    assert moved.successor_credential
    return Run(run_id, created.operator_credential, created.observer_credential,
               opened.instance.agent_id, opened.credential, reader.instance.agent_id, reader.credential,
               leaving.instance.agent_id, leaving.credential, moved.transfer.successor_agent_id)


@pytest.fixture()
def runs(suite: Suite) -> tuple[Run, Run]:
    return start_run(suite), start_run(suite)


def call(
    suite: Suite, service: str, credential: str, method: str, request: Any
) -> tuple[grpc.StatusCode, str]:
    """The status and reason of one call (OK, "" when it was answered); a stream's first item decides."""
    stub = stubs(suite.channel(getattr(suite, service).address, credential), service)
    try:
        answer = getattr(stub, method)(request, timeout=20)
        if hasattr(answer, "__next__"):
            next(answer)
            answer.cancel()
    except grpc.RpcError as err:
        return status_of(err)
    return grpc.StatusCode.OK, ""


def history_append(run_id: str, agent_id: str, store_id: str) -> svc.WriteRequest:
    return svc.WriteRequest(
        request_id=rid(), run_id=run_id, agent_id=agent_id, store_id=store_id,
        append_messages=svc.AppendMessages(messages=[ms.MessageInput(role="user", content="x")]),
    )


def stores_of(suite: Suite, run: Run, agent_id: str) -> dict[str, str]:
    registry = stubs(suite.channel(suite.registry.address, run.operator), "registry")
    found = registry.GetInstance(reg.GetInstanceRequest(run_id=run.run_id, agent_id=agent_id))
    return store_ids(found.instance)


# ---- the attacks of the issue, one test each ---------------------------------------------------------


def test_r50_a_write_naming_another_runs_agent_is_refused(suite: Suite, runs: tuple[Run, Run]) -> None:
    mine, theirs = runs
    store = stores_of(suite, theirs, theirs.agent_id)["history"]
    # My credential, their run and agent: a credential for one run opens nothing in another.
    impersonate = history_append(theirs.run_id, theirs.agent_id, store)
    assert call(suite, "modulestore", mine.agent, "Write", impersonate) == (DENIED, "WRONG_RUN")
    # Within my run, acting as another agent of it: refused too.
    as_another = history_append(mine.run_id, mine.reader_id, store)
    assert call(suite, "modulestore", mine.agent, "Write", as_another) == (DENIED, "AGENT_MISMATCH")
    assert call(suite, "modulestore", theirs.agent, "Write",
                history_append(theirs.run_id, theirs.agent_id, store)) == (grpc.StatusCode.OK, "")


def test_r50_bind_instance_for_an_invented_agent_is_refused(suite: Suite, runs: tuple[Run, Run]) -> None:
    run, _ = runs
    invent = svc.BindInstanceRequest(
        request_id=rid(), run_id=run.run_id, agent_id="intruder-0", profile="coder", cause="open",
        bindings=[ms.Binding(kind=1, action=ms.BIND_ACTION_CREATE, may_write=True)],
    )
    for credential in (run.agent, run.operator, run.observer):
        refusal = call(suite, "modulestore", credential, "BindInstance", invent)
        assert refusal == (DENIED, "ROLE_NOT_PERMITTED")
    # The public service no longer has it at all.
    channel = suite.channel(suite.modulestore.address, run.agent)
    with pytest.raises(grpc.RpcError) as gone:
        channel.unary_unary("/ggmodules.modulestore.v1.ModuleStoreService/BindInstance")(
            invent.SerializeToString(), timeout=10
        )
    assert gone.value.code() is grpc.StatusCode.UNIMPLEMENTED


def test_r50_handover_called_by_an_agent_is_refused_and_the_owner_still_writes(
    suite: Suite, runs: tuple[Run, Run]
) -> None:
    run, _ = runs
    store = stores_of(suite, run, run.agent_id)["history"]
    grab = svc.HandoverRequest(
        request_id=rid(), run_id=run.run_id, predecessor_agent_id=run.agent_id,
        successor_agent_id="thief-0", profile="planner", cause="exec",
    )
    for credential in (run.agent, run.operator):
        assert call(suite, "modulestore", credential, "Handover", grab) == (DENIED, "ROLE_NOT_PERMITTED")
    assert call(suite, "modulestore", run.agent, "Write", history_append(run.run_id, run.agent_id, store)) \
        == (grpc.StatusCode.OK, "")


def test_r50_fail_run_and_the_outboxes_need_a_service_credential(suite: Suite, runs: tuple[Run, Run]) -> None:
    run, other = runs
    fail = reg.FailRunRequest(request_id=rid(), run_id=other.run_id, detail="not yours")
    for credential in (run.agent, run.operator, CREDENTIALS.operator):
        assert call(suite, "registry", credential, "FailRun", fail) == (DENIED, "ROLE_NOT_PERMITTED")
    read = svc.ReadOutboxRequest()
    watch = outbox.WatchOutboxRequest(heartbeat_ms=50)
    for credential in (run.agent, run.observer, CREDENTIALS.operator):
        assert call(suite, "modulestore", credential, "ReadOutbox", read) == (DENIED, "ROLE_NOT_PERMITTED")
        assert call(suite, "registry", credential, "WatchOutbox", watch) == (DENIED, "ROLE_NOT_PERMITTED")
    # Every run's stream: the operator of every run only; a run's own credentials see their run.
    everything = tel.SubscribeRequest(heartbeat_ms=50)
    suite.telemetry  # noqa: B018 -- started on first use
    for credential in (run.operator, run.observer, run.agent):
        assert call(suite, "telemetry", credential, "Subscribe", everything) == (DENIED, "WRONG_RUN")
    assert call(suite, "telemetry", run.observer, "Subscribe", tel.SubscribeRequest(run_id=other.run_id)) \
        == (DENIED, "WRONG_RUN")
    assert call(suite, "telemetry", run.observer, "Subscribe",
                tel.SubscribeRequest(run_id=run.run_id, heartbeat_ms=50)) == (grpc.StatusCode.OK, "")
    assert call(suite, "telemetry", CREDENTIALS.operator, "Subscribe", everything) == (grpc.StatusCode.OK, "")
    assert call(suite, "registry", CREDENTIALS.service, "FailRun", fail) == (grpc.StatusCode.OK, "")


def test_r50_writes_stop_when_a_run_finishes(suite: Suite, runs: tuple[Run, Run]) -> None:
    run, _ = runs
    store = stores_of(suite, run, run.agent_id)["history"]
    finish = reg.FinishRunRequest(request_id=rid(), run_id=run.run_id)
    assert call(suite, "registry", run.operator, "FinishRun", finish) == (grpc.StatusCode.OK, "")
    assert call(suite, "modulestore", run.agent, "Write", history_append(run.run_id, run.agent_id, store)) \
        == (grpc.StatusCode.FAILED_PRECONDITION, "RUN_NOT_RUNNING")
    tool = svc.CallToolRequest(request_id=rid(), run_id=run.run_id, agent_id=run.agent_id,
                               tool_name="create_task", arguments_json='{"title": "late"}')
    assert call(suite, "modulestore", run.agent, "CallTool", tool) == (
        grpc.StatusCode.FAILED_PRECONDITION, "RUN_NOT_RUNNING")


def test_r50_writes_stop_when_a_run_ends_internal_error(suite: Suite, runs: tuple[Run, Run]) -> None:
    run, _ = runs
    store = stores_of(suite, run, run.agent_id)["history"]
    fail = reg.FailRunRequest(request_id=rid(), run_id=run.run_id, detail="a defect")
    assert call(suite, "registry", CREDENTIALS.service, "FailRun", fail) == (grpc.StatusCode.OK, "")
    assert call(suite, "modulestore", run.agent, "Write", history_append(run.run_id, run.agent_id, store)) \
        == (grpc.StatusCode.FAILED_PRECONDITION, "RUN_NOT_RUNNING")


def test_r50_a_handed_on_agent_is_no_source_for_fork_or_spawn(suite: Suite, runs: tuple[Run, Run]) -> None:
    run, _ = runs
    fork = reg.ForkInstanceRequest(request_id=rid(), run_id=run.run_id, agent_id=run.handed_id)
    spawn = reg.SpawnSubagentRequest(request_id=rid(), run_id=run.run_id, parent_agent_id=run.handed_id,
                                     profile="planner")
    for credential in (run.handed, run.operator):
        assert call(suite, "registry", credential, "ForkInstance", fork) == (
            grpc.StatusCode.FAILED_PRECONDITION, "HANDED_ON")
        assert call(suite, "registry", credential, "SpawnSubagent", spawn) == (
            grpc.StatusCode.FAILED_PRECONDITION, "HANDED_ON")
    store = stores_of(suite, run, run.successor_id)["history"]
    assert call(suite, "modulestore", run.handed, "Write", history_append(run.run_id, run.handed_id, store)) \
        == (DENIED, "HANDED_ON")


# ---- credentials that are not what they say -------------------------------------------------------------


def test_r50_missing_malformed_forged_tampered_and_expired_credentials(
    suite: Suite, runs: tuple[Run, Run]
) -> None:
    run, _ = runs
    get = reg.GetRunRequest(run_id=run.run_id)
    forged = Signer(new_signing_key()).agent(run.run_id, run.agent_id)
    header, _, signature = run.agent.split(".")
    claims = jwt.decode(run.agent, options={"verify_signature": False})
    other = base64.urlsafe_b64encode(json.dumps({**claims, "run": "*"}).encode()).decode().rstrip("=")
    tampered = f"{header}.{other}.{signature}"
    expired = CREDENTIALS.signer.mint(Role.AGENT, run.run_id, run.agent_id, ttl_seconds=-10)
    cases = {
        NONE: (UNAUTH, "CREDENTIAL_MISSING"),
        "not-a-jwt": (UNAUTH, "CREDENTIAL_MALFORMED"),
        forged: (UNAUTH, "CREDENTIAL_INVALID"),
        tampered: (UNAUTH, "CREDENTIAL_INVALID"),
        expired: (UNAUTH, "CREDENTIAL_EXPIRED"),
        run.agent: (grpc.StatusCode.OK, ""),
    }
    for credential, expected in cases.items():
        assert call(suite, "registry", credential, "GetRun", get) == expected, credential[:20]


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
