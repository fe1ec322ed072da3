"""What the sync and asyncio write sessions share: which plans travel on a session, the message each is sent
as, how its answer is read, and when a broken session is opened again.

A session carries writes only (`Plan.method == "Write"`); every other call an agent makes inside a session
(reads, tools, transfers) is an ordinary unary call. Each write keeps the request id its plan was given, so
when a session breaks (UNAVAILABLE: the service restarted, the connection dropped) the writes not yet
answered are sent again, in order, on a new session: the service answers a write it already applied with
its first answer (R49) and applies the others once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import grpc

from ggmodules.modulestore.v1 import modulestore_service_pb2 as pb
from ggmodules.sdk.config import ClientConfig
from ggmodules.sdk.errors import GGModulesError, error_from_status
from ggmodules.sdk.plans import Plan

SERVICE = "modulestore"
METHOD = "Session"
_CODES = {code.value[0]: code for code in grpc.StatusCode}


def on_session(plan: Plan[Any]) -> bool:
    """Whether the plan is a write, sent on the session."""
    return plan.service == SERVICE and plan.method == "Write"


def message(plan: Plan[Any]) -> pb.SessionRequest:
    write = plan.request
    assert isinstance(write, pb.WriteRequest)
    return pb.SessionRequest(write=write)


def outcome(plan: Plan[Any], answer: pb.SessionResponse) -> tuple[Any, GGModulesError | None]:
    """The plan's result from its answer, or the typed error its refusal is."""
    if answer.WhichOneof("outcome") == "written":
        return plan.convert(answer.written), None
    status = answer.refused
    code = _CODES.get(status.code, grpc.StatusCode.UNKNOWN)
    return None, error_from_status(code, status.message, status)


def reconnects(config: ClientConfig) -> Iterator[float]:
    """The pauses before each new session after a break, by the client's retry policy (UNAVAILABLE among
    its codes): as many as it allows attempts after the first, backing off as it does."""
    policy = config.retry
    if not policy.retries(grpc.StatusCode.UNAVAILABLE):
        return
    pause = policy.initial_backoff
    for _ in range(policy.max_attempts - 1):
        yield pause
        pause = min(pause * policy.multiplier, policy.max_backoff)


def ended_early() -> GGModulesError:
    """A session the service closed while writes were still unanswered (it never does: a defect)."""
    return error_from_status(grpc.StatusCode.INTERNAL,
                             "the write session ended before every write sent on it was answered", None)
