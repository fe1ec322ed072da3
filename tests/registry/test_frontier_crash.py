"""R48 on PostgreSQL, Registry's WatchOutbox (storage/outbox_pipelined.py, one pooled connection per read): a
server crash can lose the WAL record of numbers drawn by writes that rolled back, and the recovered sequence
hands them out again. A frontier learnt before the crash counted them final; a reader still trusting it
would serve a later write's event while the write that drew a number again is open, and pass over that
acknowledged write for good. After a crash the frontier is learnt afresh (Frontier.reconnected in
storage/outbox_frontier.py), on a cluster of the test's own killed with SIGKILL, the reading side living
on as a real Registry would.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.storage.outbox import Outbox
from ggmodules.storage.outbox_pipelined import PipelinedFeed
from ggmodules.storage.outbox_pruning import OutboxPositions
from ggmodules.storage.registry.tables import RegOutboxPositionRow, RegOutboxRow, RegStreamHeadRow
from tests.harness.private_postgres import PrivateCluster, crashable, migrated, needs_pg_binaries

pytestmark = needs_pg_binaries



@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    with crashable() as made:  # nothing flushes the WAL behind the test's back
        yield made


@pytest.fixture
def engine(cluster: PrivateCluster) -> Iterator[Engine]:
    with migrated(cluster, "registry") as eng:
        yield eng


def _event(agent: str) -> event_pb2.Event:
    return event_pb2.Event(run_id="run-f", agent_id=agent)


def _drawn(conn: object) -> int:
    return int(conn.execute(text("SELECT max(origin_seq) FROM reg_outbox")).scalar_one())  # type: ignore[attr-defined]


def test_r48_a_number_drawn_again_after_a_crash_is_not_passed_over(
    cluster: PrivateCluster, engine: Engine
) -> None:
    box = Outbox("registry", RegOutboxRow, RegStreamHeadRow)
    feed = PipelinedFeed(box, OutboxPositions(box, RegOutboxPositionRow))

    def serve(after: int, served: set[str]) -> int:
        while True:
            with engine.connect() as conn:  # as Registry reads: a pooled connection per read
                page = feed.read(conn, after, 500)
            if not page.events:
                return after
            served.update(ev.agent_id for ev in page.events)
            after = page.events[-1].origin_seq

    with engine.begin() as conn:
        box.append_all(conn, [_event("a-0")])
    served: set[str] = set()
    after = serve(0, served)
    drawn_again = 0
    for attempt in range(4):
        cluster.crash()  # the next number drawn writes the sequence's WAL record
        cluster.start()
        with engine.connect() as conn, conn.begin() as rolled_back:
            box.append_all(conn, [_event("gone-1"), _event("gone-2"), _event("gone-3")])
            drawn = _drawn(conn)
            rolled_back.rollback()
        assert serve(after, served) == after  # numbers up to `drawn`: final, nothing there
        cluster.crash()  # the record of `drawn` and the rollback were in memory only
        cluster.start()
        with engine.connect() as open_conn:
            opened = open_conn.begin()
            box.append_all(open_conn, [_event(f"open-{attempt}")])
            first = _drawn(open_conn)
            with engine.begin() as conn:  # a later write commits while the first is open
                box.append_all(conn, [_event(f"later-{attempt}")])
            after = serve(after, served)
            opened.commit()
        drawn_again += first <= drawn
        after = serve(after, served)
        lost = {f"open-{attempt}", f"later-{attempt}"} - served
        assert not lost, f"an acknowledged write's event was not served: {lost}"
        if drawn_again:
            break
    assert drawn_again, "the recovered sequence never drew a number again: the case went untested"
