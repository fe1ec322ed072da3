"""Per-holder streams end to end, through Registry, ModuleStore and Telemetry (R12, R13, R28, R29, R32).

Every test ends its actions with a marker write on the stream it reads; events of one origin are ingested in
order, so once the marker arrives everything before it has too, and the sequence can be asserted exactly.
"""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from tests.harness import Suite, is_write_of
from tests.harness.registry import create_run, fork, full_profile, open_instance, spawn, store_ids
from tests.harness.subscriptions import shape

KINDS = ("history", "memories", "tasks", "board", "skills", "archive")


def opening(agent_id: str, held: dict[str, str]) -> list[tuple[str, str, str]]:
    """An instance's stream as it opens: its roster, then one bind per store (R32)."""
    return [(agent_id, "roster", "")] + [(agent_id, "bind", held[k]) for k in KINDS]


def stream_until_marker(suite: Suite, run_id: str, agent_id: str, store_id: str, marker: str) -> list:
    suite.say(run_id, agent_id, store_id, marker)
    return suite.subscribe(run_id, agent_id).until(is_write_of(marker))


def test_r28_a_write_appears_once_on_its_writers_stream(suite: Suite) -> None:
    run = create_run(suite.reg, full_profile("coder")).run_id
    coder = open_instance(suite.reg, run, "coder")
    held = store_ids(coder)
    suite.write(run, coder.agent_id, held["tasks"], create_task=ms.CreateTask(title="first"))
    suite.write(run, coder.agent_id, held["memories"], write_pad=ms.WritePad(text="a note"))

    got = stream_until_marker(suite, run, coder.agent_id, held["history"], "end")

    assert shape(got) == [
        *opening(coder.agent_id, held),
        (coder.agent_id, "write", held["tasks"]),
        (coder.agent_id, "write", held["memories"]),
        (coder.agent_id, "write", held["history"]),
    ]
    assert [ev.write.op for _, ev in got[-3:]] == ["create_task", "write_pad", "append_messages"]
    assert [ev.stream_seq for _, ev in got] == list(range(1, len(got) + 1))


def test_r29_each_co_holder_gets_its_own_snapshot_on_its_own_stream(suite: Suite) -> None:
    run = create_run(suite.reg, full_profile("coder", scope=c.MEMORY_SCOPE_AGENT)).run_id
    first, second, third = (open_instance(suite.reg, run, "coder") for _ in range(3))
    held = {i.agent_id: store_ids(i) for i in (first, second, third)}
    board, memories = held[first.agent_id]["board"], held[first.agent_id]["memories"]
    assert all(h["board"] == board and h["memories"] == memories for h in held.values())

    suite.write(run, first.agent_id, board, create_issue=ms.CreateIssue(prefix="OPS", title="deploy"))
    suite.write(run, second.agent_id, memories, write_pad=ms.WritePad(text="shared note"))

    writer = stream_until_marker(suite, run, first.agent_id, held[first.agent_id]["history"], "end-0")
    assert shape(writer) == [
        *opening(first.agent_id, held[first.agent_id]),
        (first.agent_id, "write", board),
        (first.agent_id, "snapshot", memories),
        (first.agent_id, "write", held[first.agent_id]["history"]),
    ]
    assert writer[-2][1].snapshot.written_by == second.agent_id

    co_holder = stream_until_marker(suite, run, third.agent_id, held[third.agent_id]["history"], "end-2")
    assert shape(co_holder) == [
        *opening(third.agent_id, held[third.agent_id]),
        (third.agent_id, "snapshot", board),
        (third.agent_id, "snapshot", memories),
        (third.agent_id, "write", held[third.agent_id]["history"]),
    ]
    board_snapshot, memories_snapshot = co_holder[-3][1].snapshot, co_holder[-2][1].snapshot
    assert (board_snapshot.written_by, memories_snapshot.written_by) == (first.agent_id, second.agent_id)
    assert [i.id for i in board_snapshot.contents.board.issues] == ["OPS-1"]
    assert [e.body for e in memories_snapshot.contents.memories.entries] == ["shared note"]


