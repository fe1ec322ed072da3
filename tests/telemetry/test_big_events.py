"""Telemetry never stops taking events in (R28, R33, R48): an event, or a backlog, larger than grpc's
default 4 MiB message travels to Telemetry and on to subscribers, and the events after it keep flowing.

WatchOutbox batches are bounded in bytes as well as in count, a single event larger than the bound goes
alone, and every channel between the services carries messages up to the services' own limit.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from ggmodules.common.v1 import event_pb2
from ggmodules.common.v1 import outbox_service_pb2 as pb
from ggmodules.internal.v1 import outbox_service_pb2_grpc as pb_grpc
from ggmodules.modulestore.v1 import modulestore_pb2 as ms_pb
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.storage.outbox import MAX_BATCH_BYTES
from tests.harness import Subscription, Suite, is_write_of
from tests.harness.registry import create_run, full_profile, open_instance, store_ids

KIB = 1024


@pytest.fixture(scope="module", autouse=True)
def long_histories() -> Iterator[None]:
    """Histories here grow past the 2 MiB a store may hold by default (GGMODULES_MODULESTORE_MAX_STORE_BYTES):
    an event over grpc's 4 MiB default exists only where an operator raised that limit, as here. Set
    before the module's ModuleStore starts."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GGMODULES_MODULESTORE_MAX_STORE_BYTES_HISTORY", str(64 * 1024 * KIB))
        yield


def texts(tag: str, count: int, size: int) -> list[str]:
    return [f"{tag} {i} ".ljust(size, "x") for i in range(count)]


def append(suite: Suite, run: str, agent: str, store: str, contents: list[str]) -> None:
    messages = [ms_pb.MessageInput(role="user", content=c) for c in contents]
    suite.write(run, agent, store, append_messages=ms.AppendMessages(messages=messages))


def written(got: list[tuple[int, event_pb2.Event]]) -> list[list[str]]:
    """The contents each write event of a stream carried."""
    return [
        [m.content for m in ev.write.delta.history.messages]
        for _, ev in got
        if ev.WhichOneof("body") == "write"
    ]


def assert_whole(suite: Suite, run: str, got: list[tuple[int, event_pb2.Event]]) -> None:
    """ModuleStore's events of the run, every one once and in its own order."""
    ours = [(ev.origin, ev.origin_seq) for _, ev in got if ev.origin == "modulestore"]
    assert ours == [(ev.origin, ev.origin_seq) for ev in suite.outbox(run)]


def assert_later_runs_still_arrive(suite: Suite) -> None:
    run = create_run(suite.reg, full_profile("coder")).run_id
    coder = open_instance(suite.reg, run, "coder")
    suite.say(run, coder.agent_id, store_ids(coder)["history"], "a later run")
    got = suite.subscribe(run).until(is_write_of("a later run"))
    assert written(got) == [["a later run"]]


def test_r33_one_write_of_20_messages_of_250_kib_reaches_the_stream_and_later_runs_still_arrive(
    suite: Suite,
) -> None:
    run = create_run(suite.reg, full_profile("coder")).run_id
    coder = open_instance(suite.reg, run, "coder")
    history = store_ids(coder)["history"]
    big = texts("big", 20, 250 * KIB)  # one event of 5 MB: over grpc's 4 MiB default, under every limit here
    append(suite, run, coder.agent_id, history, big)
    suite.say(run, coder.agent_id, history, "after the big one")

    got = suite.subscribe(run).until(is_write_of("after the big one"))
    assert written(got) == [big, ["after the big one"]]
    assert_whole(suite, run, got)
    assert_later_runs_still_arrive(suite)


@pytest.fixture()
def bare(backend: str, tmp_path: Path) -> Iterator[Suite]:
    """ModuleStore and Registry; the test starts Telemetry."""
    with Suite(backend, tmp_path, transfer=False) as s:
        yield s


def test_r48_600_events_of_10_kib_written_while_telemetry_is_down_all_arrive_then_later_ones(
    bare: Suite,
) -> None:
    run = create_run(bare.reg, full_profile("coder")).run_id
    agents = [open_instance(bare.reg, run, "coder") for _ in range(4)]

    def work(agent: Any) -> None:
        for text in texts(agent.agent_id, 150, 10 * KIB):
            bare.say(run, agent.agent_id, store_ids(agent)["history"], text)

    with ThreadPoolExecutor(len(agents)) as pool:
        list(pool.map(work, agents))
    bare.say(run, agents[0].agent_id, store_ids(agents[0])["history"], "end")

    bare.start_telemetry()  # 6 MB waiting in ModuleStore's outbox
    got = bare.subscribe(run).until(is_write_of("end"))
    assert_whole(bare, run, got)
    assert sorted(c for contents in written(got) for c in contents) == sorted(
        [*(t for a in agents for t in texts(a.agent_id, 150, 10 * KIB)), "end"]
    )
    assert_later_runs_still_arrive(bare)


def test_r33_watch_outbox_batches_are_bounded_in_bytes_and_a_larger_event_goes_alone(suite: Suite) -> None:
    run = create_run(suite.reg, full_profile("coder")).run_id
    coder = open_instance(suite.reg, run, "coder")
    history = store_ids(coder)["history"]
    start = suite.outbox(run)[-1].origin_seq
    larger = texts("larger", 5, 250 * KIB)  # one event over the bound
    append(suite, run, coder.agent_id, history, larger)
    for text in texts("quarter", 8, 250 * KIB):
        suite.say(run, coder.agent_id, history, text)
    suite.say(run, coder.agent_id, history, "end")

    stub = pb_grpc.OutboxServiceStub(suite.channel(suite.modulestore.address))
    feed = Subscription(stub.WatchOutbox(pb.WatchOutboxRequest(after_origin_seq=start, heartbeat_ms=1000)))
    suite.subscriptions.append(feed)
    batches: list[list[event_pb2.Event]] = []
    while not batches or not is_write_of("end")(batches[-1][-1]):
        batch = feed.next()
        if batch.events:
            batches.append(list(batch.events))
    for batch in batches:
        assert len(batch) == 1 or sum(ev.ByteSize() for ev in batch) <= MAX_BATCH_BYTES, [
            ev.ByteSize() for ev in batch
        ]
    assert any(len(batch) > 1 for batch in batches)  # the bound groups events, it does not split them all
    mine = [ev for batch in batches for ev in batch if ev.run_id == run]
    assert mine == [ev for ev in suite.outbox(run) if ev.origin_seq > start]
    assert [[m.content for m in ev.write.delta.history.messages] for ev in mine] == [
        larger, *([t] for t in texts("quarter", 8, 250 * KIB)), ["end"]
    ]
