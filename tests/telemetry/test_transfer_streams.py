"""Transfers seen through Telemetry's streams end to end (R30, R31): Registry, ModuleStore, Transfer and
Telemetry, each real, the streams read through Subscribe.

The successor's stream is read up to a marker the successor writes last. The predecessor can no longer write
(it handed on), so its stream is read up to a heartbeat whose head is at or past that marker: a heartbeat
follows a read that reached the head, so every event of the stream up to that head has been sent before it,
and events of one origin are ingested in order, so the predecessor's drain is in by then.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import event_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.registry.v1 import registry_pb2
from ggmodules.transfer.v1 import transfer_pb2
from tests.harness import BACKENDS, Suite, is_write_of
from tests.harness.registry import (
    KIND_WORD,
    create_run,
    edge,
    fsm,
    full_profile,
    module,
    open_instance,
    profile,
    rows,
)
from tests.harness.subscriptions import shape
from tests.harness.transfers import exec_, instance, transition

KIND_ORDER = (c.KIND_HISTORY, c.KIND_MEMORIES, c.KIND_TASKS, c.KIND_BOARD, c.KIND_SKILLS, c.KIND_ARCHIVE)
HEARTBEAT_MS = 50

Events = list[tuple[int, event_pb2.Event]]


@pytest.fixture(scope="module", params=BACKENDS)
def suite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    """ModuleStore, Registry, Transfer and Telemetry on each backend, each on its own database."""
    with Suite(request.param, Path(tmp_path_factory.mktemp(f"tel-transfer-{request.param}")),
               telemetry=True) as s:
        yield s


def held_in_kind_order(inst: registry_pb2.Instance) -> list[tuple[c.Kind.ValueType, str]]:
    """(kind, store id) of every module the instance holds, in kind order."""
    by_kind = {r.kind: r for r in inst.roster}
    return [(k, by_kind[k].store_id) for k in KIND_ORDER if k in by_kind and by_kind[k].enabled]


def opening(inst: registry_pb2.Instance) -> list[tuple[str, str, str]]:
    """An opened instance's stream start: its roster, then one bind per store it holds (R32)."""
    return [(inst.agent_id, "roster", "")] + [(inst.agent_id, "bind", s) for _, s in held_in_kind_order(inst)]


def say(suite: Suite, inst: registry_pb2.Instance, word: str, **op: object) -> None:
    suite.write(inst.run_id, inst.agent_id, rows(inst)[word].store_id, **op)


def stream_through_head(suite: Suite, run_id: str, agent_id: str, head: int) -> Events:
    """Every event of the agent's stream, read until a heartbeat reports a head at or past `head`."""
    sub = suite.subscribe(run_id, agent_id, heartbeat_ms=HEARTBEAT_MS)
    got: Events = []
    while True:
        item = sub.next()
        if item.WhichOneof("item") == "event":
            got.append((item.event.cursor, item.event.event))
        elif item.heartbeat.head_cursor >= head:
            return got


def successor_stream(suite: Suite, successor: registry_pb2.Instance, marker: str) -> Events:
    """The successor's stream up to and including the marker it writes now."""
    suite.say(successor.run_id, successor.agent_id, rows(successor)["history"].store_id, marker)
    return suite.subscribe(successor.run_id, successor.agent_id).until(is_write_of(marker))


def assert_cursors_increase(*streams: Events) -> None:
    for got in streams:
        cursors = [cursor for cursor, _ in got]
        assert cursors == sorted(set(cursors)) and cursors[0] > 0


def assert_successor_opens_with_roster_and_restates(
    got: Events, moved: transfer_pb2.Transfer, successor: registry_pb2.Instance, predecessor: str, cause: str
) -> None:
    """Roster once (with the opening note), then one restate per module held, in kind order, then the
    marker write: nothing else."""
    me = successor.agent_id
    held = held_in_kind_order(successor)
    assert shape(got) == [
        (me, "roster", ""),
        *[(me, "restate", store_id) for _, store_id in held],
        (me, "write", rows(successor)["history"].store_id),
    ]
    roster = got[0][1].roster
    assert (roster.cause, roster.predecessor_agent_id) == (cause, predecessor)
    assert roster.opening_note == moved.opening_note != ""
    assert list(roster.rows) == list(moved.roster) == list(successor.roster)
    restates = [ev for _, ev in got[1:-1]]
    assert [ev.kind for ev in restates] == [kind for kind, _ in held]
    assert {ev.restate.predecessor_agent_id for ev in restates} == {predecessor}
    outcome = {o.kind: o.outcome for o in moved.outcomes}
    assert [ev.restate.outcome for ev in restates] == [outcome[ev.kind] for ev in restates]
    assert [ev.stream_seq for _, ev in got] == list(range(1, len(got) + 1))


