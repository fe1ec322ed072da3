"""R48 and issue 10 on PostgreSQL: WatchOutbox's numbering transaction commits without waiting for its WAL
flush (storage/outbox_numbering.py), so a server crash may lose numbers already sent to Telemetry. What a
user must never see: an acknowledged write's event served with one stream_seq before a crash and another
after it, or not served at all. On a cluster of the test's own, killed with SIGKILL (every server process)
right after events were served and started again, with the reading ModuleStore (its feed and kept
connection) living on as a real one would:
- every event keeps the stream seq it was served with, each stream runs 1, 2, 3... (R28), and the crash did
  lose numbers (the position read back is below what was served), so the renumbering is what was checked;
- a number the recovered sequence hands out again (drawn by a write that rolled back before the crash, and
  counted final by the lost pass) is not passed over while its new write is still open: the frontier the
  feed learnt before the crash is learnt again on the new connection.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.storage.kept import KeptConnection
from ggmodules.storage.modulestore.tables import MsOutboxPosition
from ggmodules.storage.outbox_numbering import NumberingFeed
from ggmodules.storage.outbox_pruning import OutboxPositions
from tests.harness.private_postgres import PrivateCluster, crashable, migrated, needs_pg_binaries
from tests.modulestore.test_outbox_sequencing import outbox, streams, write_some

pytestmark = needs_pg_binaries

Served = dict[tuple[int, str], int]


@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    with crashable() as made:  # nothing flushes the WAL behind the test's back
        yield made


@pytest.fixture
def engine(cluster: PrivateCluster) -> Iterator[Engine]:
    with migrated(cluster, "modulestore") as eng:
        yield eng


def _feed(engine: Engine) -> tuple[NumberingFeed, KeptConnection]:
    box = outbox()
    kept = KeptConnection(engine, autocommit=True)
    return NumberingFeed(box, OutboxPositions(box, MsOutboxPosition), kept), kept


def _serve(feed: NumberingFeed, after: int, served: Served) -> int:
    """Reads on until nothing is left, as WatchOutbox does; notes each event's stream seq."""
    while True:
        page = feed.read(after, 500)
        if not page.events:
            return after
        for ev in page.events:
            served[(ev.origin_seq, ev.agent_id)] = ev.stream_seq
        after = page.events[-1].origin_seq


def _position(engine: Engine) -> int:
    with engine.connect() as conn:
        found = conn.execute(text("SELECT value FROM ms_outbox_positions WHERE name = 'sequenced_through'"))
        return int(found.scalar() or 0)


def test_r48_events_served_before_a_crash_keep_their_stream_seqs(
    cluster: PrivateCluster, engine: Engine
) -> None:
    feed, kept = _feed(engine)
    served: Served = {}
    after, lost = 0, 0
    try:
        for _ in range(3):
            write_some(engine)  # acknowledged: committed with synchronous commit on
            after = _serve(feed, after, served)
            cluster.crash()
            cluster.start()
            lost += _position(engine) < after
        write_some(engine)  # after the last crash: the streams go on
        after = _serve(feed, after, served)
    finally:
        kept.close()
    assert lost, "no crash lost a numbering: the renumbering went untested"
    fresh, kept = _feed(engine)  # every event again, from the start
    again: Served = {}
    try:
        _serve(fresh, 0, again)
    finally:
        kept.close()
    assert again == served
    events = [event_pb2.Event(origin_seq=o, agent_id=a, stream_seq=s) for (o, a), s in sorted(served.items())]
    for agent, got in streams(events).items():
        assert [seq for _, seq in got] == list(range(1, len(got) + 1)), agent
    assert len(served) == 4 * (6 + 6 + 1 + 3 + 5)


def test_r48_a_number_drawn_again_after_a_crash_is_not_passed_over(
    cluster: PrivateCluster, engine: Engine
) -> None:
    box = outbox()
    feed, kept = _feed(engine)
    served: Served = {}
    try:
        write_some(engine)
        after = _serve(feed, after=0, served=served)
        drawn_again = 0
        for attempt in range(4):
            cluster.crash()  # the next number drawn writes the sequence's WAL record
            cluster.start()
            with engine.connect() as conn, conn.begin() as rolled_back:
                box.append_all(conn, [event_pb2.Event(run_id="run-s", agent_id="a-9")])
                drawn = int(conn.execute(text("SELECT max(origin_seq) FROM ms_outbox")).scalar_one())
                rolled_back.rollback()
            assert feed.read(after, 500).events == []  # numbers past `drawn`: final, nothing there
            cluster.crash()  # the record of `drawn`, the rollback and the numbering were in memory only
            cluster.start()
            with engine.connect() as conn, conn.begin():
                box.append_all(conn, [event_pb2.Event(run_id="run-s", agent_id=f"a-w{attempt}")])
                written = int(conn.execute(text("SELECT max(origin_seq) FROM ms_outbox")).scalar_one())
                feed.read(after, 500)  # while the write is open
            drawn_again += written <= drawn
            after = _serve(feed, after, served)
            assert served.get((written, f"a-w{attempt}")) == 1, "an acknowledged write's event was not served"
            if drawn_again:
                break
    finally:
        kept.close()
    assert drawn_again, "the recovered sequence never drew a number again: the case went untested"
