"""Issue 10 (write→subscriber on PostgreSQL): a relayed batch reaches Telemetry's log in two round trips
(storage/telemetry/pg_ingest.py): BEGIN, the write lock, the counters and the INSERT of what is new at once;
then the counters' and the origin's position's write with COMMIT (it was five: psycopg's pipeline sent BEGIN
alone and one more Sync after COMMIT, and the INSERT went on its own). What it stores is what ingestion stored
before: each (origin, origin_seq) once, in order, counted (R33's retention sees the same log)."""

from __future__ import annotations

import tempfile

from sqlalchemy import text

from ggmodules.common.v1 import event_pb2
from ggmodules.core.telemetry.streams import StreamFilter
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


def test_a_relayed_batch_is_stored_in_two_round_trips(pg_repo: TelemetryRepository) -> None:
    assert pg_repo.ingest("modulestore", [_event(1)]) == 1  # warm: statements prepared, connection kept
    waits = _waits(pg_repo, lambda: pg_repo.ingest("modulestore", [_event(2), _event(3, "coder-1")]))
    assert waits == 2
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
