"""Driving ModuleStore's write Session through its stub: a stream opened with an agent's credential, writes
sent as `SessionRequest`s and answered in order, and the answers compared with what unary Write gives.

`RawSession.send(*messages)` sends the messages and returns their answers (one each, in order), so a test
can interleave sends with reads of the state; `close()` half-closes and reads the stream to its end.
`answer_refusal` reads a refused answer as `tests.harness.refusals.refusal_of` reads a unary call's refusal,
so a test can assert a session refuses exactly as Write does.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

import grpc
from google.rpc import error_details_pb2

from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.sdk.credentials import bearer
from tests.harness.credentials import CREDENTIALS, WALLET
from tests.harness.modulestore import Agent, Stub
from tests.harness.refusals import Refusal, error_info

METHOD = "/ggmodules.modulestore.v1.ModuleStoreService/Session"


def credential_of(agent: Agent) -> str:
    """The agent's credential, as Registry minted it for the runtime (the harness's wallet holds it)."""
    held = WALLET.agent(agent.run_id, agent.agent_id)
    return held or CREDENTIALS.signer.agent(agent.run_id, agent.agent_id)


def write_message(agent: Agent, kind: int, request_id: str = "", *, as_agent: str = "",
                  run_id: str = "", **op: Any) -> svc.SessionRequest:
    """One write of `agent` to its store of `kind` (naming another acting agent or run when told to)."""
    return svc.SessionRequest(write=svc.WriteRequest(
        request_id=request_id, run_id=run_id or agent.run_id, agent_id=as_agent or agent.agent_id,
        store_id=agent[kind], **op))


class RawSession:
    """One Session stream on `stub`'s channel, carrying `credential` (the agent's own by default)."""

    def __init__(self, stub: Stub, agent: Agent | None = None, *, credential: str | None = None,
                 raw: grpc.Channel | None = None) -> None:
        self._outbox: queue.Queue[Any] = queue.Queue()
        token = credential if credential is not None else credential_of(agent) if agent else ""
        requests: Iterator[Any] = iter(self._outbox.get, None)
        if raw is not None:  # bytes as they are, for messages that do not decode
            call = raw.stream_stream(METHOD, request_serializer=_identity,
                                     response_deserializer=svc.SessionResponse.FromString)
            self._answers = call(requests, metadata=bearer(token))
        else:
            self._answers = stub.Session(requests, metadata=bearer(token))

    def send(self, *messages: Any) -> list[svc.SessionResponse]:
        for message in messages:
            self._outbox.put(message)
        return [next(self._answers) for _ in messages]

    def next_answer(self) -> svc.SessionResponse:
        """The next answer (or the status the stream ended with, raised)."""
        return next(self._answers)  # type: ignore[no-any-return]

    def close(self) -> list[svc.SessionResponse]:
        """Half-closes the stream; whatever answers were still to come."""
        self._outbox.put(None)
        return list(self._answers)

    def __enter__(self) -> RawSession:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            assert self.close() == []
        else:
            self._answers.cancel()


def _identity(data: bytes) -> bytes:
    return data


def answer_refusal(answer: svc.SessionResponse) -> Refusal:
    """A refused answer read as `refusal_of` reads a unary call's refusal."""
    assert answer.WhichOneof("outcome") == "refused", f"expected a refusal, got {answer}"
    status = answer.refused
    info = error_info(status)
    violations: list[tuple[str, str]] = []
    for detail in status.details:
        bad = error_details_pb2.BadRequest()
        if detail.Unpack(bad):
            violations = [(v.field, v.description) for v in bad.field_violations]
    return Refusal(
        code=next(c for c in grpc.StatusCode if c.value[0] == status.code),
        reason=info.reason if info is not None else "",
        metadata=dict(info.metadata) if info is not None else {},
        message=status.message,
        info=info,
        violations=violations,
    )


def written(answer: svc.SessionResponse) -> svc.WriteResponse:
    assert answer.WhichOneof("outcome") == "written", f"expected a durable write, got {answer}"
    return answer.written
