"""Events on per-agent streams (R28, R29, R32, R44), read back from ReadOutbox."""

from __future__ import annotations

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.modulestore.v1 import modulestore_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from tests.harness.modulestore import (
    KINDS,
    Stub,
    append,
    b,
    bind,
    events,
    new_run,
    open_agent,
    shape,
    streams,
    write,
)


def test_r32_an_opening_stream_is_its_roster_then_one_bind_per_store(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    stream = streams(modulestore, run)["coder-0"]
    assert shape(stream) == [("roster", "")] + [("bind", a[k]) for k in KINDS]
    roster = stream[0].roster
    assert (roster.profile, roster.cause) == ("coder", "open")
    assert [(r.kind, r.store_id, r.enabled, r.origin) for r in roster.rows] == [
        (k, a[k], True, a.roster[k].origin) for k in KINDS
    ]
    assert [ev.bind.origin for ev in stream[1:]] == [a.roster[k].origin for k in KINDS]
    assert [ev.stream_seq for ev in stream] == list(range(1, 8))


def test_r28_r29_a_write_is_one_event_for_the_writer_and_a_snapshot_for_each_other_holder(
    modulestore: Stub,
) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    others = [
        bind(
            modulestore,
            run,
            f"helper-{i}",
            [
                b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
                b(c.KIND_BOARD, ms.BIND_ACTION_NAMED, named_key="run/board", origin=c.ORIGIN_RUN),
            ],
        )
        for i in range(2)
    ]
    before = {agent: len(evs) for agent, evs in streams(modulestore, run).items()}
    write(modulestore, a, c.KIND_BOARD, create_issue=svc.CreateIssue(prefix="OPS", title="deploy"))
    after = streams(modulestore, run)
    board = a[c.KIND_BOARD]
    assert shape(after["coder-0"][before["coder-0"] :]) == [("write", board)]
    for other in others:
        new = after[other.agent_id][before[other.agent_id] :]
        assert shape(new) == [("snapshot", board)]
        snap = new[0].snapshot
        assert snap.written_by == "coder-0" and snap.figures.items == 1 and snap.figures.writes == 1
        assert [i.id for i in snap.contents.board.issues] == ["OPS-1"]
    mine = after["coder-0"][-1].write
    assert mine.op == "create_issue" and [i.id for i in mine.delta.board.issues] == ["OPS-1"]
    # A write by a later holder is on that holder's stream, not on the stream of the store's first holder.
    before = {agent: len(evs) for agent, evs in after.items()}
    write(modulestore, others[1], c.KIND_BOARD, create_issue=svc.CreateIssue(prefix="OPS", title="ship"))
    again = streams(modulestore, run)
    assert shape(again["helper-1"][before["helper-1"] :]) == [("write", board)]
    for agent in ("coder-0", "helper-0"):
        assert shape(again[agent][before[agent] :]) == [("snapshot", board)]
        assert again[agent][-1].snapshot.written_by == "helper-1"


def test_r44_history_and_archive_snapshots_carry_no_contents(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    helper = bind(
        modulestore,
        run,
        "helper-0",
        [
            b(c.KIND_HISTORY, ms.BIND_ACTION_CREATE),
            b(
                c.KIND_ARCHIVE,
                ms.BIND_ACTION_SHARE,
                source_store_id=a[c.KIND_ARCHIVE],
                origin=c.ORIGIN_INHERITED,
            ),
        ],
    )
    write(
        modulestore,
        a,
        c.KIND_ARCHIVE,
        archive_thread=svc.ArchiveThread(
            title="old debugging", messages=[ms.MessageInput(role="user", content="it broke")]
        ),
    )
    snap = streams(modulestore, run)["helper-0"][-1]
    assert shape([snap]) == [("snapshot", helper[c.KIND_ARCHIVE])]
    assert not snap.snapshot.HasField("contents") and snap.snapshot.figures.items == 1
    write_event = streams(modulestore, run)["coder-0"][-1].write
    assert [t.title for t in write_event.delta.archive.threads] == ["old debugging"]


def test_history_write_event_carries_the_appended_messages(modulestore: Stub) -> None:
    run = new_run()
    a = open_agent(modulestore, run, "coder-0")
    append(modulestore, a, "first")
    append(modulestore, a, "second", start_turn=True)
    writes = [ev.write for ev in streams(modulestore, run)["coder-0"] if ev.WhichOneof("body") == "write"]
    assert [[(m.seq, m.content, m.turn) for m in w.delta.history.messages] for w in writes] == [
        [(1, "first", 0)],
        [(2, "second", 1)],
    ]
    assert [w.figures.writes for w in writes] == [1, 2]


def test_read_outbox_pages_by_origin_seq_and_filters_by_run(modulestore: Stub) -> None:
    run, other = new_run(), new_run()
    open_agent(modulestore, run, "coder-0")
    open_agent(modulestore, other, "coder-0")
    everything = events(modulestore, run)
    assert {ev.run_id for ev in everything} == {run} and len(everything) == 7
    first = modulestore.ReadOutbox(svc.ReadOutboxRequest(run_id=run, page_size=3))
    rest = modulestore.ReadOutbox(
        svc.ReadOutboxRequest(run_id=run, after_origin_seq=first.events[-1].origin_seq)
    )
    assert [e.origin_seq for e in first.events] + [e.origin_seq for e in rest.events] == [
        e.origin_seq for e in everything
    ]
    assert first.head_origin_seq >= everything[-1].origin_seq
    assert all(ev.origin == "modulestore" for ev in everything)
