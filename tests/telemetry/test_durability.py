"""Telemetry as its own process: killed mid-stream, down while the others write, started late. Nothing is
lost and nothing arrives twice; a subscriber resumes by cursor (R33)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ggmodules.common.v1 import event_pb2
from tests.harness import ServiceProcess, Suite, is_write_of
from tests.harness.registry import create_run, full_profile, open_instance, store_ids
from tests.telemetry._support.runs import key, read_run


@pytest.fixture()
def bare(backend: str, tmp_path: Path) -> Iterator[Suite]:
    """ModuleStore and Registry; the test starts Telemetry as a process."""
    with Suite(backend, tmp_path, transfer=False) as s:
        yield s


def assert_complete(suite: Suite, run: str, got: list[tuple[int, event_pb2.Event]]) -> None:
    """Every event of the run once: ModuleStore's in its own order, Registry's `created`; cursors rising."""
    cursors = [c for c, _ in got]
    assert cursors == sorted(set(cursors))
    assert len({key(ev) for _, ev in got}) == len(got)
    assert [key(ev) for _, ev in got if ev.origin == "modulestore"] == [key(ev) for ev in suite.outbox(run)]
    assert [ev.run.status for _, ev in got if ev.origin == "registry"] == ["created"]


def test_kill_9_mid_stream_then_resume_by_cursor_no_gap_no_duplicate(bare: Suite) -> None:
    bare.start_telemetry_process()
    run = create_run(bare.reg, full_profile("coder")).run_id
    coder = open_instance(bare.reg, run, "coder")
    history = store_ids(coder)["history"]
    for n in range(10):
        bare.say(run, coder.agent_id, history, f"before {n}")
    bare.say(run, coder.agent_id, history, "before the kill")

    sub = bare.subscribe(run)
    seen = sub.until(is_write_of("before 4"))
    first = bare.telemetry
    assert isinstance(first, ServiceProcess)
    first.kill()

    # The others keep working while Telemetry is gone; their outboxes hold the events.
    for n in range(10):
        bare.say(run, coder.agent_id, history, f"while down {n}")
    bare.say(run, coder.agent_id, history, "end")

    bare.start_telemetry_process()  # same database
    got = read_run(bare, run, "end", seen)
    assert_complete(bare, run, got)
    texts = [
        m.content
        for _, ev in got
        if ev.WhichOneof("body") == "write"
        for m in ev.write.delta.history.messages
    ]
    assert texts == [f"before {n}" for n in range(10)] + ["before the kill"] + [
        f"while down {n}" for n in range(10)
    ] + ["end"]


def test_telemetry_down_while_writes_happen_then_up_nothing_lost(bare: Suite) -> None:
    # Telemetry has never run: every event waits in the outboxes.
    run = create_run(bare.reg, full_profile("coder")).run_id
    coder = open_instance(bare.reg, run, "coder")
    history = store_ids(coder)["history"]
    for n in range(5):
        bare.say(run, coder.agent_id, history, f"early {n}")
    bare.say(run, coder.agent_id, history, "first end")

    telemetry = bare.start_telemetry_process()
    first = read_run(bare, run, "first end")
    assert_complete(bare, run, first)

    telemetry.kill()
    for n in range(5):
        bare.say(run, coder.agent_id, history, f"late {n}")
    bare.say(run, coder.agent_id, history, "second end")
    bare.start_telemetry_process()

    # From the beginning again, on the restarted Telemetry: the whole run once.
    everything = read_run(bare, run, "second end")
    assert everything[: len(first)] == first
    assert_complete(bare, run, everything)


def test_console_model_reads_the_same_after_telemetry_restarts(bare: Suite) -> None:
    """The views are folded from the stored events alone: a restarted Telemetry answers exactly as before."""
    from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel

    bare.start_telemetry_process()
    run = create_run(bare.reg, full_profile("coder")).run_id
    coder = open_instance(bare.reg, run, "coder")
    history = store_ids(coder)["history"]
    bare.say(run, coder.agent_id, history, "hello")
    bare.say(run, coder.agent_id, history, "end")
    read_run(bare, run, "end")

    def views() -> tuple[object, ...]:
        return (
            bare.tel.InspectInstances(tel.InspectInstancesRequest(run_id=run), timeout=10),
            bare.tel.InspectModules(tel.InspectModulesRequest(run_id=run), timeout=10),
            bare.tel.InspectAgents(tel.InspectAgentsRequest(run_id=run), timeout=10),
            bare.tel.GetStoreDetail(tel.GetStoreDetailRequest(run_id=run, store_id=history), timeout=10),
        )

    before = views()
    assert before == views()  # folding the same events again gives the same answer
    telemetry = bare.telemetry
    assert isinstance(telemetry, ServiceProcess)
    telemetry.kill()
    bare.start_telemetry_process()  # same database
    read_run(bare, run, "end")
    assert views() == before
    instances = before[0]
    assert isinstance(instances, tel.InspectInstancesResponse)
    assert [f.agent_id for f in instances.instances] == [coder.agent_id]
