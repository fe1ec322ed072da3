"""Caps on writes (R23): the write that would go beyond a cap is refused and the store is unchanged."""

from __future__ import annotations

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import module_pb2
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import assert_refused, refused
from tests.harness.modulestore import Stub, append, b, bind, contents, new_run, open_agent, write


def test_r23_a_write_over_the_item_cap_is_refused_and_changes_nothing(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0", caps=c.Caps(max_items=2))
    write(modulestore, agent, c.KIND_TASKS, create_task=svc.CreateTask(title="one"))
    write(modulestore, agent, c.KIND_TASKS, create_task=svc.CreateTask(title="two"))
    before = contents(modulestore, agent, c.KIND_TASKS)
    code, reason, _, message = refused(
        lambda: write(modulestore, agent, c.KIND_TASKS, create_task=svc.CreateTask(title="three"))
    )
    assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_EXCEEDED") and "cap of 2" in message
    assert contents(modulestore, agent, c.KIND_TASKS) == before
    # Edits that add nothing still go through.
    write(
        modulestore,
        agent,
        c.KIND_TASKS,
        update_task=svc.UpdateTask(task_id=1, status=module_pb2.TASK_STATUS_DONE),
    )


def test_r23_a_write_over_the_byte_cap_is_refused(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0", caps=c.Caps(max_bytes=10))
    append(modulestore, agent, "12345")
    assert_refused(
        lambda: append(modulestore, agent, "678901"),
        grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_EXCEEDED",
    )
    history = contents(modulestore, agent, c.KIND_HISTORY)
    assert [m.content for m in history.contents.history.messages] == ["12345"]
    assert (history.store.figures.bytes, history.store.figures.writes) == (5, 1)


def test_r23_contents_over_a_tighter_cap_are_kept_and_the_next_addition_refused(modulestore: Stub) -> None:
    """A fork under a tighter cap keeps everything it copied; only the next write that adds is refused."""
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    for title in ("a", "b", "c"):
        write(modulestore, a, c.KIND_TASKS, create_task=svc.CreateTask(title=title))
    tight = bind(
        modulestore,
        run,
        "coder-1",
        [
            b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
            b(c.KIND_TASKS, ms.BIND_ACTION_FORK, source_store_id=a[c.KIND_TASKS], caps=c.Caps(max_items=2)),
        ],
    )
    assert len(contents(modulestore, tight, c.KIND_TASKS).contents.tasks.tasks) == 3
    assert_refused(
        lambda: write(modulestore, tight, c.KIND_TASKS, create_task=svc.CreateTask(title="d")),
        grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_EXCEEDED",
    )
    write(
        modulestore,
        tight,
        c.KIND_TASKS,
        update_task=svc.UpdateTask(task_id=2, status=module_pb2.TASK_STATUS_DONE),
    )
    assert len(contents(modulestore, tight, c.KIND_TASKS).contents.tasks.tasks) == 3


def test_r23_skills_cap_counts_the_read_set(modulestore: Stub) -> None:
    agent = open_agent(modulestore, new_run(), "coder-0", caps=c.Caps(max_items=1))
    for name in ("a", "b"):
        write(
            modulestore, agent, c.KIND_SKILLS, put_skill=svc.PutSkill(name=name, description=name, body=name)
        )
    write(modulestore, agent, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="a"))
    assert_refused(
        lambda: write(modulestore, agent, c.KIND_SKILLS, read_skill=svc.ReadSkill(name="b")),
        grpc.StatusCode.RESOURCE_EXHAUSTED, "CAP_EXCEEDED",
    )
    assert list(contents(modulestore, agent, c.KIND_SKILLS).contents.skills.read_set) == ["a"]
