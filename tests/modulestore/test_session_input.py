"""Bad input on the write Session: a message that does not decode, names a malformed id or carries no write
is refused on its own, with the reason a unary call gets, and changes nothing; the session goes on."""

from __future__ import annotations

import uuid

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import NONE, Suite
from tests.harness.modulestore import Stub, contents, events, messages, new_run, open_agent
from tests.harness.refusals import refused
from tests.harness.sessions import RawSession, answer_refusal, credential_of, write_message, written


def test_r47_a_message_that_does_not_decode_is_refused_and_the_session_goes_on(
    modulestore: Stub, suite: Suite
) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    good = write_message(agent, c.KIND_HISTORY, uuid.uuid4().hex,
                         append_messages=svc.AppendMessages(messages=messages("ok")))
    outbox = events(modulestore, agent.run_id)
    raw = suite.channel(suite.modulestore.address, NONE)  # bytes as they are; the credential given here
    with RawSession(modulestore, credential=credential_of(agent), raw=raw) as session:
        garbage, after = session.send(b"\xff\xff\xff\xff not a protobuf", good.SerializeToString())
    code, reason, metadata, message = answer_refusal(garbage)
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "MALFORMED_REQUEST")
    assert garbage.request_id == "" and garbage.message_seq == 1 and "not a valid encoding" in message
    assert metadata["size"] == str(len(b"\xff\xff\xff\xff not a protobuf"))
    assert written(after).last_seq == 1 and after.message_seq == 2
    assert len(events(modulestore, agent.run_id)) == len(outbox) + 1


def test_r47_a_malformed_id_is_refused_as_write_refuses_it(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    bad = write_message(agent, c.KIND_TASKS, create_task=svc.CreateTask(title="t"))
    bad.write.store_id = "tasks-" + "0" * 300  # longer than any id may be
    with RawSession(modulestore, agent) as session:
        (answer,) = session.send(bad)
    unary = refused(modulestore.Write, bad.write)
    code, reason, metadata, _ = answer_refusal(answer)
    assert (code, reason) == unary[:2] == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
    # The same refusal, naming the field where the session message has it.
    assert metadata == {**unary[2], "field": "write.store_id"}
    assert contents(modulestore, agent, c.KIND_TASKS).contents.tasks.tasks == []


def test_r47_a_message_without_a_write_is_refused(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    with RawSession(modulestore, agent) as session:
        empty, op_less = session.send(svc.SessionRequest(), write_message(agent, c.KIND_TASKS))
    assert answer_refusal(empty)[:2] == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
    # A write without an op: what Write says of it.
    assert answer_refusal(op_less) == refused(modulestore.Write, write_message(agent, c.KIND_TASKS).write)
