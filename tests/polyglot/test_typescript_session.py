"""The TypeScript client (clients/typescript) drives a real Registry and ModuleStore through the contracts.

`dist/examples/session.js` (compiled from src/examples/session.ts) runs as a subprocess against the suite;
its JSON lines are what a Node runtime observed, and the Python stubs then read the stores it wrote to check
both languages see one state. (This session was the untyped Node client's, which the typed client replaced.)
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ggmodules.common.v1 import common_pb2, module_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc
from ggmodules.registry.v1 import registry_pb2, registry_service_pb2_grpc
from ggmodules.registry.v1 import registry_service_pb2 as reg_pb2
from tests.harness import ROOT, Suite

KIND_ORDER = ["KIND_HISTORY", "KIND_MEMORIES", "KIND_TASKS", "KIND_BOARD", "KIND_SKILLS", "KIND_ARCHIVE"]
STEPS = ["create_run", "open_instance", "set_system_prompt", "append_messages", "create_task", "create_issue",
         "fork_instance", "copy_writes", "render_prompt", "refusal"]

Session = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def node_session(suite: Suite, ts_client: Path) -> Session:
    """One run of session.js against the suite, its JSON lines keyed by step."""
    proc = subprocess.run(
        ["node", str(ts_client / "examples" / "session.js"),
         "--registry", suite.registry.address, "--modulestore", suite.modulestore.address],
        capture_output=True, text=True, timeout=60, cwd=ROOT, check=False,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert proc.returncode == 0, f"session.js exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert [line["step"] for line in lines] == STEPS
    return {line["step"]: line for line in lines}


def _rows(session: Session) -> dict[str, dict[str, Any]]:
    return {row["kind"]: row for row in session["open_instance"]["roster"]}


def _store(modulestore: modulestore_service_pb2_grpc.ModuleStoreServiceStub, session: Session,
           kind: str) -> ms_pb2.GetStoreResponse:
    req = ms_pb2.GetStoreRequest(run_id=session["create_run"]["run_id"],
                                 agent_id=session["open_instance"]["agent_id"],
                                 store_id=_rows(session)[kind]["store_id"])
    resp: ms_pb2.GetStoreResponse = modulestore.GetStore(req, timeout=10)
    return resp


def test_r32_r34_node_client_opens_an_instance_with_its_six_roster_rows(node_session: Session) -> None:
    assert re.fullmatch(r"run-[0-9a-f]{12}", node_session["create_run"]["run_id"])
    assert node_session["create_run"]["status"] == "RUN_STATUS_RUNNING"
    opened = node_session["open_instance"]
    assert opened["agent_id"] == "planner-0"
    assert [row["kind"] for row in opened["roster"]] == KIND_ORDER
    rows = _rows(node_session)
    expected = {
        "KIND_HISTORY": ("history-0", "ORIGIN_CREATED"),
        "KIND_MEMORIES": ("memories-0", "ORIGIN_CREATED"),
        "KIND_TASKS": ("tasks-0", "ORIGIN_CREATED"),
        "KIND_BOARD": ("board-0", "ORIGIN_RUN"),
    }
    for kind, (store_id, origin) in expected.items():
        row = rows[kind]
        assert (row["store_id"], row["enabled"], row["origin"], row["may_write"]) == (
            store_id, True, origin, True
        )
    assert rows["KIND_MEMORIES"]["scope"] == "MEMORY_SCOPE_INSTANCE"
    assert rows["KIND_MEMORIES"]["strategy"] == "MEMORY_STRATEGY_SCRATCHPAD"
    for kind in ("KIND_SKILLS", "KIND_ARCHIVE"):
        assert (rows[kind]["enabled"], rows[kind]["store_id"]) == (False, ""), kind


def test_r11_r14_a_fork_made_from_node_numbers_on_in_its_own_task_list_and_shares_the_one_board(
    node_session: Session, modulestore: modulestore_service_pb2_grpc.ModuleStoreServiceStub
) -> None:
    assert node_session["append_messages"]["last_seq"] == 1
    assert node_session["append_messages"]["turn"] == 1
    assert node_session["create_task"]["task_id"] == 1
    assert node_session["create_issue"]["issue_id"] == "GG-1"
    rows, copy = _rows(node_session), node_session["copy_writes"]
    copy_rows = {row["kind"]: row for row in node_session["fork_instance"]["roster"]}
    # R11: the copy's task list is a new store whose numbering carries on from the original's.
    assert copy["task_store_id"] == copy_rows["KIND_TASKS"]["store_id"] != rows["KIND_TASKS"]["store_id"]
    assert copy["task_id"] == node_session["create_task"]["task_id"] + 1
    original = _store(modulestore, node_session, "KIND_TASKS").contents.tasks
    assert [t.title for t in original.tasks] == [node_session["create_task"]["title"]]
    # R14: the copy holds the run's one board, so its issue takes the next number on the same counter.
    assert copy["issue_store_id"] == copy_rows["KIND_BOARD"]["store_id"] == rows["KIND_BOARD"]["store_id"]
    assert copy["issue_id"] == "GG-2"
    board = _store(modulestore, node_session, "KIND_BOARD").contents.board
    assert [i.id for i in board.issues] == ["GG-1", "GG-2"]


def test_r4_r8_r10_node_client_renders_history_first_and_nothing_for_the_board(node_session: Session) -> None:
    contributions = node_session["render_prompt"]["contributions"]
    rows = _rows(node_session)
    assert [c["kind"] for c in contributions] == ["KIND_HISTORY", "KIND_MEMORIES", "KIND_TASKS", "KIND_BOARD"]
    assert all(c["store_id"] == rows[c["kind"]]["store_id"] for c in contributions)
    history, _memories, tasks, board = contributions
    assert [(m["role"], m["section"], m["content"]) for m in history["messages"]] == [
        ("system", "system_prompt", node_session["set_system_prompt"]["text"]),
        ("user", "thread", node_session["append_messages"]["content"]),
    ]
    assert not history["contributes_nothing"]
    assert [m["section"] for m in tasks["messages"]] == ["tasks"]
    assert node_session["create_task"]["title"] in tasks["messages"][0]["content"]
    assert (board["contributes_nothing"], board["messages"]) == (True, [])


def test_r9_r47_node_client_reads_the_refusal_code_and_errorinfo_reason(node_session: Session) -> None:
    refusal = node_session["refusal"]
    assert (refusal["code"], refusal["reason"]) == ("FAILED_PRECONDITION", "SYSTEM_PROMPT_ALREADY_SET")
    assert refusal["message"]


def test_r32_python_stubs_read_the_run_and_roster_the_node_client_made(
    node_session: Session, registry: registry_service_pb2_grpc.RegistryServiceStub
) -> None:
    run_id = node_session["create_run"]["run_id"]
    run = registry.GetRun(reg_pb2.GetRunRequest(run_id=run_id), timeout=10).run
    assert (run.status, run.board_enabled, [p.name for p in run.profiles]) == (
        registry_pb2.RUN_STATUS_RUNNING, True, ["planner"])
    agent_id = node_session["open_instance"]["agent_id"]
    req = reg_pb2.GetInstanceRequest(run_id=run_id, agent_id=agent_id)
    instance = registry.GetInstance(req, timeout=10).instance
    seen_from_python = [
        {
            "kind": common_pb2.Kind.Name(row.kind),
            "store_id": row.store_id,
            "enabled": row.enabled,
            "origin": common_pb2.Origin.Name(row.origin),
            "scope": common_pb2.MemoryScope.Name(row.scope),
            "may_write": row.may_write,
            "strategy": common_pb2.MemoryStrategy.Name(row.strategy),
        }
        for row in instance.roster
    ]
    assert seen_from_python == node_session["open_instance"]["roster"]


def test_r48_python_stubs_read_what_the_node_client_wrote_and_nothing_of_the_refusal(
    node_session: Session, modulestore: modulestore_service_pb2_grpc.ModuleStoreServiceStub
) -> None:
    history = _store(modulestore, node_session, "KIND_HISTORY")
    window = history.contents.history
    first_prompt = node_session["set_system_prompt"]["text"]
    assert (window.system_prompt, window.system_prompt_set) == (first_prompt, True)
    appended = node_session["append_messages"]
    assert [(m.seq, m.role, m.content, m.turn) for m in window.messages] == [
        (appended["last_seq"], appended["role"], appended["content"], appended["turn"])
    ]
    assert window.turn == appended["turn"]
    assert history.store.figures.writes == 2  # the refused second prompt wrote nothing
    assert [(h.agent_id, h.origin, h.may_write, h.active) for h in history.store.holders] == [
        (node_session["open_instance"]["agent_id"], common_pb2.ORIGIN_CREATED, True, True)
    ]

    tasks = _store(modulestore, node_session, "KIND_TASKS").contents.tasks
    created = node_session["create_task"]
    assert [(t.id, t.title, t.description, t.status, list(t.blocked_by)) for t in tasks.tasks] == [
        (created["task_id"], created["title"], created["description"], module_pb2.TASK_STATUS_OPEN, [])
    ]
    assert tasks.next_id == created["task_id"] + 1

    board = _store(modulestore, node_session, "KIND_BOARD").contents.board
    issue, copy = node_session["create_issue"], node_session["copy_writes"]
    assert [(i.id, i.title, i.body, i.status) for i in board.issues] == [
        (issue["issue_id"], issue["title"], issue["body"], module_pb2.ISSUE_STATUS_OPEN),
        (copy["issue_id"], copy["issue_title"], "", module_pb2.ISSUE_STATUS_OPEN),
    ]
    assert [(c.prefix, c.last) for c in board.counters] == [(issue["prefix"], 2)]
