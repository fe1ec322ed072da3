"""Issue 9: a relay killed -9 and started again after the stream's duplicate window has passed publishes
nothing twice (storage/jetstream_resume.py). The window is JetStream's own once-only guarantee; here it is
the shortest NATS allows (`duplicate_window=0.1` in the URL), so every restart comes after it. The relay's
saved position is set back after the kill, as if the kill had come before the relay saved it: the relay
then starts from before events the stream already holds.

Both relays: Telemetry relaying ModuleStore's events (its position in `tel_meta`), and ModuleStore
publishing its own (its position in its outbox's `follower/telemetry`), the latter on SQLite and PostgreSQL.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from ggmodules.storage.jetstream_resume import whole_event_of
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as tel_grpc
from tests.harness import ServiceProcess, drop_database, new_database_url, open_channel, stubs
from tests.harness.backends import needs_postgres
from tests.harness.event_logs import drop_stream, fresh_jetstream_url, needs_nats
from tests.harness.modulestore import append, new_run, open_agent
from tests.telemetry.test_origin_relay import NOWHERE, appended, assert_said_once_in_order

WINDOW = 0.1  # seconds: the least NATS takes
DEADLINE = 30.0
QUIET = ("--log-level", "warning")


class Rig:
    """ModuleStore and Telemetry as processes on a stream with a 0.1 s duplicate window; ModuleStore publishes
    its own events (`publishes`) or Telemetry relays them."""

    def __init__(self, backend: str, directory: Path, publishes: bool) -> None:
        self.url = f"{fresh_jetstream_url()}&duplicate_window={WINDOW}"
        self.publishes = publishes
        self.ms_db = new_database_url(backend, "modulestore", directory)
        self.tel_db = new_database_url("sqlite", "telemetry", directory)
        self.channels: list[Any] = []
        self.ms: ServiceProcess | None = None
        self.telemetry: ServiceProcess | None = None
        self.start_modulestore()
        self.start_telemetry()

    def start_modulestore(self) -> None:
        publishing = ("--event-log", self.url) if self.publishes else ()
        self.ms = ServiceProcess("modulestore", "--database-url", self.ms_db, *publishing, *QUIET)

    def start_telemetry(self) -> None:
        assert self.ms is not None
        follows = NOWHERE if self.publishes else self.ms.address
        self.telemetry = ServiceProcess("telemetry", "--database-url", self.tel_db, "--modulestore-address",
                                        follows, "--registry-address", NOWHERE, "--event-log", self.url,
                                        *QUIET)  # fmt: skip

    def modulestore(self) -> Any:
        assert self.ms is not None
        ch = open_channel(self.ms.address)
        self.channels.append(ch)
        return stubs(ch, "modulestore")

    def stream(self, run_id: str, agent_id: str) -> Iterator[Any]:
        assert self.telemetry is not None
        ch = open_channel(self.telemetry.address)
        self.channels.append(ch)
        request = tel.SubscribeRequest(run_id=run_id, agent_id=agent_id, heartbeat_ms=50)
        return iter(tel_grpc.TelemetryServiceStub(ch).Subscribe(request, timeout=DEADLINE))

    def set_position_back(self, origin_seq: int) -> None:
        """The relay's saved position, as if the kill had come before it saved anything past `origin_seq`."""
        # The relay may have saved nothing yet (it saves at most every 0.25 s): the row is made if it is not.
        url, table, key, name = (
            (self.ms_db, "ms_outbox_positions", "name", "follower/telemetry")
            if self.publishes
            else (self.tel_db, "tel_meta", "key", "origin/modulestore")
        )
        engine = create_engine(url)
        try:
            with engine.begin() as conn:
                conn.execute(
                    text(f"INSERT INTO {table} ({key}, value) VALUES (:k, :v) "
                         f"ON CONFLICT ({key}) DO UPDATE SET value = excluded.value"),
                    {"k": name, "v": origin_seq},
                )  # fmt: skip
        finally:
            engine.dispose()

    def kill_the_relay(self) -> None:
        relay = self.ms if self.publishes else self.telemetry
        assert relay is not None
        relay.kill()

    def start_the_relay(self) -> None:
        self.start_modulestore() if self.publishes else self.start_telemetry()

    def close(self) -> None:
        for ch in self.channels:
            ch.close()
        for proc in (self.telemetry, self.ms):
            if proc is not None and proc.proc.poll() is None:
                proc.terminate()
        drop_database(self.ms_db)
        drop_database(self.tel_db)
        drop_stream(self.url)


def outlive_the_window(published_by: float) -> None:
    """The premise itself: the stream's duplicate window, counted from the moment by which every event was
    published (its subscriber had it), is over before the relay starts again. A kill and a restart take
    longer than 0.1 s anyway; this makes it so however fast they are."""
    left = published_by + WINDOW * 1.5 - time.monotonic()
    if left > 0:
        time.sleep(left)


CASES = [
    pytest.param(("sqlite", True), id="modulestore-publishing-sqlite"),
    pytest.param(("postgres", True), id="modulestore-publishing-postgres", marks=needs_postgres),
    pytest.param(("sqlite", False), id="telemetry-relaying"),
]  # fmt: skip


@needs_nats
@pytest.mark.parametrize("case", CASES)
def test_issue9_a_relay_started_again_after_the_duplicate_window_publishes_nothing_twice(
    case: tuple[str, bool], tmp_path: Path
) -> None:
    rig = Rig(case[0], tmp_path, publishes=case[1])
    try:
        stub = rig.modulestore()
        agent = open_agent(stub, new_run(), "coder-0")
        for i in range(20):
            append(stub, agent, f"before {i}")
        before = appended(rig.stream(agent.run_id, agent.agent_id), "before 19")
        published_by = time.monotonic()
        rig.kill_the_relay()
        rig.set_position_back(before[14][0])  # "before 15" … "before 19" published, the position not saved
        outlive_the_window(published_by)

        rig.start_the_relay()
        stub = rig.modulestore()
        for i in range(3):
            append(stub, agent, f"after {i}")
        got = appended(rig.stream(agent.run_id, agent.agent_id), "after 2")

        assert_said_once_in_order(got, [f"before {i}" for i in range(20)] + [f"after {i}" for i in range(3)])
    finally:
        rig.close()


def test_issue9_only_an_events_whole_message_or_last_part_counts_as_published() -> None:
    whole = {"Nats-Msg-Id": "modulestore:run-1:7"}
    assert whole_event_of("modulestore", whole) == "modulestore:run-1:7"
    assert whole_event_of("registry", whole) == "", "another origin's event"
    assert whole_event_of("modulestore", {"Nats-Msg-Id": "modulestore:run-1:8#2", "Ggm-Part": "2/3"}) == ""
    last = {"Nats-Msg-Id": "modulestore:run-1:8#3", "Ggm-Part": "3/3"}
    assert whole_event_of("modulestore", last) == "modulestore:run-1:8"
    assert whole_event_of("modulestore", None) == ""
