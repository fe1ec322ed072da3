"""Telemetry's in-memory cache of the newest events is bounded in bytes as well as in count, and a subscriber
still gets every event, from the database for what the cache let go of (R33)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ggmodules.common.v1 import event_pb2
from ggmodules.core.telemetry.streams import StreamFilter
from ggmodules.storage.telemetry.recent import RecentEvents, StoredEvent
from tests.harness import InProcessTelemetry, Suite, is_write_of
from tests.harness.registry import create_run, full_profile, open_instance, store_ids

KIB = 1024
EVERYTHING = StreamFilter()


def stored(cursor: int, size: int) -> StoredEvent:
    return StoredEvent(cursor, event_pb2.Event(run_id="run-1", agent_id="a-0"), size)


def test_the_cache_lets_the_oldest_go_once_it_holds_more_bytes_than_its_bound() -> None:
    recent = RecentEvents(head=0, pruned_through=0, capacity=10_000, max_bytes=1000)
    recent.committed([stored(1, 300), stored(2, 300), stored(3, 300)], 0)
    assert recent.held == (3, 900)
    recent.committed([stored(4, 300)], 0)
    assert recent.held == (3, 900)  # cursor 1 let go
    assert recent.read(EVERYTHING, 0, 100) is None  # below what is held: read the database
    got = recent.read(EVERYTHING, 1, 100)
    assert got is not None and [s.cursor for s in got.events] == [2, 3, 4]

    recent.committed([stored(5, 5000)], 0)  # larger than the bound on its own: not held either
    assert recent.held == (0, 0)
    assert recent.read(EVERYTHING, 4, 100) is None
    got = recent.read(EVERYTHING, 5, 100)
    assert got is not None and got.events == [] and got.head == 5


@pytest.fixture(scope="module")
def small(backend_module: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    """A suite whose Telemetry keeps at most 64 KiB of events in memory."""
    with Suite(backend_module, Path(tmp_path_factory.mktemp(f"cache-{backend_module}")), transfer=False,
               telemetry=True, recent_bytes=64 * KIB) as s:
        yield s


def test_r33_with_a_small_cache_every_subscriber_still_gets_every_event(small: Suite) -> None:
    run = create_run(small.reg, full_profile("coder")).run_id
    coder = open_instance(small.reg, run, "coder")
    history = store_ids(coder)["history"]
    live = small.subscribe(run)
    texts = [f"{n} ".ljust(10 * KIB, "x") for n in range(30)]  # 300 KiB of events
    for text in texts:
        small.say(run, coder.agent_id, history, text)
    small.say(run, coder.agent_id, history, "end")

    from_start = small.subscribe(run).until(is_write_of("end"))  # mostly from the database
    assert live.until(is_write_of("end")) == from_start
    assert [ev.origin_seq for _, ev in from_start if ev.origin == "modulestore"] == [
        ev.origin_seq for ev in small.outbox(run)
    ]
    said = [m.content for _, ev in from_start if ev.WhichOneof("body") == "write"
            for m in ev.write.delta.history.messages]
    assert said == [*texts, "end"]

    telemetry = small.telemetry
    assert isinstance(telemetry, InProcessTelemetry)
    events, held = telemetry.repository.recent.held
    assert held <= 64 * KIB and events < 30  # by bytes: the count bound is 10,000

    caught_up = small.subscribe(run, after=from_start[-1][0])
    small.say(run, coder.agent_id, history, "one more")
    assert is_write_of("one more")(caught_up.next_event()[1])
