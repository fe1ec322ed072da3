"""The write Session: each message a write, answered once durable, in the order sent, and by the same rules
as unary Write: caps (R23), refusals (R47, R50's run end and handed-on agents), request ids (R49). A refusal
answers its message alone and the session goes on; each refusal is compared with the one Write gives for the
same write, code, reason, metadata and message alike."""

from __future__ import annotations

import uuid

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import event_pb2, module_pb2
from ggmodules.internal.v1 import modulestore_internal_service_pb2 as ms_internal
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness.handing import carry_all, hand_over
from tests.harness.modulestore import (
    Agent,
    Stub,
    append,
    contents,
    events,
    messages,
    new_run,
    open_agent,
    spawn_agent,
)
from tests.harness.refusals import Refusal, refused
from tests.harness.sessions import RawSession, answer_refusal, write_message, written


def history(agent: Agent, *texts: str, request_id: str = "") -> svc.SessionRequest:
    return write_message(agent, c.KIND_HISTORY, request_id,
                         append_messages=svc.AppendMessages(messages=messages(*texts)))


def task(agent: Agent, title: str, request_id: str = "") -> svc.SessionRequest:
    return write_message(agent, c.KIND_TASKS, request_id, create_task=svc.CreateTask(title=title))


def unary(stub: Stub, message: svc.SessionRequest) -> Refusal:
    """What Write answers the same write with: its refusal."""
    return refused(stub.Write, message.write)


def refused_like_write(stub: Stub, session: RawSession, agent: Agent, kind: int,
                       message: svc.SessionRequest) -> Refusal:
    """Sends `message`, expecting a refusal that changes nothing and is the one Write gives."""
    before, outbox = contents(stub, agent, kind), events(stub, agent.run_id)
    (answer,) = session.send(message)
    got = answer_refusal(answer)
    assert answer.request_id == message.write.request_id
    assert contents(stub, agent, kind) == before and events(stub, agent.run_id) == outbox
    assert got == unary(stub, message)
    return got


def test_writes_are_answered_in_the_order_sent_each_once_durable(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    prefix = uuid.uuid4().hex  # request ids are the service's, across runs: each test its own
    sent = [history(agent, f"message {i}", request_id=f"{prefix}-{i}") for i in range(40)]
    sent.insert(20, task(agent, "in between", request_id=f"{prefix}-task"))
    with RawSession(modulestore, agent) as session:
        answers = session.send(*sent)  # all sent before any answer is read: pipelined
    assert [a.message_seq for a in answers] == list(range(1, 42))
    assert [a.request_id for a in answers] == [m.write.request_id for m in sent]
    assert [written(a).last_seq for a in answers if a.request_id != f"{prefix}-task"] == list(range(1, 41))
    assert written(answers[20]).task_id == 1
    stored = contents(modulestore, agent, c.KIND_HISTORY).contents.history.messages
    assert [m.content for m in stored] == [f"message {i}" for i in range(40)]


def _comparable(run_events: list[event_pb2.Event]) -> list[event_pb2.Event]:
    """The run's events without what differs between two runs: run id, outbox position, time."""
    out = []
    for event in run_events:
        copy = event_pb2.Event()
        copy.CopyFrom(event)
        for name in ("run_id", "origin_seq", "time"):
            copy.ClearField(name)
        out.append(copy)
    return out


def test_r28_r29_a_session_write_answers_and_emits_what_write_does(modulestore: Stub) -> None:
    """The same writes in two runs, through Write in one and on a session in the other: the same answers,
    and the same events on every stream (the writer's write events, the co-holder's snapshots)."""
    ops = [
        (c.KIND_HISTORY, {"set_system_prompt": svc.SetSystemPrompt(text="You code.")}),
        (c.KIND_HISTORY, {"append_messages": svc.AppendMessages(messages=messages("a", "b"),
                                                                start_turn=True)}),
        (c.KIND_MEMORIES, {"write_pad": svc.WritePad(text="notes")}),
        (c.KIND_TASKS, {"create_task": svc.CreateTask(title="parse")}),
        (c.KIND_TASKS, {"update_task": svc.UpdateTask(task_id=1, status=module_pb2.TASK_STATUS_DONE)}),
        (c.KIND_BOARD, {"create_issue": svc.CreateIssue(prefix="OPS", title="deploy")}),
        (c.KIND_SKILLS, {"put_skill": svc.PutSkill(name="s", description="d", body="b")}),
        (c.KIND_ARCHIVE, {"archive_thread": svc.ArchiveThread(title="t", messages=messages("x"))}),
    ]
    by_call, by_session = new_run(), new_run()
    for run in (by_call, by_session):  # the helper shares the run's board: it gets a snapshot per board write
        open_agent(modulestore, run, "helper-0")
    caller = open_agent(modulestore, by_call, "coder-0")
    writer = open_agent(modulestore, by_session, "coder-0")
    with RawSession(modulestore, writer) as session:
        for kind, op in ops:
            (answer,) = session.send(write_message(writer, kind, **op))
            assert written(answer) == modulestore.Write(write_message(caller, kind, **op).write)
    assert _comparable(events(modulestore, by_session)) == _comparable(events(modulestore, by_call))
    helper = [e for e in events(modulestore, by_session) if e.agent_id == "helper-0"]
    assert helper[-1].WhichOneof("body") == "snapshot" and helper[-1].snapshot.written_by == "coder-0"


def test_r23_a_write_over_a_cap_is_refused_as_write_refuses_it_and_the_session_goes_on(
    modulestore: Stub,
) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0", caps=c.Caps(max_items=2))
    with RawSession(modulestore, agent) as session:
        session.send(task(agent, "one"), task(agent, "two"))
        code, reason, _, message = refused_like_write(modulestore, session, agent, c.KIND_TASKS,
                                                      task(agent, "three", request_id=uuid.uuid4().hex))
        assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_EXCEEDED")
        assert "cap of 2" in message
        # Edits that add nothing still go through, on the same stream.
        done = write_message(agent, c.KIND_TASKS, update_task=svc.UpdateTask(
            task_id=1, status=module_pb2.TASK_STATUS_DONE))
        assert written(session.send(done)[0]).figures.items == 2


def test_r47_a_read_only_holders_write_is_refused(modulestore: Stub) -> None:
    owner = open_agent(modulestore, new_run(), "coder-0")
    reader = spawn_agent(modulestore, owner, "reader-0", scope=c.MEMORY_SCOPE_INHERITED,
                         memories_read_only=True)
    with RawSession(modulestore, reader) as session:
        pad = write_message(reader, c.KIND_MEMORIES, write_pad=svc.WritePad(text="scribble"))
        code, reason, *_ = refused_like_write(modulestore, session, owner, c.KIND_MEMORIES, pad)
        assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "READ_ONLY")
        assert written(session.send(history(reader, "still writing my own window"))[0]).last_seq == 1


