"""R50 on the write Session: the credential is checked when the stream opens (a refusal ends it with that
status, before any message), and every message must name the credential's run and acting agent (else that
message alone is refused, WRONG_RUN or AGENT_MISMATCH, and the session goes on). Runs are opened through
Registry as a runtime opens them (tests/auth/_support/runs.py's `start_run`)."""

from __future__ import annotations

import grpc
import pytest

from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.auth._support.runs import DENIED, UNAUTH, Run, rid, start_run, stores_of
from tests.harness import CREDENTIALS, Suite, status_of, stubs
from tests.harness.sessions import RawSession, answer_refusal, written


def append(run_id: str, agent_id: str, store_id: str, text: str = "x") -> svc.SessionRequest:
    return svc.SessionRequest(write=svc.WriteRequest(
        request_id=rid(), run_id=run_id, agent_id=agent_id, store_id=store_id,
        append_messages=svc.AppendMessages(messages=[ms.MessageInput(role="user", content=text)]),
    ))


def history_of(suite: Suite, run: Run, agent_id: str) -> list[str]:
    store = stores_of(suite, run, agent_id)["history"]
    reader = stubs(suite.channel(suite.modulestore.address, run.operator), "modulestore")
    found = reader.GetStore(svc.GetStoreRequest(run_id=run.run_id, store_id=store))
    return [m.content for m in found.contents.history.messages]


def test_r50_a_session_without_a_valid_agent_credential_ends_at_open(
    suite: Suite, modulestore: object
) -> None:
    x = start_run(suite)
    tampered = x.agent[:-4] + ("AAAA" if not x.agent.endswith("AAAA") else "BBBB")
    cases = {
        "": (UNAUTH, "CREDENTIAL_MISSING"),
        "not-a-jwt": (UNAUTH, "CREDENTIAL_MALFORMED"),
        tampered: (UNAUTH, "CREDENTIAL_INVALID"),
        x.operator: (DENIED, "ROLE_NOT_PERMITTED"),
        x.observer: (DENIED, "ROLE_NOT_PERMITTED"),
        CREDENTIALS.service: (DENIED, "ROLE_NOT_PERMITTED"),
    }
    for credential, want in cases.items():
        session = RawSession(modulestore, credential=credential)  # type: ignore[arg-type]
        # Nothing sent yet: the stream is refused as it opens.
        with pytest.raises(grpc.RpcError) as caught:
            session.next_answer()
        assert status_of(caught.value) == want, credential[:20]
    assert history_of(suite, x, x.agent_id) == []


def test_r50_another_agents_messages_on_my_session_are_refused_one_by_one(
    suite: Suite, modulestore: object
) -> None:
    x = start_run(suite)
    mine = stores_of(suite, x, x.agent_id)["history"]
    readers = stores_of(suite, x, x.reader_id)["history"]
    with RawSession(modulestore, credential=x.agent) as session:  # type: ignore[arg-type]
        first, impersonating, own = session.send(
            append(x.run_id, x.agent_id, mine, "one"),
            append(x.run_id, x.reader_id, readers, "as the reader"),
            append(x.run_id, x.agent_id, mine, "two"),
        )
        code, reason, metadata, message = answer_refusal(impersonating)
        assert (code, reason) == (DENIED, "AGENT_MISMATCH")
        assert metadata == {"field": "write.agent_id", "agent_id": x.reader_id,
                            "credential_agent_id": x.agent_id}
        assert x.reader_id in message and impersonating.request_id
        assert (written(first).last_seq, written(own).last_seq) == (1, 2)
    assert history_of(suite, x, x.reader_id) == []
    assert history_of(suite, x, x.agent_id) == ["one", "two"]


def test_r50_messages_naming_another_run_are_refused(suite: Suite, modulestore: object) -> None:
    x, y = start_run(suite), start_run(suite)
    theirs = stores_of(suite, x, x.agent_id)["history"]
    mine = stores_of(suite, y, y.agent_id)["history"]
    with RawSession(modulestore, credential=y.agent) as session:  # type: ignore[arg-type]
        other_run, own = session.send(append(x.run_id, x.agent_id, theirs),
                                      append(y.run_id, y.agent_id, mine))
        code, reason, metadata, _ = answer_refusal(other_run)
        assert (code, reason) == (DENIED, "WRONG_RUN")
        assert metadata == {"run_id": x.run_id, "credential_run_id": y.run_id}
        assert written(own).last_seq == 1
    assert history_of(suite, x, x.agent_id) == []


def test_r50_a_read_only_holder_and_a_handed_on_agent_are_refused_on_their_sessions(
    suite: Suite, modulestore: object
) -> None:
    x = start_run(suite)
    shared = stores_of(suite, x, x.reader_id)["memories"]
    pad = svc.SessionRequest(write=svc.WriteRequest(
        request_id=rid(), run_id=x.run_id, agent_id=x.reader_id, store_id=shared,
        write_pad=svc.WritePad(text="scribble")))
    with RawSession(modulestore, credential=x.reader) as session:  # type: ignore[arg-type]
        assert answer_refusal(session.send(pad)[0])[:2] == (DENIED, "READ_ONLY")
    successors = stores_of(suite, x, x.successor_id)["history"]
    with RawSession(modulestore, credential=x.handed) as session:  # type: ignore[arg-type]
        answer = session.send(append(x.run_id, x.handed_id, successors))[0]
        assert answer_refusal(answer)[:2] == (DENIED, "HANDED_ON")
