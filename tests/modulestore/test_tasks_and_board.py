"""tasks (a blocked-by DAG with monotonic ids) and board (PREFIX-N, one counter per prefix)."""

from __future__ import annotations

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import module_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import assert_refused, refused
from tests.harness.modulestore import Stub, contents, new_run, open_agent, write


def test_tasks_edges_can_be_added_and_removed_without_cycles(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    for title in ("a", "b", "c"):
        write(modulestore, a, c.KIND_TASKS, create_task=svc.CreateTask(title=title))
    write(modulestore, a, c.KIND_TASKS, update_task=svc.UpdateTask(task_id=3, add_blocked_by=[1, 2]))
    write(
        modulestore,
        a,
        c.KIND_TASKS,
        update_task=svc.UpdateTask(
            task_id=3, remove_blocked_by=[1], status=module_pb2.TASK_STATUS_IN_PROGRESS
        ),
    )
    # 2 -> 3 would close 3 -> 2 -> 3; after removing 3's edge to 2 it is fine.
    assert (
        refused(
            lambda: write(
                modulestore, a, c.KIND_TASKS, update_task=svc.UpdateTask(task_id=2, add_blocked_by=[3])
            )
        )[1]
        == "TASK_CYCLE"
    )
    write(modulestore, a, c.KIND_TASKS, update_task=svc.UpdateTask(task_id=3, remove_blocked_by=[2]))
    write(modulestore, a, c.KIND_TASKS, update_task=svc.UpdateTask(task_id=2, add_blocked_by=[3]))
    tasks = contents(modulestore, a, c.KIND_TASKS).contents.tasks
    assert [(t.id, t.status, list(t.blocked_by)) for t in tasks.tasks] == [
        (1, module_pb2.TASK_STATUS_OPEN, []),
        (2, module_pb2.TASK_STATUS_OPEN, [3]),
        (3, module_pb2.TASK_STATUS_IN_PROGRESS, []),
    ]
    assert tasks.next_id == 4
    assert_refused(
        lambda: write(modulestore, a, c.KIND_TASKS, update_task=svc.UpdateTask(task_id=9)),
        grpc.StatusCode.NOT_FOUND, "ENTRY_NOT_FOUND",
    )


def test_board_counts_per_prefix(modulestore: Stub) -> None:
    a = open_agent(modulestore, new_run(), "coder-0")
    ids = [
        write(modulestore, a, c.KIND_BOARD, create_issue=svc.CreateIssue(prefix=p, title=p)).issue_id
        for p in ("ABC", "ABC", "OPS", "ABC")
    ]
    assert ids == ["ABC-1", "ABC-2", "OPS-1", "ABC-3"]
    write(
        modulestore,
        a,
        c.KIND_BOARD,
        update_issue=svc.UpdateIssue(issue_id="OPS-1", status=module_pb2.ISSUE_STATUS_DONE, body="shipped"),
    )
    board = contents(modulestore, a, c.KIND_BOARD).contents.board
    assert {(x.prefix, x.last) for x in board.counters} == {("ABC", 3), ("OPS", 1)}
    assert [(i.id, i.status, i.body) for i in board.issues if i.id == "OPS-1"] == [
        ("OPS-1", module_pb2.ISSUE_STATUS_DONE, "shipped")
    ]
    assert_refused(
        lambda: write(modulestore, a, c.KIND_BOARD, create_issue=svc.CreateIssue(prefix="a-b", title="bad")),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD",
    )
