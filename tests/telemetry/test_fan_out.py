"""Per-holder fan-out stored once (issue 14, R28, R29): a write to a store held by N agents is one outbox row,
whatever N, and every other holder's stream still gets its own snapshot, once, from the outbox and from
Telemetry alike, even when Telemetry is killed -9 part way through the events derived from one write."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import event_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from tests.harness import ServiceProcess, Suite, is_write_of
from tests.harness.registry import create_run, full_profile, open_instance, store_ids

HOLDERS = 24
# A pad this large makes each snapshot about as large: the events of one write to memories held by HOLDERS
# agents then take several 1 MiB pages of WatchOutbox, so a follower can stop between two of them.
BIG_PAD = 200 * 1024


def outbox_rows(suite: Suite, run_id: str) -> int:
    """ModuleStore's outbox rows of the run, counted in its database."""
    engine = create_engine(suite.urls["modulestore"])
    try:
        with engine.connect() as conn:
            query = text("SELECT count(*) FROM ms_outbox WHERE run_id = :run")
            return int(conn.execute(query, {"run": run_id}).scalar_one())
    finally:
        engine.dispose()


def shared_run(suite: Suite, holders: int) -> tuple[str, list[str], dict[str, str]]:
    """A run whose board and memories are held by `holders` agents: (run, agent ids, the first one's stores
    by kind word)."""
    run = create_run(suite.reg, full_profile("coder", scope=c.MEMORY_SCOPE_AGENT)).run_id
    agents = [open_instance(suite.reg, run, "coder") for _ in range(holders)]
    held = store_ids(agents[0])
    assert all(store_ids(a)["memories"] == held["memories"] for a in agents)
    return run, [a.agent_id for a in agents], held


def snapshots_of(events: list[event_pb2.Event], store_id: str, written_by: str) -> dict[str, int]:
    """agent id -> how many snapshots of `store_id` written by `written_by` its stream carries."""
    counts: dict[str, int] = {}
    for ev in events:
        if (
            ev.WhichOneof("body") == "snapshot"
            and ev.store_id == store_id
            and ev.snapshot.written_by == written_by
        ):
            counts[ev.agent_id] = counts.get(ev.agent_id, 0) + 1
    return counts


def test_r29_a_write_to_a_store_held_by_n_agents_is_one_outbox_row_and_a_snapshot_on_each_other_stream(
    suite: Suite,
) -> None:
    run, agents, held = shared_run(suite, HOLDERS)
    writer, board = agents[0], held["board"]
    before = outbox_rows(suite, run)
    suite.write(run, writer, board, create_issue=ms.CreateIssue(prefix="OPS", title="one row"))
    assert outbox_rows(suite, run) == before + 1

    outbox = suite.outbox(run)
    assert snapshots_of(outbox, board, writer) == {a: 1 for a in agents if a != writer}
    mine = [ev for ev in outbox if ev.agent_id == writer and ev.WhichOneof("body") == "write"]
    assert [ev.store_id for ev in mine] == [board]
    origin_seqs = [ev.origin_seq for ev in outbox]
    assert origin_seqs == sorted(set(origin_seqs))  # each its own number, in order

    # Telemetry serves the same events, each once, under the same numbers.
    suite.say(run, writer, held["history"], "end")
    got = suite.subscribe(run).until(is_write_of("end"))
    served = [(ev.origin_seq, ev.agent_id, ev.stream_seq) for _, ev in got if ev.origin == "modulestore"]
    assert served == [(ev.origin_seq, ev.agent_id, ev.stream_seq) for ev in suite.outbox(run)]
    for agent in agents:  # every stream's seqs run on with no gap or repeat
        seqs = [ev.stream_seq for _, ev in got if ev.agent_id == agent and ev.origin == "modulestore"]
        assert seqs == list(range(1, len(seqs) + 1))


def test_reading_from_inside_one_writes_events_gets_the_rest_of_them_once(suite: Suite) -> None:
    """Pages cut inside one write's events (count bound), and a read starting part way through them, each
    get every later event exactly once."""
    run, agents, held = shared_run(suite, HOLDERS)
    board = held["board"]
    suite.write(run, agents[0], board, create_issue=ms.CreateIssue(prefix="OPS", title="paged"))
    everything = suite.outbox(run)
    paged: list[Any] = []
    while True:
        after = paged[-1].origin_seq if paged else 0
        page = suite.ms.ReadOutbox(ms.ReadOutboxRequest(run_id=run, after_origin_seq=after, page_size=5))
        assert len(page.events) <= 5
        if not page.events:
            break
        paged += page.events
    assert paged == everything

    snapshots = [ev for ev in everything if ev.WhichOneof("body") == "snapshot" and ev.store_id == board]
    middle = snapshots[len(snapshots) // 2]
    rest = suite.ms.ReadOutbox(ms.ReadOutboxRequest(run_id=run, after_origin_seq=middle.origin_seq)).events
    assert list(rest) == [ev for ev in everything if ev.origin_seq > middle.origin_seq]


@pytest.fixture()
def bare(backend: str, tmp_path: Path) -> Iterator[Suite]:
    """ModuleStore and Registry; the test starts Telemetry as a process."""
    with Suite(backend, tmp_path, transfer=False) as s:
        yield s


def test_telemetry_killed_9_part_way_through_one_writes_events_then_restarted_loses_and_repeats_nothing(
    bare: Suite,
) -> None:
    run, agents, held = shared_run(bare, 12)
    memories, history = held["memories"], held["history"]
    first = bare.start_telemetry_process()
    for n in range(3):  # each write's events take several WatchOutbox pages
        bare.write(run, agents[n], memories, write_pad=ms.WritePad(text=f"{n}" * BIG_PAD))
    sub = bare.subscribe(run)
    sub.until(lambda ev: ev.WhichOneof("body") == "snapshot" and ev.store_id == memories)
    first.kill()  # Telemetry has stored some of the first write's events, maybe more
    sub.close()
    assert isinstance(first, ServiceProcess)

    bare.say(run, agents[0], history, "end")
    bare.start_telemetry_process()  # same database: resumes after the last event it stored
    got = bare.subscribe(run).until(is_write_of("end"), deadline=90)
    keys = [(ev.origin, ev.origin_seq) for _, ev in got]
    assert len(set(keys)) == len(keys)  # nothing twice
    outbox = bare.outbox(run)
    assert [k for k in keys if k[0] == "modulestore"] == [(ev.origin, ev.origin_seq) for ev in outbox]
    for n in range(3):
        assert snapshots_of([ev for _, ev in got], memories, agents[n]) == {
            a: 1 for a in agents if a != agents[n]
        }
