"""OutboxService.WatchOutbox on ModuleStore and Registry: the feed Telemetry follows."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest

from ggmodules.common.v1 import outbox_service_pb2 as pb
from ggmodules.internal.v1 import outbox_service_pb2_grpc as pb_grpc
from tests.harness import Subscription, Suite, is_write_of, status_of
from tests.harness.registry import create_run, full_profile, open_instance, store_ids


def watch(suite: Suite, address: str, after: int, heartbeat_ms: int = 50) -> Any:
    stub = pb_grpc.OutboxServiceStub(suite.channel(address))
    sub = Subscription(
        stub.WatchOutbox(pb.WatchOutboxRequest(after_origin_seq=after, heartbeat_ms=heartbeat_ms))
    )
    suite.subscriptions.append(sub)
    return sub


def test_watch_outbox_sends_every_event_after_a_position_in_order_then_heartbeats(suite: Suite) -> None:
    run = create_run(suite.reg, full_profile("coder")).run_id
    coder = open_instance(suite.reg, run, "coder")
    everything = suite.outbox(run)
    start = everything[2].origin_seq

    feed = watch(suite, suite.modulestore.address, start)
    got: list[Any] = []
    while not got or got[-1].origin_seq < everything[-1].origin_seq:
        batch = feed.next()
        got += [ev for ev in batch.events if ev.run_id == run]
        assert batch.head_origin_seq >= max([e.origin_seq for e in batch.events], default=0)
    assert [ev.origin_seq for ev in got] == [ev.origin_seq for ev in everything[3:]]
    assert got == everything[3:]

    idle = feed.next()
    assert not idle.events and idle.head_origin_seq >= everything[-1].origin_seq

    suite.say(run, coder.agent_id, store_ids(coder)["history"], "new")
    batch = feed.next()
    while not batch.events:  # a heartbeat may be on its way already
        batch = feed.next()
    assert [ev.WhichOneof("body") for ev in batch.events] == ["write"]
    assert batch.events[0].origin_seq == batch.head_origin_seq == suite.outbox(run)[-1].origin_seq


def test_registry_serves_its_outbox_too(suite: Suite) -> None:
    feed = watch(suite, suite.registry.address, 0, heartbeat_ms=1000)
    run = create_run(suite.reg, full_profile("coder")).run_id
    events = []
    while not any(ev.run_id == run for ev in events):
        events += feed.next().events
    assert [ev.origin for ev in events] == ["registry"] * len(events)
    assert [ev.origin_seq for ev in events] == list(range(1, len(events) + 1))
    mine = [ev for ev in events if ev.run_id == run]
    assert [(ev.run.status, ev.agent_id) for ev in mine] == [("created", "")]


def test_concurrent_writers_reach_telemetry_once_each_in_origin_order(suite: Suite) -> None:
    """On PostgreSQL, origin_seq values can commit out of order: the feed sends only as far as the outbox is
    final (test_outbox_frontier.py), so Telemetry gets every event once, in origin_seq order."""
    run = create_run(suite.reg, full_profile("coder")).run_id
    agents = [open_instance(suite.reg, run, "coder") for _ in range(6)]

    def work(agent: Any) -> None:
        for n in range(15):
            suite.say(run, agent.agent_id, store_ids(agent)["history"], f"{agent.agent_id} {n}")

    with ThreadPoolExecutor(len(agents)) as pool:
        list(pool.map(work, agents))
    last = agents[0]
    suite.say(run, last.agent_id, store_ids(last)["history"], "end")

    got = suite.subscribe(run).until(is_write_of("end"))
    from_modulestore = [ev.origin_seq for _, ev in got if ev.origin == "modulestore"]
    assert from_modulestore == [ev.origin_seq for ev in suite.outbox(run)]


@pytest.mark.parametrize("heartbeat_ms", [1, 49, 60_001, -5])
def test_r47_a_heartbeat_out_of_bounds_is_refused_naming_the_bounds(suite: Suite, heartbeat_ms: int) -> None:
    for address in (suite.modulestore.address, suite.registry.address):
        err = watch(suite, address, 0, heartbeat_ms=heartbeat_ms).error()
        assert status_of(err) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
        assert "between 50 and 60000" in (err.details() or "")