def test_r13_a_sharer_gets_no_backlog(suite: Suite) -> None:
    run = create_run(suite.reg, full_profile("coder", scope=c.MEMORY_SCOPE_AGENT)).run_id
    first = open_instance(suite.reg, run, "coder")
    held = store_ids(first)
    for n in range(3):
        suite.write(run, first.agent_id, held["memories"], write_pad=ms.WritePad(text=f"note {n}"))
        issue = ms.CreateIssue(prefix="OPS", title=f"{n}")
        suite.write(run, first.agent_id, held["board"], create_issue=issue)

    sharer = open_instance(suite.reg, run, "coder")
    assert store_ids(sharer)["memories"] == held["memories"] and store_ids(sharer)["board"] == held["board"]

    got = stream_until_marker(suite, run, sharer.agent_id, store_ids(sharer)["history"], "end")
    assert shape(got) == [
        *opening(sharer.agent_id, store_ids(sharer)),
        (sharer.agent_id, "write", store_ids(sharer)["history"]),
    ]
    # The binds state the shared stores as they stand, not as a replay of how they got there.
    binds = {ev.store_id: ev.bind for _, ev in got if ev.WhichOneof("body") == "bind"}
    assert binds[held["memories"]].figures.writes == 3 and binds[held["board"]].figures.items == 3


def test_r12_a_fork_copies_no_pending_event(suite: Suite) -> None:
    run = create_run(suite.reg, full_profile("coder")).run_id
    original = open_instance(suite.reg, run, "coder")
    held = store_ids(original)
    suite.say(run, original.agent_id, held["history"], "before the fork")
    suite.write(run, original.agent_id, held["tasks"], create_task=ms.CreateTask(title="carried"))

    copy = fork(suite.reg, run, original.agent_id)
    copied = store_ids(copy)

    got = stream_until_marker(suite, run, copy.agent_id, copied["history"], "end-copy")
    assert shape(got) == [*opening(copy.agent_id, copied), (copy.agent_id, "write", copied["history"])]
    roster = got[0][1].roster
    assert (roster.cause, roster.parent_agent_id) == ("fork", original.agent_id)

    # The original's stream holds its own two writes once each, and nothing the fork caused.
    mine = stream_until_marker(suite, run, original.agent_id, held["history"], "end-original")
    assert shape(mine) == [
        *opening(original.agent_id, held),
        (original.agent_id, "write", held["history"]),
        (original.agent_id, "write", held["tasks"]),
        (original.agent_id, "write", held["history"]),
    ]


def test_r32_each_instances_roster_appears_once_and_first(suite: Suite) -> None:
    run = create_run(suite.reg, full_profile("coder"), full_profile("helper")).run_id
    root = open_instance(suite.reg, run, "coder")
    child = spawn(suite.reg, run, root.agent_id, "helper")
    copy = fork(suite.reg, run, root.agent_id)
    agents = [root.agent_id, child.agent_id, copy.agent_id]
    marker = "end"
    suite.say(run, root.agent_id, store_ids(root)["history"], marker)

    # The run's stream: every ModuleStore event of the run once, in ModuleStore's order, and Registry's
    # `created` for the run (its own origin, so it may arrive anywhere in between).
    sub = suite.subscribe(run)
    got = sub.until(is_write_of(marker))
    while not any(ev.origin == "registry" for _, ev in got):
        got.append(sub.next_event())
    from_modulestore = [(ev.origin_seq, ev.agent_id) for _, ev in got if ev.origin == "modulestore"]
    assert from_modulestore == [(ev.origin_seq, ev.agent_id) for ev in suite.outbox(run)]
    assert [(ev.origin, ev.run.status) for _, ev in got if ev.origin == "registry"] == [
        ("registry", "created")
    ]
    assert [cursor for cursor, _ in got] == sorted({cursor for cursor, _ in got})

    rosters = [ev for _, ev in got if ev.WhichOneof("body") == "roster"]
    assert [ev.agent_id for ev in rosters] == agents
    assert [ev.roster.cause for ev in rosters] == ["open", "spawn", "fork"]
    for agent in agents:
        first = next(ev for _, ev in got if ev.agent_id == agent)
        assert first.WhichOneof("body") == "roster" and first.stream_seq == 1
