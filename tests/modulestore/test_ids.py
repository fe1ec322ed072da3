"""Store identity (R34, R35)."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness.modulestore import (
    KINDS,
    Stub,
    b,
    bind,
    fork_agent,
    new_run,
    open_agent,
)


def test_r34_ids_count_from_zero_per_kind_per_run(modulestore: Stub) -> None:
    run, other = new_run(), new_run()
    first = open_agent(modulestore, run, "coder-0")
    second = open_agent(modulestore, run, "coder-1")
    elsewhere = open_agent(modulestore, other, "coder-0")
    assert [first[k] for k in KINDS] == [
        "history-0",
        "memories-0",
        "tasks-0",
        "board-0",
        "skills-0",
        "archive-0",
    ]
    # The board and the skills catalogue are the run's / the directory's: one store each.
    assert [second[k] for k in KINDS] == [
        "history-1",
        "memories-1",
        "tasks-1",
        "board-0",
        "skills-0",
        "archive-1",
    ]
    assert [elsewhere[k] for k in KINDS] == [first[k] for k in KINDS]


def test_r34_ids_are_never_reused(modulestore: Stub) -> None:
    run = new_run()
    seen: set[str] = set()
    source = open_agent(modulestore, run, "coder-0")
    seen.update(source[k] for k in (c.KIND_HISTORY, c.KIND_TASKS, c.KIND_ARCHIVE))
    for i in range(1, 6):
        copy = fork_agent(modulestore, source, f"coder-{i}")
        minted = {copy[k] for k in (c.KIND_HISTORY, c.KIND_TASKS, c.KIND_ARCHIVE)}
        assert not minted & seen
        seen |= minted
    listed = modulestore.ListStores(svc.ListStoresRequest(run_id=run, kind=c.KIND_HISTORY))
    assert [s.store_id for s in listed.stores] == [f"history-{n}" for n in range(6)]


def test_r35_share_keeps_the_id_and_fork_mints_one(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    shared = bind(
        modulestore,
        run,
        "coder-1",
        [
            b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
            b(c.KIND_TASKS, ms.BIND_ACTION_SHARE, source_store_id=a[c.KIND_TASKS], origin=c.ORIGIN_INHERITED),
        ],
    )
    forked = bind(
        modulestore,
        run,
        "coder-2",
        [
            b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
            b(c.KIND_TASKS, ms.BIND_ACTION_FORK, source_store_id=a[c.KIND_TASKS], origin=c.ORIGIN_FORKED),
        ],
    )
    assert shared[c.KIND_TASKS] == a[c.KIND_TASKS] == "tasks-0"
    assert forked[c.KIND_TASKS] == "tasks-1"
    store = modulestore.GetStore(svc.GetStoreRequest(run_id=run, store_id="tasks-1")).store
    assert store.forked_from == "tasks-0"
