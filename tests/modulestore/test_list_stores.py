"""ListStores: a run's stores in kind order, paged."""

from __future__ import annotations

import grpc

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness import assert_refused
from tests.harness.modulestore import Stub, new_run, open_agent


def test_list_stores_pages_through_every_store_once(modulestore: Stub) -> None:
    run = new_run()
    for i in range(3):
        open_agent(modulestore, run, f"coder-{i}")
    seen, token = [], ""
    while True:
        page = modulestore.ListStores(svc.ListStoresRequest(run_id=run, page_size=4, page_token=token))
        assert len(page.stores) <= 4
        seen += [s.store_id for s in page.stores]
        token = page.next_page_token
        if not token:
            break
    # 3 windows, 3 memories, 3 task lists, one board, one catalogue, 3 archives.
    assert seen == [
        "history-0",
        "history-1",
        "history-2",
        "memories-0",
        "memories-1",
        "memories-2",
        "tasks-0",
        "tasks-1",
        "tasks-2",
        "board-0",
        "skills-0",
        "archive-0",
        "archive-1",
        "archive-2",
    ]
    board = modulestore.ListStores(svc.ListStoresRequest(run_id=run, kind=c.KIND_BOARD)).stores
    assert [(s.store_id, sorted(h.agent_id for h in s.holders)) for s in board] == [
        ("board-0", ["coder-0", "coder-1", "coder-2"])
    ]


def test_list_stores_refuses_a_token_it_did_not_hand_out(modulestore: Stub) -> None:
    run = new_run()
    open_agent(modulestore, run, "coder-0")
    assert_refused(
        lambda: modulestore.ListStores(svc.ListStoresRequest(run_id=run, page_token="bogus")),
        grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PAGE_TOKEN",
    )
