"""On PostgreSQL, origin_seq values commit out of order; WatchOutbox sends only as far as the outbox is final
(storage/outbox_frontier.py). An open transaction holds the feed however long it stays open, then every
event goes out in origin_seq order, none skipped (R33, R48); a rolled-back one holds nobody up once it has
ended, and nothing waits on a clock.

Other transactions are real second connections writing the service's own outbox tables through its own
`Outbox`, as a slow write of the service would.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.common.v1 import outbox_service_pb2 as pb
from ggmodules.core.heartbeats import MIN_HEARTBEAT_MS
from ggmodules.internal.v1 import outbox_service_pb2_grpc as pb_grpc
from ggmodules.modulestore.v1 import modulestore_service_pb2 as msvc
from ggmodules.storage.engine import make_engine
from ggmodules.storage.modulestore.tables import MsOutbox, MsStreamHead
from ggmodules.storage.outbox import Outbox
from ggmodules.storage.outbox_frontier import Frontier
from ggmodules.storage.registry.tables import RegOutboxRow, RegStreamHeadRow
from tests.harness import POSTGRES_ONLY, Subscription, Suite, eventually, is_write_of, stubs
from tests.harness.registry import create_run, full_profile, open_instance, store_ids

# Heartbeats at MIN_HEARTBEAT_MS apart: 110 of them outlast the 5 s a hole used to be waited for.
HELD_HEARTBEATS = 110
# A rolled-back transaction must stop holding the feed well before that.
PROMPT_HEARTBEATS = 40


@pytest.fixture(scope="module", params=POSTGRES_ONLY)
def suite(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    with Suite(request.param, Path(tmp_path_factory.mktemp("frontier")), transfer=False, telemetry=True) as s:
        yield s


@pytest.fixture()
def modulestore_db(suite: Suite) -> Iterator[Engine]:
    engine = make_engine(suite.urls["modulestore"])
    yield engine
    engine.dispose()


OUTBOX = Outbox("modulestore", MsOutbox, MsStreamHead)


def append(conn: Connection, run: str, agent: str, said: str) -> int:
    """A history write event for `agent`, appended inside `conn`'s open transaction; its origin_seq."""
    event = event_pb2.Event(run_id=run, agent_id=agent, write=event_pb2.WriteEvent(op="append"))
    event.write.delta.history.messages.add(role="user", content=said)
    return OUTBOX.append(conn, event).origin_seq


def said(events: list[event_pb2.Event]) -> list[str]:
    return [m.content for ev in events for m in ev.write.delta.history.messages]


class Feed:
    """ModuleStore's WatchOutbox from a position, read batch by batch with the run's events picked out."""

    def __init__(self, suite: Suite, run: str, after: int) -> None:
        stub = pb_grpc.OutboxServiceStub(suite.channel(suite.modulestore.address))
        request = pb.WatchOutboxRequest(after_origin_seq=after, heartbeat_ms=MIN_HEARTBEAT_MS)
        self.stream = Subscription(stub.WatchOutbox(request))
        suite.subscriptions.append(self.stream)
        self.run = run

    def next(self) -> tuple[list[event_pb2.Event], int]:
        """The run's events of the next batch (none for a heartbeat), and the head it reported."""
        batch = self.stream.next()
        return [ev for ev in batch.events if ev.run_id == self.run], batch.head_origin_seq

    def holds_past(self, seq: int, heartbeats: int) -> None:
        """Reads until `heartbeats` heartbeats have reported a head at or past `seq` (the feed has seen the
        event there), asserting that none of the run's events was sent meanwhile."""
        seen = 0
        while seen < heartbeats:
            events, head = self.next()
            assert not events, f"sent {said(events)} past a transaction still open"
            seen += head >= seq

    def until(self, marker: str) -> tuple[list[event_pb2.Event], int]:
        """The run's events up to the one saying `marker`, and how many heartbeats came before it."""
        got: list[event_pb2.Event] = []
        beats = 0
        while not got or not is_write_of(marker)(got[-1]):
            events, _ = self.next()
            got += events
            beats += not events
        return got, beats


