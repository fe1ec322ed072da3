"""Issue 10 (write→subscriber on PostgreSQL): a relayed batch reaches Telemetry's log in one round trip
(storage/telemetry/pg_ingest.py): BEGIN, the write lock, the counters, the INSERT of what is new with the
counters' and the origin's position's raise, and COMMIT at once (it was five: psycopg's pipeline sent BEGIN
alone and one more Sync after COMMIT, and the INSERT went on its own; then two: the counters' write and
COMMIT went after the INSERT's answer). A batch with a roster, or one that may cross a retention bound, takes
two. What it stores is what ingestion stored before: each (origin, origin_seq) once, in order, counted (R33's
retention sees the same log), pruned to the bounds when it returns."""

from __future__ import annotations

import tempfile

from sqlalchemy import text

from ggmodules.common.v1 import event_pb2
from ggmodules.core.telemetry.streams import Retention, StreamFilter
from ggmodules.storage.engine import make_engine
from ggmodules.storage.telemetry import TelemetryRepository
from tests.harness.backends import needs_postgres

pytestmark = needs_postgres


def _event(n: int, agent: str = "coder-0") -> event_pb2.Event:
    return event_pb2.Event(origin="modulestore", origin_seq=n, run_id="run-1", agent_id=agent, stream_seq=n)


def _waits(pg_repo: TelemetryRepository, work: object) -> int:
    """How many times the client waited on the server while `work()` ran on the log's kept connection: the
    ReadyForQuery messages it read (libpq's protocol trace), one per Sync or simple Query it sent."""
    assert pg_repo._kept is not None
    with pg_repo._kept.connection() as conn:
        pgconn = conn.connection.dbapi_connection.pgconn  # type: ignore[union-attr]
    with tempfile.TemporaryFile("w+") as trace:
        pgconn.trace(trace.fileno())
        try:
            work()  # type: ignore[operator]
        finally:
            pgconn.untrace()
        trace.seek(0)
        sent = [line.split("\t") for line in trace.read().splitlines()]
    return sum(1 for f in sent if len(f) > 3 and f[1] == "B" and f[3].startswith("ReadyForQuery"))


def test_a_relayed_batch_is_stored_in_one_round_trip(pg_repo: TelemetryRepository) -> None:
    assert pg_repo.ingest("modulestore", [_event(1)]) == 1  # warm: statements prepared, connection kept
    waits = _waits(pg_repo, lambda: pg_repo.ingest("modulestore", [_event(2), _event(3, "coder-1")]))
    assert waits == 1
    got = pg_repo.read(StreamFilter(), 0, 10).events
    assert [(s.cursor, s.event.origin_seq, s.event.agent_id) for s in got] == [
        (1, 1, "coder-0"), (2, 2, "coder-0"), (3, 3, "coder-1"),
    ]  # fmt: skip


def test_what_the_origin_position_covers_is_passed_over_in_the_same_round_trip(
    pg_repo: TelemetryRepository,
) -> None:
    """A batch sent again (a relay's retry, another replica's relay) stores only what is new, draws no
    cursor for the rest, and the counts stay those of the log."""
    assert pg_repo.ingest("modulestore", [_event(1), _event(2)]) == 2
    assert pg_repo.ingest("modulestore", [_event(1), _event(2), _event(3), _event(3)]) == 1
    assert pg_repo.ingest("modulestore", [_event(2), _event(3)]) == 0
    got = pg_repo.read(StreamFilter(), 0, 10).events
    assert [(s.cursor, s.event.origin_seq) for s in got] == [(1, 1), (2, 2), (3, 3)]
    assert pg_repo.highest_origin_seq("modulestore") == 3
    with pg_repo.engine.connect() as conn:
        counts = dict(conn.execute(text("SELECT key, value FROM tel_meta WHERE key LIKE 'stored%'")).all())
    assert counts == {"stored": 3, "stored_bytes": sum(s.size for s in got)}


def _counts(repo: TelemetryRepository) -> dict[str, int]:
    with repo.engine.connect() as conn:
        return dict(conn.execute(text("SELECT key, value FROM tel_meta WHERE key LIKE 'stored%'")).all())


def test_the_counts_and_the_position_move_with_what_one_round_trip_stored(
    pg_repo: TelemetryRepository,
) -> None:
    """The counters are raised by what the INSERT returned (not set from this replica's memory), and the
    position by the batch's highest origin_seq, stored or passed over."""
    assert pg_repo.ingest("modulestore", [_event(1)]) == 1
    other = event_pb2.Event(origin="other", origin_seq=5, run_id="run-1", agent_id="coder-0", stream_seq=1)
    assert pg_repo.ingest("other", [other]) == 1
    assert pg_repo.ingest("modulestore", [_event(1), _event(2), _event(4)]) == 2
    assert pg_repo.ingest("modulestore", [_event(3)]) == 0  # below the position: passed over
    got = pg_repo.read(StreamFilter(), 0, 10).events
    assert [(s.event.origin, s.event.origin_seq) for s in got] == [
        ("modulestore", 1), ("other", 5), ("modulestore", 2), ("modulestore", 4),
    ]  # fmt: skip
    assert _counts(pg_repo) == {"stored": 4, "stored_bytes": sum(s.size for s in got)}
    assert pg_repo.highest_origin_seq("modulestore") == 4
    assert pg_repo.highest_origin_seq("other") == 5


def test_a_batch_with_a_roster_still_records_the_agent(pg_repo: TelemetryRepository) -> None:
    """A roster is recorded (agents.know) between the INSERT and COMMIT: such a batch is not sent at once."""
    assert pg_repo.ingest("modulestore", [_event(1)]) == 1
    roster = _event(2, "coder-9")
    roster.roster.SetInParent()
    assert pg_repo.ingest("modulestore", [roster, _event(3)]) == 2
    assert pg_repo.agent("run-1", "coder-9") is not None
    assert [s.event.origin_seq for s in pg_repo.read(StreamFilter(), 0, 10).events] == [1, 2, 3]


def test_a_bound_crossed_by_another_replicas_writes_is_pruned_before_the_ingest_returns(
    pg_repo: TelemetryRepository,
) -> None:
    """This replica's counts are those of its last write: another replica's writes since may have brought
    the log to its bound, so the one-round-trip ingest it chose crosses it. The counts read in that round
    trip show it, and the pruning follows before the ingest returns, as it would have in the write."""
    url = pg_repo.engine.url.render_as_string(hide_password=False)
    small = TelemetryRepository(make_engine(url), Retention(10))
    other = TelemetryRepository(make_engine(url), Retention(10_000))
    try:
        assert small.ingest("modulestore", [_event(1)]) == 1  # its counts: 1 event
        assert other.ingest("modulestore", [_event(n) for n in range(2, 12)]) == 10  # 11: past the bound
        waits = _waits(small, lambda: small.ingest("modulestore", [_event(12)]))
        assert waits > 1  # the one round trip, then the pruning
        got = small.read(StreamFilter(), 0, 20)
        assert [s.event.origin_seq for s in got.events] == list(range(3, 13))
        assert _counts(small)["stored"] == 10
    finally:
        small.close()
        other.close()
