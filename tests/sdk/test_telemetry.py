"""The SDK's Telemetry: turn reports, the console's views, and following a stream across a restart.

Against real services: the suite's ModuleStore and Registry, Telemetry in-process (following them) or, for
the restart, as its own process stopped and started again on the same port.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from ggmodules.common.v1 import common_pb2
from ggmodules.core.telemetry.streams import Retention
from ggmodules.sdk import (
    Agent,
    AsyncClient,
    Client,
    CostNoneByConstructionError,
    CursorExpiredError,
    Edge,
    Fsm,
    Profile,
    TurnAlreadyReportedError,
    TurnOutOfOrderError,
)
from ggmodules.telemetry.v1 import telemetry_pb2
from tests.harness import (
    InProcessTelemetry,
    ServiceProcess,
    Suite,
    drop_database,
    new_database_url,
    service_config,
)
from tests.sdk.conftest import PROFILES

CODER = Profile("coder", tasks=True, archive=True)
TWO_STAGES = Fsm("plan", {"plan": "planner", "code": "coder"},
                 [Edge("plan", "code", carry=["history", "tasks"])])


@pytest.fixture()
def gg(suite: Suite) -> Iterator[Client]:
    with Client(suite.registry.address, suite.modulestore.address, suite.transfer.address,
                suite.telemetry.address) as client:
        yield client


def until_marker(items: Iterator[telemetry_pb2.StreamEvent], marker: str) -> list[telemetry_pb2.StreamEvent]:
    """Items up to and including the write whose summary carries `marker`."""
    seen = []
    for item in items:
        seen.append(item)
        if marker in _summary(item):
            return seen
    raise AssertionError(f"the stream ended before {marker!r}")


def _summary(item: telemetry_pb2.StreamEvent) -> str:
    event = item.event
    if event.WhichOneof("body") != "write":
        return ""
    return " ".join(m.content for m in event.write.delta.history.messages)


def say(agent: Agent, text: str) -> None:
    agent.history.append("user", text)


def test_r43_a_turn_report_through_the_sdk_is_the_cost_the_modules_view_shows(gg: Client) -> None:
    run = gg.create_run("turns", PROFILES)
    planner = gg.open_instance(run.id, "planner")  # reported at once: Telemetry confirms it with the Registry
    cursor = planner.report_turn(1, {"history": 1200, "tasks": 30})
    assert cursor > 0
    with pytest.raises(TurnAlreadyReportedError) as again:
        planner.report_turn(1, {"history": 5})
    assert again.value.code == grpc.StatusCode.ALREADY_EXISTS
    assert again.value.metadata["cursor"] == str(cursor)
    with pytest.raises(TurnOutOfOrderError):
        planner.report_turn(0, {"history": 5})
    with pytest.raises(CostNoneByConstructionError):
        planner.report_turn(2, {"archive": 5})
    say(planner, "end of turns")
    with gg.subscribe(run.id, planner.id) as stream:
        events = until_marker(stream, "end of turns")
    turns = [e for e in events if e.event.WhichOneof("body") == "turn"]
    assert [(t.cursor, t.event.turn.turn) for t in turns] == [(cursor, 1)]

    modules = gg.inspect_modules(run.id)
    assert modules.cursor >= events[-1].cursor
    costs = {common_pb2.Kind.Name(k.kind): k.cost_per_turn for k in modules.kinds}
    assert costs["KIND_HISTORY"].measured_tokens == 1200 and costs["KIND_TASKS"].measured_tokens == 30
    assert costs["KIND_ARCHIVE"].WhichOneof("value") == "none_by_construction"


def test_r37_r44_r45_the_console_views_read_through_the_sdk(gg: Client) -> None:
    run = gg.create_run("views", [*PROFILES, CODER], fsm=TWO_STAGES)
    planner = gg.open_instance(run.id, "planner")
    planner.tasks.create("write the parser")
    coder = planner.transition("code").successor
    say(coder, "views settled")
    with gg.subscribe(run.id) as stream:
        last = until_marker(stream, "views settled")[-1].cursor
    instances = gg.inspect_instances(run.id)
    assert instances.cursor >= last
    assert [f.agent_id for f in instances.instances] == ["planner-0", "coder-0"]
    agents = gg.inspect_agents(run.id)
    assert [p.profile for p in agents.profiles] == ["planner", "coder"]
    detail = gg.get_store_detail(run.id, coder.store_id("tasks"))
    assert detail.identity.store_id == coder.store_id("tasks") == planner.store_id("tasks")
    assert [h.agent_id for h in detail.holders] == ["planner-0", "coder-0"]


def test_r33_subscribe_resumes_after_a_cursor_and_filters_to_one_agent(gg: Client) -> None:
    run = gg.create_run("streams", PROFILES)
    planner, writer = gg.open_instance(run.id, "planner"), gg.open_instance(run.id, "writer")
    for n in range(3):
        say(planner, f"planner {n}")
        say(writer, f"writer {n}")
    say(planner, "first half")
    with gg.subscribe(run.id, planner.id) as stream:
        first = until_marker(stream, "first half")
        assert stream.cursor == first[-1].cursor
    assert {e.event.agent_id for e in first} == {planner.id}
    assert [e.cursor for e in first] == sorted({e.cursor for e in first})
    say(planner, "second half")
    with gg.subscribe(run.id, planner.id, after_cursor=first[2].cursor) as resumed:
        later = until_marker(resumed, "second half")
    assert [e.cursor for e in later[: len(first) - 3]] == [e.cursor for e in first[3:]]
    assert [_summary(e) for e in later[len(first) - 3:]] == [_summary(later[-1])]


def test_r33_a_cursor_older_than_retention_is_a_typed_cursor_expired_error(
    suite: Suite, tmp_path: Path
) -> None:
    url = new_database_url(suite.backend, "h12c-small-telemetry", tmp_path)
    config = service_config("telemetry", database_url=url, modulestore_address=suite.modulestore.address,
                            registry_address=suite.registry.address)
    small = InProcessTelemetry(suite.loop, config, retention=Retention(10))
    try:
        with Client(suite.registry.address, suite.modulestore.address, telemetry=small.address) as gg:
            run = gg.create_run("retention", PROFILES)
            planner = gg.open_instance(run.id, "planner")
            for n in range(25):
                say(planner, f"message {n}")
            say(planner, "all written")
            after = 0
            while True:  # what a consumer does when cut off: resume from the oldest retained event
                try:
                    with gg.subscribe(run.id, planner.id, after_cursor=after) as stream:
                        until_marker(stream, "all written")
                    break
                except CursorExpiredError as cut_off:
                    assert cut_off.oldest_cursor - 1 > after
                    after = cut_off.oldest_cursor - 1
            with gg.subscribe(after_cursor=1) as stale, pytest.raises(CursorExpiredError) as caught:
                next(stale)
        err = caught.value
        assert (err.code, err.reason) == (grpc.StatusCode.OUT_OF_RANGE, "CURSOR_EXPIRED")
        assert err.oldest_cursor > 2
    finally:
        small.stop()
        drop_database(url)


def test_r33_a_subscription_follows_telemetry_across_a_restart_without_gap_or_repeat(
    suite: Suite, tmp_path: Path
) -> None:
    url = new_database_url(suite.backend, "h12c-telemetry", tmp_path)
    args = ("--database-url", url, "--modulestore-address", suite.modulestore.address,
            "--registry-address", suite.registry.address, "--log-level", "warning")
    telemetry = ServiceProcess("telemetry", *args)
    port = telemetry.address.rsplit(":", 1)[1]
    try:
        with Client(suite.registry.address, suite.modulestore.address, telemetry=telemetry.address) as gg:
            run = gg.create_run("restart", PROFILES)
            planner = gg.open_instance(run.id, "planner")
            say(planner, "before the restart")
            with gg.subscribe(run.id, planner.id) as stream:
                before = until_marker(stream, "before the restart")
                assert telemetry.terminate() == 0
                say(planner, "while telemetry is down")  # kept in ModuleStore's outbox meanwhile
                telemetry = ServiceProcess("telemetry", *args, "--port", port)
                say(planner, "after the restart")
                after = until_marker(stream, "after the restart")
                assert stream.reconnects >= 1
        cursors = [e.cursor for e in before + after]
        assert cursors == sorted(set(cursors)), "an event was repeated or came out of order"
        seqs = [e.event.stream_seq for e in before + after]
        assert seqs == list(range(1, len(seqs) + 1)), "an event of the agent's stream was skipped"
        written = [_summary(e) for e in before + after if _summary(e)]
        assert written == ["before the restart", "while telemetry is down", "after the restart"]
    finally:
        telemetry.kill()
        drop_database(url)


def test_async_client_reports_inspects_and_follows_a_stream(suite: Suite) -> None:
    async def session() -> None:
        async with AsyncClient(suite.registry.address, suite.modulestore.address,
                               telemetry=suite.telemetry.address) as gg:
            run = await gg.create_run("async telemetry", PROFILES)
            planner = await gg.open_instance(run.id, "planner")
            cursor = await planner.report_turn(1, {"history": 7})
            await planner.history.append("user", "async marker")
            seen = []
            async with gg.subscribe(run.id, planner.id) as stream:
                async for item in stream:
                    seen.append(item)
                    if "async marker" in _summary(item):
                        break
            assert cursor in [e.cursor for e in seen]
            modules = await gg.inspect_modules(run.id)
            history = next(k for k in modules.kinds if k.kind == common_pb2.KIND_HISTORY)
            assert history.cost_per_turn.measured_tokens == 7
            assert [i.agent_id async for i in gg.iter_instances(run.id, page_size=1)] == ["planner-0"]

    asyncio.run(session())


def test_list_calls_come_as_iterators_over_every_page(gg: Client) -> None:
    run = gg.create_run("pages", PROFILES, board=True)
    opened = [gg.open_instance(run.id, "writer").id for _ in range(5)]
    assert [i.agent_id for i in gg.iter_instances(run.id, page_size=2)] == opened
    assert len(gg.list_instances(run.id, page_size=2)) == 2  # one page is still one page
    stores = list(gg.iter_stores(run.id, page_size=2))
    assert len(stores) == len({s.id for s in stores}) == len(list(gg.iter_stores(run.id, page_size=100)))
    assert {s.id for s in gg.iter_stores(run.id, "tasks", page_size=1)} == {f"tasks-{n}" for n in range(5)}
    runs = [r.id for r in gg.iter_runs(page_size=3)]
    assert run.id in runs and len(runs) == len(set(runs))