def agent(suite: Suite) -> tuple[str, Any, str]:
    run = create_run(suite.reg, full_profile("coder")).run_id
    coder = open_instance(suite.reg, run, "coder")
    return run, coder, store_ids(coder)["history"]


def test_r48_an_open_transaction_holds_later_events_however_long_then_all_go_out_in_order(
    suite: Suite, modulestore_db: Engine
) -> None:
    run, coder, history = agent(suite)
    start = suite.outbox(run)[-1].origin_seq
    feed = Feed(suite, run, start)
    with modulestore_db.connect() as earlier, modulestore_db.connect() as slow:
        earlier_tx = earlier.begin()
        earlier.execute(text("SELECT pg_current_xact_id()"))  # began first: the older transaction id
        slow_tx = slow.begin()
        # A writer slower than the server lets a transaction wait with nothing sent (storage/engine.py
        # IDLE_IN_TRANSACTION_MS, which ends a frozen replica's): as one busy on a long statement would be.
        slow.execute(text("SET LOCAL idle_in_transaction_session_timeout = 0"))
        held = append(slow, run, "ghost-slow", "slow")
        # Drawn after `held` by the transaction that began before it, and committed while it is open.
        assert append(earlier, run, "ghost-earlier", "earlier") > held
        earlier_tx.commit()
        suite.say(run, coder.agent_id, history, "later")
        latest = suite.outbox(run)[-1].origin_seq

        feed.holds_past(latest, HELD_HEARTBEATS)
        slow_tx.commit()

    got, _ = feed.until("later")
    assert said(got) == ["slow", "earlier", "later"]
    assert got == [ev for ev in suite.outbox(run) if ev.origin_seq > start]
    streamed = suite.subscribe(run).until(is_write_of("later"))
    assert [ev.origin_seq for _, ev in streamed if ev.origin == "modulestore"] == [
        ev.origin_seq for ev in suite.outbox(run)
    ]


def test_r48_a_rolled_back_transaction_holds_nobody_up_once_it_has_ended(
    suite: Suite, modulestore_db: Engine
) -> None:
    run, coder, history = agent(suite)
    start = suite.outbox(run)[-1].origin_seq
    feed = Feed(suite, run, start)
    with modulestore_db.connect() as doomed:
        doomed_tx = doomed.begin()
        doomed_seq = append(doomed, run, "ghost-doomed", "never")
        suite.say(run, coder.agent_id, history, "after the rollback")  # drawn after it
        # Not ReadOutbox for the newest origin_seq: it waits for `doomed` (up to 2 s, outbox_frontier.py
        # `settled`), and the heartbeats sent meanwhile would be counted below.
        feed.holds_past(doomed_seq + 1, 1)
        doomed_tx.rollback()

    got, heartbeats = feed.until("after the rollback")
    assert said(got) == ["after the rollback"]
    assert heartbeats < PROMPT_HEARTBEATS, "the feed waited out a hole that was rolled back"


def test_r33_an_open_transaction_on_another_database_of_the_server_holds_nothing_up(suite: Suite) -> None:
    """The frontier is this outbox's own: Registry's outbox, in another database of the same server,
    written by a transaction left open, does not hold up ModuleStore's feed."""
    run, coder, history = agent(suite)
    start = suite.outbox(run)[-1].origin_seq
    feed = Feed(suite, run, start)
    registry_db = make_engine(suite.urls["registry"])
    try:
        with registry_db.connect() as elsewhere:
            elsewhere_tx = elsewhere.begin()
            event = event_pb2.Event(run_id=run, agent_id="", run=event_pb2.RunEvent(status="created"))
            Outbox("registry", RegOutboxRow, RegStreamHeadRow).append(elsewhere, event)
            suite.say(run, coder.agent_id, history, "not held")
            got, heartbeats = feed.until("not held")
            elsewhere_tx.rollback()
    finally:
        registry_db.dispose()
    assert said(got) == ["not held"]
    assert heartbeats < PROMPT_HEARTBEATS


