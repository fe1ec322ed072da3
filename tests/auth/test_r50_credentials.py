"""R50: run-scoped credentials. Every RPC checks the credential it carries before anything else runs; the
issue's attacks (impersonation, invented binds, a direct Handover, FailRun and the outboxes read by anyone,
writes after a run's end, a handed-on agent as a source) are each a named test here, and so are credentials
that are not what they say. The matrix (test_r50_matrix.py) calls every RPC with each kind of credential."""

from __future__ import annotations

import base64
import json

import grpc
import jwt
import pytest

from ggmodules.common.v1 import outbox_service_pb2 as outbox
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.runtime.credentials import Role, Signer, new_signing_key
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from tests.auth._support.runs import DENIED, UNAUTH, Run, call, history_append, rid, stores_of
from tests.harness import CREDENTIALS, NONE, Suite

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
