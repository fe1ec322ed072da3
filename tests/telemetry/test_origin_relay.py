"""Issue 9: ModuleStore given Telemetry's JetStream log (`--event-log nats://...`) publishes its own events
there (runtime/origin_relay.py), one hop shorter than Telemetry relaying them. A subscriber gets every event
once, in order, whether or not Telemetry can reach ModuleStore, and through a kill -9 of ModuleStore. The
stream, cursor and turn behaviour with ModuleStore publishing: tests/telemetry/test_jetstream_streams.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as tel_grpc
from tests.harness import (
    BACKENDS,
    InProcessTelemetry,
    LoopThread,
    ServiceProcess,
    drop_database,
    eventually,
    new_database_url,
    open_channel,
    service_config,
    stubs,
)
from tests.harness.event_logs import drop_stream, fresh_jetstream_url, needs_nats
from tests.harness.modulestore import append, new_run, open_agent

pytestmark = needs_nats
NOWHERE = "127.0.0.1:1"  # nothing answers: Telemetry cannot relay ModuleStore's (or Registry's) events
DEADLINE = 30.0


class Rig:
    """A Telemetry on a fresh stream that cannot reach ModuleStore, and ModuleStore as its own process
    publishing to the same stream (restartable, for kill -9)."""

    def __init__(self, backend: str, directory: Path) -> None:
        self.url = fresh_jetstream_url()
        self.ms_db = new_database_url(backend, "modulestore", directory)
        self.tel_db = new_database_url("sqlite", "telemetry", directory)
        self.loop = LoopThread()
        config = service_config("telemetry", database_url=self.tel_db, modulestore_address=NOWHERE,
                                registry_address=NOWHERE, event_log=self.url)  # fmt: skip
        self.telemetry = InProcessTelemetry(self.loop, config)  # makes the stream
        self.ms: ServiceProcess | None = None
        self.channels: list[Any] = []
        self.start_modulestore()

    def start_modulestore(self) -> Any:
        self.ms = ServiceProcess("modulestore", "--database-url", self.ms_db, "--event-log", self.url,
                                 "--log-level", "warning")  # fmt: skip
        ch = open_channel(self.ms.address)
        self.channels.append(ch)
        return stubs(ch, "modulestore")

    def agent_saying(self, word: str, count: int) -> Any:
        """An agent opened on ModuleStore that appended `word 0` … `word count-1` (each acknowledged)."""
        stub = stubs(self.channels[0], "modulestore")
        agent = open_agent(stub, new_run(), "coder-0")
        for i in range(count):
            append(stub, agent, f"{word} {i}")
        return agent

    def stream(self, run_id: str, agent_id: str) -> Iterator[Any]:
        ch = open_channel(self.telemetry.address)
        self.channels.append(ch)
        request = tel.SubscribeRequest(run_id=run_id, agent_id=agent_id, heartbeat_ms=50)
        return iter(tel_grpc.TelemetryServiceStub(ch).Subscribe(request, timeout=DEADLINE))

    def close(self) -> None:
        for ch in self.channels:
            ch.close()
        if self.ms is not None:
            self.ms.terminate()
        self.telemetry.stop()
        self.loop.close()
        drop_database(self.ms_db)
        drop_database(self.tel_db)
        drop_stream(self.url)


@pytest.fixture(params=BACKENDS)
def rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    """ModuleStore on SQLite and on PostgreSQL (its outbox is read differently on each)."""
    r = Rig(request.param, tmp_path)
    yield r
    r.close()


def appended(stream: Iterator[Any], until: str) -> list[tuple[int, str]]:
    """(origin_seq, text) of each history append on the stream, up to the one saying `until`."""
    got: list[tuple[int, str]] = []
    for response in stream:
        if response.WhichOneof("item") != "event":
            continue
        ev = response.event.event
        if ev.WhichOneof("body") == "write" and ev.write.delta.history.messages:
            text = ev.write.delta.history.messages[-1].content
            got.append((ev.origin_seq, text))
            if text == until:
                return got
    raise AssertionError(f"the stream ended before {until!r}: {got[-3:]}")


def assert_said_once_in_order(got: list[tuple[int, str]], expected: list[str]) -> None:
    """`appended`'s result is exactly `expected`, each event once, in origin order."""
    assert [text for _, text in got] == expected
    seqs = [seq for seq, _ in got]
    assert seqs == sorted(set(seqs)), "each event once, in origin order"


def test_issue9_modulestore_publishes_its_own_events_when_telemetry_cannot_reach_it(rig: Rig) -> None:
    agent = rig.agent_saying("said", 30)

    got = appended(rig.stream(agent.run_id, agent.agent_id), "said 29")

    assert_said_once_in_order(got, [f"said {i}" for i in range(30)])


def test_issue9_every_acknowledged_write_is_published_once_across_a_kill_9(rig: Rig) -> None:
    agent = rig.agent_saying("before", 40)
    assert rig.ms is not None
    rig.ms.kill()  # right after the last acknowledgement: its event may not be published yet

    stub = rig.start_modulestore()
    for i in range(5):
        append(stub, agent, f"after {i}")

    got = appended(rig.stream(agent.run_id, agent.agent_id), "after 4")

    assert_said_once_in_order(got, [f"before {i}" for i in range(40)] + [f"after {i}" for i in range(5)])


def test_issue9_the_outbox_is_acknowledged_as_published_so_it_can_be_pruned(rig: Rig) -> None:
    """With Telemetry not following ModuleStore at all, ModuleStore's own relay moves the follower position
    the outbox is pruned by ("telemetry"), up to its newest event."""
    agent = rig.agent_saying("said", 10)
    newest = appended(rig.stream(agent.run_id, agent.agent_id), "said 9")[-1][0]

    engine = create_engine(rig.ms_db)
    query = text("SELECT value FROM ms_outbox_positions WHERE name = 'follower/telemetry'")

    def position() -> int:
        with engine.connect() as conn:
            return int(conn.execute(query).scalar() or 0)

    try:  # acknowledged at most every 0.25 s (origin_relay.ACK_EVERY_SECONDS), with no signal when it is
        eventually(lambda: position() >= newest, "the newest event acknowledged")
        assert position() == newest
    finally:
        engine.dispose()


def test_issue9_a_modulestore_given_an_event_log_it_cannot_publish_to_does_not_start(tmp_path: Path) -> None:
    url = new_database_url("sqlite", "modulestore", tmp_path)
    with pytest.raises(RuntimeError, match="publishes its events itself only to NATS JetStream"):
        ServiceProcess("modulestore", "--database-url", url, "--event-log", "kafka://127.0.0.1:9092")
