"""Telemetry and its origins as several replicas over one PostgreSQL database (and one JetStream stream):
streams read alike from any Telemetry replica, and another replica's commit wakes a watcher at once."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest

from ggmodules.common.v1 import outbox_service_pb2 as opb
from ggmodules.internal.v1 import outbox_service_pb2_grpc as opb_grpc
from ggmodules.modulestore.v1 import modulestore_pb2 as ms_pb
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc as ms_grpc
from ggmodules.registry.v1 import registry_service_pb2_grpc as reg_grpc
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as tel_grpc
from tests.harness import (
    DEADLINE,
    InProcessService,
    InProcessTelemetry,
    LoopThread,
    Subscription,
    Suite,
    drop_database,
    is_write_of,
    needs_postgres,
    new_database_url,
    open_channel,
    refusal_of,
    service_config,
    stubs,
)
from tests.harness.event_logs import NATS_URL, NO_NATS, drop_stream, fresh_jetstream_url, needs_nats
from tests.harness.registry import create_run, full_profile, open_instance, store_ids

# The longest heartbeat a watcher may ask for: a test waits far less, so only a wake-up can pass it.
NO_HEARTBEAT_MS = 60_000
EVENT_LOG_KINDS = [
    pytest.param("sql", id="sql-postgres"),
    pytest.param("jetstream", id="jetstream", marks=pytest.mark.skipif(not NATS_URL, reason=NO_NATS)),
]


class Replicas:
    """Two ModuleStore replicas over one database, one Registry, and two Telemetry replicas over one
    Telemetry database (and, for JetStream, one stream): Telemetry 1 follows ModuleStore A, 2 follows B."""

    def __init__(self, directory: Path, event_log: str = "") -> None:
        self.loop = LoopThread()
        self.urls = [new_database_url("postgres", name, directory) for name in ("h9log_ms", "h9log_reg")]
        self.event_log = event_log
        base = service_config("modulestore", database_url=self.urls[0])
        self.ms = [InProcessService(self.loop, base), InProcessService(self.loop, base)]
        self.registry = InProcessService(
            self.loop,
            replace(
                base, service="registry", database_url=self.urls[1], modulestore_address=self.ms[0].address
            ),
        )
        self.telemetry: list[InProcessTelemetry] = []
        self._channels: list[grpc.Channel] = []
        self.subscriptions: list[Subscription] = []

    def start_telemetry(self) -> None:
        url = new_database_url("postgres", "h9log_tel", Path("."))
        self.urls.append(url)
        for store in self.ms:
            config = service_config(
                "telemetry",
                database_url=url,
                modulestore_address=store.address,
                registry_address=self.registry.address,
                event_log=self.event_log,
            )
            self.telemetry.append(InProcessTelemetry(self.loop, config))
        for t in self.telemetry:  # every replica listens before anything is written
            listener = getattr(t.running.service.extra["event_log"], "listener", None)
            assert listener is None or listener.listening.wait(DEADLINE)

    def channel(self, address: str) -> grpc.Channel:
        ch = open_channel(address)
        self._channels.append(ch)
        return ch

    def ms_stub(self, i: int) -> ms_grpc.ModuleStoreServiceStub:
        return stubs(self.channel(self.ms[i].address), "modulestore")  # type: ignore[no-any-return]

    @property
    def reg(self) -> reg_grpc.RegistryServiceStub:
        return stubs(self.channel(self.registry.address), "registry")  # type: ignore[no-any-return]

    def subscribe(self, i: int, run_id: str, agent_id: str) -> Subscription:
        stub = tel_grpc.TelemetryServiceStub(self.channel(self.telemetry[i].address))
        request = tel.SubscribeRequest(run_id=run_id, agent_id=agent_id, heartbeat_ms=50)
        sub = Subscription(stub.Subscribe(request))
        self.subscriptions.append(sub)
        return sub

    def close(self) -> None:
        try:
            for sub in self.subscriptions:
                sub.close()
            for ch in self._channels:
                ch.close()
            for t in self.telemetry:
                t.stop()
            self.registry.stop()
            for store in self.ms:
                store.stop()
            self.loop.close()
        finally:  # the databases and the stream go whatever happened above
            for url in self.urls:
                drop_database(url)
            if self.event_log:
                drop_stream(self.event_log)


@pytest.fixture()
def replicas(tmp_path: Path) -> Iterator[Replicas]:
    r = Replicas(tmp_path)
    yield r
    r.close()


def say(stub: ms_grpc.ModuleStoreServiceStub, run: str, agent: Any, text: str) -> None:
    message = ms_pb.MessageInput(role="user", content=text)
    stub.Write(
        ms.WriteRequest(
            run_id=run,
            agent_id=agent.agent_id,
            store_id=store_ids(agent)["history"],
            append_messages=ms.AppendMessages(messages=[message]),
        )
    )


@needs_postgres
def test_a_commit_on_one_modulestore_replica_wakes_a_watcher_on_the_other_at_once(replicas: Replicas) -> None:
    run = create_run(replicas.reg, full_profile("coder")).run_id
    agent = open_instance(replicas.reg, run, "coder")
    b = replicas.ms[1].running.service.extra["commit_listener"]
    assert b is not None and b.listening.wait(DEADLINE)

    say(replicas.ms_stub(0), run, agent, "first")
    watch = opb_grpc.OutboxServiceStub(replicas.channel(replicas.ms[1].address)).WatchOutbox(
        opb.WatchOutboxRequest(after_origin_seq=0, heartbeat_ms=NO_HEARTBEAT_MS)
    )
    feed = Subscription(watch)
    replicas.subscriptions.append(feed)
    seen: list[Any] = []
    while not any(is_write_of("first")(ev) for ev in seen):
        seen += feed.next().events
    # B's watcher is now waiting on its own commit signal; only A's commit can wake it, well before a
    # heartbeat would (60 s against a deadline of 15 s).
    say(replicas.ms_stub(0), run, agent, "second")
    batch = feed.next(DEADLINE)
    assert batch.events and is_write_of("second")(batch.events[-1])


@needs_postgres
@pytest.mark.parametrize("kind", EVENT_LOG_KINDS)
def test_two_telemetry_replicas_serve_identical_agent_streams_for_writes_through_two_modulestores(
    tmp_path: Path, kind: str
) -> None:
    replicas = Replicas(tmp_path, fresh_jetstream_url() if kind == "jetstream" else "")
    try:
        replicas.start_telemetry()
        run = create_run(replicas.reg, full_profile("coder")).run_id
        agents = [open_instance(replicas.reg, run, "coder") for _ in range(3)]
        subs = {
            (i, a.agent_id): replicas.subscribe(i, run, a.agent_id) for i in (0, 1) for a in agents
        }
        got: dict[tuple[int, str], list[Any]] = {key: [] for key in subs}
        for key, sub in subs.items():  # until caught up: then served from what each replica has seen since
            while (item := sub.next()).WhichOneof("item") != "heartbeat":
                got[key].append((item.event.cursor, item.event.event))
        for n in range(18):
            say(replicas.ms_stub(n % 2), run, agents[n % 3], f"w{n}")
        for n, agent in enumerate(agents):
            say(replicas.ms_stub(n % 2), run, agent, f"end {agent.agent_id}")

        outbox = _outbox(replicas.ms_stub(0), run)
        for agent in agents:
            end = is_write_of(f"end {agent.agent_id}")
            one = got[(0, agent.agent_id)] + subs[(0, agent.agent_id)].until(end)
            other = got[(1, agent.agent_id)] + subs[(1, agent.agent_id)].until(end)
            assert one == other
            from_store = [ev for _, ev in one if ev.origin == "modulestore"]
            assert from_store == [ev for ev in outbox if ev.agent_id == agent.agent_id]
            assert [c for c, _ in one] == sorted({c for c, _ in one})
    finally:
        replicas.close()


def _outbox(stub: ms_grpc.ModuleStoreServiceStub, run_id: str) -> list[Any]:
    out: list[Any] = []
    while True:
        after = out[-1].origin_seq if out else 0
        page = stub.ReadOutbox(ms.ReadOutboxRequest(run_id=run_id, after_origin_seq=after, page_size=1000))
        if not page.events:
            return out
        out += page.events


@needs_nats
def test_r33_on_jetstream_a_cursor_below_retention_is_out_of_range(tmp_path: Path) -> None:
    url = fresh_jetstream_url()
    suite = Suite("sqlite", tmp_path, transfer=False, event_log=url, retention=8)
    try:
        suite.start_telemetry()
        run = create_run(suite.reg, full_profile("coder")).run_id
        agent = open_instance(suite.reg, run, "coder")
        live = suite.subscribe(run, agent.agent_id, heartbeat_ms=50)
        while live.next().WhichOneof("item") != "heartbeat":  # caught up: it takes each write as it lands
            pass
        for n in range(12):
            suite.say(run, agent.agent_id, store_ids(agent)["history"], f"w{n}")
        live.until(is_write_of("w11"))  # all of them are in the log now; nothing else is written
        retained = suite.subscribe().events(8)
        oldest = retained[0][0]
        assert oldest > 1
        code, reason, metadata, _ = refusal_of(suite.subscribe(after=1).error())
        assert (code, reason, metadata["oldest_cursor"]) == (
            grpc.StatusCode.OUT_OF_RANGE, "CURSOR_EXPIRED", str(oldest)
        )
        assert suite.subscribe(after=oldest - 1).events(8) == retained
    finally:
        suite.close()
        drop_stream(url)


@needs_postgres
@pytest.mark.parametrize("kind", EVENT_LOG_KINDS)
def test_an_event_stored_by_one_telemetry_replica_wakes_a_subscriber_of_the_other_at_once(
    tmp_path: Path, kind: str
) -> None:
    replicas = Replicas(tmp_path, fresh_jetstream_url() if kind == "jetstream" else "")
    try:
        replicas.start_telemetry()
        run = create_run(replicas.reg, full_profile("coder")).run_id
        opened = open_instance(replicas.reg, run, "coder")
        agent = opened.agent_id
        first = tel_grpc.TelemetryServiceStub(replicas.channel(replicas.telemetry[0].address))
        turn = is_turn_of(run, agent)

        def report(n: int) -> int:
            request = tel.ReportTurnRequest(run_id=run, agent_id=agent, turn=n)
            return int(first.ReportTurn(request).cursor)

        # A ReportTurn is stored by the replica that takes it (replica 0); replica 1 hears of it only
        # through the log (NOTIFY tel_events on the SQL log, its own consumer on JetStream).
        other = tel_grpc.TelemetryServiceStub(replicas.channel(replicas.telemetry[1].address))
        request = tel.SubscribeRequest(run_id=run, agent_id=agent, heartbeat_ms=NO_HEARTBEAT_MS)
        sub = Subscription(other.Subscribe(request))
        replicas.subscriptions.append(sub)
        cursor = report(1)
        say(replicas.ms_stub(0), run, opened, "quiet")  # ModuleStore's events for the agent end here
        seen = [sub.next_event()]
        while not is_write_of("quiet")(seen[-1][1]):
            seen.append(sub.next_event())
        assert cursor in [c for c, _ in seen]
        # Caught up and idle: its next heartbeat is 60 s away, the deadline 15 s. Only a wake-up by replica
        # 0's commit delivers the next turn in time.
        cursor = report(2)
        got = sub.next_event(DEADLINE)
        while got[1].WhichOneof("body") != "turn":  # another origin's late event for the agent, if any
            got = sub.next_event(DEADLINE)
        assert got[0] == cursor and turn(got[1]) == 2
    finally:
        replicas.close()


def is_turn_of(run: str, agent: str) -> Any:
    def turn(ev: Any) -> int:
        assert (ev.run_id, ev.agent_id, ev.WhichOneof("body")) == (run, agent, "turn")
        return int(ev.turn.turn)

    return turn
