"""R48 on PostgreSQL: Telemetry's log writes run on one connection kept out of the pool
(storage/kept.py, pipelined through psycopg); when its server session is killed (a restarted server, an
operator's pg_terminate_backend), at most the batch in flight fails (its follower sends it again) and the
next write goes through on a fresh connection: the log never stays stuck on a dead one."""

from __future__ import annotations

import psycopg
from sqlalchemy.engine import make_url

from ggmodules.common.v1 import event_pb2
from ggmodules.core.telemetry.streams import StreamFilter
from ggmodules.storage.telemetry import TelemetryRepository
from tests.harness.backends import needs_postgres

pytestmark = needs_postgres


def _event(n: int) -> event_pb2.Event:
    return event_pb2.Event(origin_seq=n, run_id="run-1", agent_id="coder-0", stream_seq=n)


def test_r48_a_killed_session_costs_at_most_the_batch_in_flight_which_is_stored_when_sent_again(
    pg_repo: TelemetryRepository,
) -> None:
    assert pg_repo.ingest("modulestore", [_event(1)]) == 1
    url = make_url(pg_repo.engine.url.render_as_string(hide_password=False))
    dsn = url.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s",
            (url.database,),
        ).fetchone()
    assert killed is not None and killed[0] >= 1

    failures = 0
    for _ in range(2):  # the follower's resend of a batch that failed
        try:
            pg_repo.ingest("modulestore", [_event(2)])
            break
        except Exception:
            failures += 1
    assert failures <= 1
    assert pg_repo.ingest("modulestore", [_event(3)]) == 1
    stored = pg_repo.read(StreamFilter(), 0, 10)
    assert [e.event.origin_seq for e in stored.events] == [1, 2, 3]
