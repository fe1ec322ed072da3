"""R48 on PostgreSQL: Telemetry's log writes run on one connection kept out of the pool
(storage/kept.py, pipelined through psycopg); when its server session is killed (a restarted server, an
operator's pg_terminate_backend), at most the batch in flight fails (its follower sends it again) and the
next write goes through on a fresh connection: the log never stays stuck on a dead one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import event

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import event_pb2
from ggmodules.core.telemetry.streams import Retention, StreamFilter
from ggmodules.server.telemetry.ingestion import BACKOFF_MIN
from ggmodules.storage.engine import make_engine
from ggmodules.storage.telemetry import TelemetryRepository
from tests.harness import Suite, is_write_of
from tests.harness.backends import end_sessions, needs_postgres, psycopg_dsn
from tests.harness.modulestore import new_run, open_agent

pytestmark = needs_postgres


def _event(n: int) -> event_pb2.Event:
    return event_pb2.Event(origin_seq=n, run_id="run-1", agent_id="coder-0", stream_seq=n)


def test_r48_a_killed_session_costs_at_most_the_batch_in_flight_which_is_stored_when_sent_again(
    pg_repo: TelemetryRepository,
) -> None:
    assert pg_repo.ingest("modulestore", [_event(1)]) == 1
    assert end_sessions(pg_repo.engine.url.render_as_string(hide_password=False)) >= 1

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


def _from(origin: str, n: int) -> event_pb2.Event:
    return event_pb2.Event(origin=origin, origin_seq=n, run_id="run-1", agent_id="coder-0", stream_seq=n)


def test_r48_an_ingest_whose_refresh_after_commit_finds_its_connection_ended_still_returns_and_is_served(
    pg_repo: TelemetryRepository,
) -> None:
    """The ingest after another replica's writes refreshes the recent-events cache from the log once it has
    committed; here the session of that read is ended just before the read is sent (as an operator's
    pg_terminate_backend of every session can, racing the pool's ping). On the old code the ingest raised
    although its event was committed (its follower then took it for a failed write); now the read is made
    once more on a fresh connection: the ingest returns, and the cache serves both replicas' events."""
    url = pg_repo.engine.url.render_as_string(hide_password=False)
    assert pg_repo.ingest("modulestore", [_from("modulestore", 1)]) == 1
    other = TelemetryRepository(make_engine(url), Retention(10_000))  # another replica on the same log
    try:
        assert other.ingest("registry", [_from("registry", 1)]) == 1
    finally:
        other.close()
    ended: list[int] = []

    def end_this_session(conn: Any, cursor: Any, *args: Any) -> None:
        if ended:
            return
        pid = cursor.connection.info.backend_pid
        with psycopg.connect(psycopg_dsn(url, "postgres"), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            while admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone():
                pass  # until the backend has gone: the read below then meets an ended session
        ended.append(pid)

    event.listen(pg_repo.engine, "before_cursor_execute", end_this_session)
    try:
        assert pg_repo.ingest("modulestore", [_from("modulestore", 2)]) == 1
    finally:
        event.remove(pg_repo.engine, "before_cursor_execute", end_this_session)
    assert ended, "no read after the COMMIT: the test proved nothing"
    cached = pg_repo.recent.read(StreamFilter(), 0, 10)
    assert cached is not None
    held = [(e.event.origin, e.event.origin_seq) for e in cached.events]
    assert held == [("modulestore", 1), ("registry", 1), ("modulestore", 2)]


KILLS = 6


def test_r48_telemetry_whose_sessions_keep_being_ended_delivers_every_event_and_logs_no_error(
    tmp_path: Path,
) -> None:
    """Found by ending every session of a two-replica cluster's database 12 times in 8 s: each Telemetry
    logged the lost connection as an error with its traceback ("following failed"), and its follower's pause
    before following again doubled at each loss although events had flowed between (0.05 s up to 2 s),
    holding the next events back that long. Now the loss is a warning naming the database, and a follower
    that stored events since it last connected starts again at the shortest pause. Later, under load (about
    one run in four with two busy processes beside it): the read that refreshes the recent-events cache after
    an ingest's COMMIT, or the pruning after it, ran on a pooled connection the same ending had lost, so the
    ingest raised although its events were committed, and the follower doubled its pause (0.05, 0.1, 0.2 s).
    That read or pruning is now made once more on a fresh connection."""
    with Suite("postgres", tmp_path, transfer=False) as suite:
        telemetry = suite.start_telemetry_process()
        agent = open_agent(suite.ms, new_run(), "coder-0")
        stream = suite.subscribe(agent.run_id, agent.agent_id)
        for n in range(KILLS):
            suite.say(agent.run_id, agent.agent_id, agent[c.KIND_HISTORY], f"before loss {n}")
            stream.until(is_write_of(f"before loss {n}"))
            assert end_sessions(suite.urls["telemetry"]) >= 1
        suite.say(agent.run_id, agent.agent_id, agent[c.KIND_HISTORY], "after the losses")
        stream.until(is_write_of("after the losses"))
        lines = [json.loads(line) for line in telemetry.log_text().splitlines() if line.startswith("{")]
    assert [line for line in lines if line["level"] in ("error", "critical")] == []
    losses = [line for line in lines if line["event"] == "event log's database unavailable"]
    assert losses, "no session loss reached the follower: the test proved nothing"
    pauses = [(line["retry_in"], line["error"]) for line in losses]
    assert {line["retry_in"] for line in losses} == {BACKOFF_MIN}, pauses