def test_r47_a_write_to_a_store_the_agent_does_not_hold_is_refused(modulestore: Stub) -> None:
    run = new_run()
    mine, other = open_agent(modulestore, run, "coder-0"), open_agent(modulestore, run, "coder-1")
    intruder = Agent(run, mine.agent_id, other.roster)  # coder-0 naming coder-1's stores
    with RawSession(modulestore, mine) as session:
        code, reason, metadata, _ = refused_like_write(modulestore, session, other, c.KIND_TASKS,
                                                       task(intruder, "not mine"))
        assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "NOT_A_HOLDER")
        assert metadata["store_id"] == other[c.KIND_TASKS] and metadata["agent_id"] == "coder-0"
        assert written(session.send(task(mine, "mine"))[0]).task_id == 1


def test_a_predecessor_that_hands_on_mid_session_has_its_next_writes_refused(modulestore: Stub) -> None:
    planner = open_agent(modulestore, new_run(), "planner-0")
    with RawSession(modulestore, planner) as session:
        assert written(session.send(history(planner, "before"))[0]).last_seq == 1
        coder, _ = hand_over(modulestore, planner, "coder-0", carry_all())
        code, reason, metadata, message = refused_like_write(modulestore, session, coder, c.KIND_HISTORY,
                                                             history(planner, "after"))
        assert (code, reason) == (grpc.StatusCode.PERMISSION_DENIED, "HANDED_ON")
        assert metadata == {"agent_id": "planner-0", "successor_agent_id": "coder-0"}
        assert "write as coder-0" in message
    assert append(modulestore, coder, "as coder-0").last_seq == 2


def test_r50_a_run_that_ends_mid_session_takes_no_more_writes(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    with RawSession(modulestore, agent) as session:
        assert written(session.send(task(agent, "before the end"))[0]).task_id == 1
        modulestore.EndRun(ms_internal.EndRunRequest(run_id=agent.run_id, status="finished"))
        code, reason, metadata, _ = refused_like_write(modulestore, session, agent, c.KIND_TASKS,
                                                       task(agent, "after the end"))
        assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "RUN_NOT_RUNNING")
        assert metadata == {"run_id": agent.run_id, "status": "finished"}


def test_r49_a_write_sent_again_under_its_request_id_applies_once(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    rid = uuid.uuid4().hex
    with RawSession(modulestore, agent) as session:
        first, = session.send(task(agent, "once", request_id=rid))
        outbox = events(modulestore, agent.run_id)
        again = session.send(task(agent, "once", request_id=rid), task(agent, "once", request_id=rid))
    assert [a.written for a in again] == [first.written, first.written] and first.written.task_id == 1
    # Through Write, the same request id answers the same.
    assert modulestore.Write(task(agent, "once", request_id=rid).write) == first.written
    assert len(contents(modulestore, agent, c.KIND_TASKS).contents.tasks.tasks) == 1
    assert events(modulestore, agent.run_id) == outbox


def test_r49_a_write_made_through_write_and_resent_on_a_session_returns_the_first_answer(
    modulestore: Stub,
) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    rid = uuid.uuid4().hex
    first = modulestore.Write(history(agent, "one", request_id=rid).write)
    with RawSession(modulestore, agent) as session:
        (again,) = session.send(history(agent, "one", request_id=rid))
    assert again.written == first
    assert contents(modulestore, agent, c.KIND_HISTORY).contents.history.message_count == 1


def test_r49_a_request_id_reused_for_another_write_is_refused(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0")
    rid = uuid.uuid4().hex
    with RawSession(modulestore, agent) as session:
        session.send(history(agent, "one", request_id=rid))
        code, reason, metadata, _ = refused_like_write(modulestore, session, agent, c.KIND_HISTORY,
                                                       history(agent, "two", request_id=rid))
    assert (code, reason) == (grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED")
    assert metadata == {"request_id": rid, "method": "Write"}
    stored = contents(modulestore, agent, c.KIND_HISTORY).contents.history.messages
    assert [m.content for m in stored] == ["one"]