def test_r30_r31_an_exec_drains_memories_on_the_planners_stream_and_restates_on_the_successors(
    suite: Suite,
) -> None:
    planner_profile = profile("planner", memories=module(), tasks=module())
    coder_profile = profile("coder", tasks=module(), archive=module())
    run = create_run(suite.reg, planner_profile, coder_profile, board=False).run_id
    planner = open_instance(suite.reg, run, "planner")
    assert [KIND_WORD[k] for k, _ in held_in_kind_order(planner)] == ["history", "memories", "tasks"]
    suite.say(run, planner.agent_id, rows(planner)["history"].store_id, "Build a CLI")
    say(suite, planner, "tasks", create_task=ms.CreateTask(title="write the parser"))
    say(suite, planner, "memories", write_pad=ms.WritePad(text="the user wants argparse"))

    moved = exec_(suite.tr, run, planner.agent_id, "coder")
    successor = instance(suite.reg, run, moved.successor_agent_id)
    outcome = {KIND_WORD[o.kind]: o.outcome for o in moved.outcomes}
    assert outcome == {
        "history": c.OUTCOME_CARRIED,
        "memories": c.OUTCOME_DROPPED,
        "tasks": c.OUTCOME_CARRIED,
        "archive": c.OUTCOME_FRESH,
    }

    theirs = successor_stream(suite, successor, "coder's first word")
    assert_successor_opens_with_roster_and_restates(theirs, moved, successor, planner.agent_id, "exec")
    carried = {ev.kind: ev.restate for _, ev in theirs[1:-1]}
    # A window re-states its figures, not its thread; a task list its contents.
    assert carried[c.KIND_HISTORY].figures.items == 1
    assert list(carried[c.KIND_HISTORY].contents.history.messages) == []
    assert [t.title for t in carried[c.KIND_TASKS].contents.tasks.tasks] == ["write the parser"]

    mine = stream_through_head(suite, run, planner.agent_id, theirs[-1][0])
    memories = rows(planner)["memories"].store_id
    assert shape(mine) == [
        *opening(planner),
        (planner.agent_id, "write", rows(planner)["history"].store_id),
        (planner.agent_id, "write", rows(planner)["tasks"].store_id),
        (planner.agent_id, "write", memories),
        (planner.agent_id, "drain", memories),
    ]
    drain = mine[-1][1]
    assert (drain.kind, drain.drain.successor_agent_id) == (c.KIND_MEMORIES, successor.agent_id)
    assert drain.drain.figures.writes == 1
    assert [ev.stream_seq for _, ev in mine] == list(range(1, len(mine) + 1))
    # The drain precedes the successor's events (R30), on Telemetry's log as in ModuleStore's outbox.
    assert mine[-1][0] < theirs[0][0]
    assert drain.origin_seq < theirs[0][1].origin_seq
    assert_cursors_increase(mine, theirs)


def test_r30_r31_a_transition_carrying_only_history_drains_the_others(suite: Suite) -> None:
    machine = fsm("plan", {"plan": "planner", "code": "coder"}, edge("plan", "code", "history"))
    run = create_run(
        suite.reg, full_profile("planner"), profile("coder", tasks=module()), board=False, machine=machine
    ).run_id
    planner = open_instance(suite.reg, run, "planner")
    held = held_in_kind_order(planner)
    assert [KIND_WORD[k] for k, _ in held] == ["history", "memories", "tasks", "skills", "archive"]
    suite.say(run, planner.agent_id, rows(planner)["history"].store_id, "plan it")
    say(suite, planner, "tasks", create_task=ms.CreateTask(title="left behind"))

    moved = transition(suite.tr, run, planner.agent_id, "code")
    successor = instance(suite.reg, run, moved.successor_agent_id)
    outcome = {KIND_WORD[o.kind]: o.outcome for o in moved.outcomes}
    assert outcome == {
        "history": c.OUTCOME_CARRIED,
        "memories": c.OUTCOME_DROPPED,
        "tasks": c.OUTCOME_FRESH,
        "skills": c.OUTCOME_DROPPED,
        "archive": c.OUTCOME_DROPPED,
    }

    theirs = successor_stream(suite, successor, "coder starts")
    assert_successor_opens_with_roster_and_restates(theirs, moved, successor, planner.agent_id, "transition")
    assert [KIND_WORD[ev.kind] for _, ev in theirs[1:-1]] == ["history", "tasks"]
    fresh_tasks = theirs[2][1].restate
    assert rows(successor)["tasks"].store_id != rows(planner)["tasks"].store_id
    assert list(fresh_tasks.contents.tasks.tasks) == []

    mine = stream_through_head(suite, run, planner.agent_id, theirs[-1][0])
    drained = [store_id for kind, store_id in held if kind != c.KIND_HISTORY]
    assert shape(mine) == [
        *opening(planner),
        (planner.agent_id, "write", rows(planner)["history"].store_id),
        (planner.agent_id, "write", rows(planner)["tasks"].store_id),
        *[(planner.agent_id, "drain", store_id) for store_id in drained],
    ]
    drains = [ev for _, ev in mine[-len(drained) :]]
    assert {ev.drain.successor_agent_id for ev in drains} == {successor.agent_id}
    assert [ev.stream_seq for _, ev in mine] == list(range(1, len(mine) + 1))
    assert mine[-1][0] < theirs[0][0]
    assert_cursors_increase(mine, theirs)
