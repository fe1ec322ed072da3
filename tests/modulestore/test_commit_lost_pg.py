"""R47/R49 on PostgreSQL: a write whose connection is lost during its COMMIT (an operator's
pg_terminate_backend, a server restart, a failover) is refused UNAVAILABLE, inviting the retry with the same
request id that settles it, never INTERNAL. Found by terminating every backend of a two-replica cluster four
times under 8 clients: one Write of 1,216 was answered INTERNAL (psycopg's own OperationalError, raised by
the pipelined COMMIT below SQLAlchemy, was taken for a defect).

A deferred constraint trigger makes the loss deterministic: at COMMIT it ends its own session, so the write
is rolled back and the client told so only by the connection closing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import psycopg
import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import Suite, open_channel, refused, stubs
from tests.harness.backends import needs_postgres, psycopg_dsn
from tests.harness.modulestore import Agent, contents, messages, new_run, open_agent

pytestmark = needs_postgres

DOOMED = "lost at commit"
SABOTAGE = f"""
CREATE FUNCTION end_own_session() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NULL; END $$;
CREATE CONSTRAINT TRIGGER lost_at_commit AFTER INSERT ON ms_messages DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW WHEN (NEW.content = '{DOOMED}') EXECUTE FUNCTION end_own_session();
"""
REPAIR = "DROP TRIGGER lost_at_commit ON ms_messages; DROP FUNCTION end_own_session();"


@pytest.fixture()
def suite(tmp_path: Path) -> Iterator[Suite]:
    with Suite("postgres", tmp_path, transfer=False) as s:
        yield s


def database(suite: Suite) -> psycopg.Connection:
    return psycopg.connect(psycopg_dsn(suite.urls["modulestore"]), autocommit=True)


def say(modulestore: object, agent: Agent, text: str, request_id: str) -> svc.WriteResponse:
    request = svc.WriteRequest(
        request_id=request_id, run_id=agent.run_id, agent_id=agent.agent_id, store_id=agent[c.KIND_HISTORY],
        append_messages=svc.AppendMessages(messages=messages(text)),
    )
    answer: svc.WriteResponse = modulestore.Write(request, timeout=30)  # type: ignore[attr-defined]
    return answer


def test_r47_r49_a_write_whose_connection_is_lost_at_commit_is_unavailable_and_its_retry_applies_it_once(
    suite: Suite,
) -> None:
    with open_channel(suite.modulestore.address) as channel:  # no retries of its own: one attempt
        modulestore = stubs(channel, "modulestore")
        agent = open_agent(modulestore, new_run(), "coder-0")
        say(modulestore, agent, "before", "r-1")
        with database(suite) as db:
            db.execute(SABOTAGE)
            refusal = refused(say, modulestore, agent, DOOMED, "r-2")
            assert refusal.code is grpc.StatusCode.UNAVAILABLE, refusal
            assert "retry with the same request_id" in refusal.message
            assert refusal.info is not None and refusal.info.metadata["dependency"] == "database"
            # The service goes on: its next write, on a fresh connection, is applied.
            say(modulestore, agent, "after", "r-3")
            db.execute(REPAIR)
        retried = say(modulestore, agent, DOOMED, "r-2")
        assert say(modulestore, agent, DOOMED, "r-2") == retried  # the first answer, not a second write
        thread = contents(modulestore, agent, c.KIND_HISTORY).contents.history.messages
        assert [m.content for m in thread] == ["before", "after", DOOMED]
