"""Runs for the R50 tests: a writer, a read-only holder and a handed-on agent, each with its credential, and
one call read as its status and reason."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import grpc

from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.transfer.v1 import transfer_service_pb2 as tr
from tests.harness import CREDENTIALS, Suite, status_of, stubs
from tests.harness.registry import edge, fsm, full_profile, store_ids

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