def test_r48_read_outbox_right_after_a_write_waits_out_a_transaction_holding_the_outbox_then_has_it(
    suite: Suite, modulestore_db: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ReadOutbox read only as far as the outbox was numbered whenever any transaction held its write lock
    (a write in flight, a prune, a watcher storing numbers): an event committed before the read was left out,
    and its empty page told the reader it had everything. Seen in make test under load. Now it waits for
    the transactions that held the lock when it looked (storage/outbox_frontier.py `settled`), then reads
    every event drawn before them."""
    run, coder, history = agent(suite)
    start = suite.outbox(run)[-1].origin_seq
    saw_it_held = threading.Event()
    advance = Frontier.advance

    def noting(self: Frontier, conn: Connection) -> tuple[int, bool]:  # ModuleStore runs in this process
        final, held = advance(self, conn)
        if held:
            saw_it_held.set()
        return final, held

    monkeypatch.setattr(Frontier, "advance", noting)
    ms = stubs(suite.channel(suite.modulestore.address), "modulestore")
    with modulestore_db.connect() as other:
        tx = other.begin()
        other.execute(text("LOCK TABLE ms_outbox IN ROW EXCLUSIVE MODE"))  # as a write or a prune holds it
        suite.say(run, coder.agent_id, history, "committed")
        got: list[msvc.ReadOutboxResponse] = []
        reader = threading.Thread(target=lambda: got.append(
            ms.ReadOutbox(msvc.ReadOutboxRequest(after_origin_seq=start, run_id=run), timeout=30)))
        reader.start()
        eventually(lambda: saw_it_held.is_set() or not reader.is_alive(), "ReadOutbox meeting the lock")
        tx.commit()
        reader.join(30)
    assert said(list(got[0].events)) == ["committed"]


def test_r48_read_outbox_waits_for_the_writers_it_met_not_for_those_that_came_after(
    suite: Suite, modulestore_db: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ReadOutbox waited until it found no transaction at all holding the outbox's write lock: under a steady
    stream of writes one always does, and each page waited out SETTLE_SECONDS (2 s). It waits only for those
    that held the lock when it looked (what committed before the read has a number drawn by then): a writer
    that took the lock afterwards and is still open does not hold it up, and its event is not in the page.
    The call's deadline (1.5 s) is shorter than SETTLE_SECONDS; the old rule ran past it."""
    run, coder, history = agent(suite)
    start = suite.outbox(run)[-1].origin_seq
    waiting = threading.Event()
    advance = Frontier.advance

    def noting(self: Frontier, conn: Connection) -> tuple[int, bool]:  # ModuleStore runs in this process
        waiting.set()  # polled again: it is waiting for a writer it met
        return advance(self, conn)

    monkeypatch.setattr(Frontier, "advance", noting)
    ms = stubs(suite.channel(suite.modulestore.address), "modulestore")
    got: list[object] = []

    def read() -> None:
        try:
            got.append(ms.ReadOutbox(msvc.ReadOutboxRequest(after_origin_seq=start, run_id=run), timeout=1.5))
        except grpc.RpcError as err:
            got.append(err.code())

    with modulestore_db.connect() as first, modulestore_db.connect() as after:
        met = first.begin()
        first.execute(text("LOCK TABLE ms_outbox IN ROW EXCLUSIVE MODE"))  # as a write in flight holds it
        suite.say(run, coder.agent_id, history, "committed")
        reader = threading.Thread(target=read)
        reader.start()
        eventually(lambda: waiting.is_set() or not reader.is_alive(), "ReadOutbox waiting for the writer")
        came_after = after.begin()
        after.execute(text("LOCK TABLE ms_outbox IN ROW EXCLUSIVE MODE"))
        suite.say(run, coder.agent_id, history, "later")  # drawn after the read looked
        met.commit()
        reader.join(30)
        came_after.rollback()
    assert len(got) == 1 and isinstance(got[0], msvc.ReadOutboxResponse), got
    assert said(list(got[0].events)) == ["committed"]
