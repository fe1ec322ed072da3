"""R48: an acknowledged write survives kill -9 of ModuleStore."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import BACKENDS, ServiceProcess, drop_database, new_database_url, open_channel, stubs
from tests.harness.modulestore import append, contents, messages, new_run, open_agent, write
from tests.harness.sessions import RawSession, write_message, written


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = new_database_url(request.param, "modulestore", tmp_path)
    yield url
    drop_database(url)


def test_r48_an_acknowledged_write_survives_kill_9(database_url: str) -> None:
    run = new_run()
    proc = ServiceProcess("modulestore", "--database-url", database_url, "--log-level", "warning")
    try:
        with open_channel(proc.address) as channel:
            stub = stubs(channel, "modulestore")
            agent = open_agent(stub, run, "coder-0")
            for i in range(20):
                append(stub, agent, f"message {i}")
            write(stub, agent, c.KIND_TASKS, create_task=svc.CreateTask(title="survive"))
            last = append(stub, agent, "acknowledged just before the crash")
    finally:
        proc.kill()
    assert last.last_seq == 21

    proc = ServiceProcess("modulestore", "--database-url", database_url, "--log-level", "warning")
    try:
        with open_channel(proc.address) as channel:
            stub = stubs(channel, "modulestore")
            history = contents(stub, agent, c.KIND_HISTORY).contents.history
            assert history.message_count == 21
            assert history.messages[-1].content == "acknowledged just before the crash"
            assert [t.title for t in contents(stub, agent, c.KIND_TASKS).contents.tasks.tasks] == ["survive"]
            # The restarted service carries on from where it was: ids and seqs continue.
            assert append(stub, agent, "after restart").last_seq == 22
    finally:
        proc.terminate()


def test_r48_a_write_acknowledged_on_a_session_survives_kill_9(database_url: str) -> None:
    """Pipelined writes on a session, ModuleStore killed right after the last acknowledgement, the stream
    still open: every acknowledged write is there after the restart."""
    run = new_run()
    proc = ServiceProcess("modulestore", "--database-url", database_url, "--log-level", "warning")
    try:
        with open_channel(proc.address) as channel:
            stub = stubs(channel, "modulestore")
            agent = open_agent(stub, run, "coder-0")
            session = RawSession(stub, agent)
            acks = session.send(*(
                write_message(agent, c.KIND_HISTORY, append_messages=svc.AppendMessages(
                    messages=messages(f"message {i}"))) for i in range(20)
            ), write_message(agent, c.KIND_TASKS, create_task=svc.CreateTask(title="survive")))
            last = session.send(write_message(agent, c.KIND_HISTORY, append_messages=svc.AppendMessages(
                messages=messages("acknowledged just before the crash"))))[0]
            proc.kill()
    finally:
        proc.kill()
    assert [written(a).last_seq for a in acks[:20]] == list(range(1, 21)) and written(acks[20]).task_id == 1
    assert written(last).last_seq == 21

    proc = ServiceProcess("modulestore", "--database-url", database_url, "--log-level", "warning")
    try:
        with open_channel(proc.address) as channel:
            stub = stubs(channel, "modulestore")
            history = contents(stub, agent, c.KIND_HISTORY).contents.history
            assert history.message_count == 21
            assert history.messages[-1].content == "acknowledged just before the crash"
            assert [t.title for t in contents(stub, agent, c.KIND_TASKS).contents.tasks.tasks] == ["survive"]
            with RawSession(stub, agent) as again:  # a new session carries on where the old one stopped
                after = write_message(agent, c.KIND_HISTORY,
                                      append_messages=svc.AppendMessages(messages=messages("after restart")))
                assert written(again.send(after)[0]).last_seq == 22
    finally:
        proc.terminate()
