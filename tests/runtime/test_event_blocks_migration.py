"""Revision bytes_tel_0005 (issue 14) on a log that already holds events: every full BLOCK of the oldest is
packed into a compressed block, the newest stay rows, and Telemetry reads every event back as it was stored,
with its cursor; no cursor is drawn twice."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.core.telemetry.streams import Retention, StreamFilter
from ggmodules.storage.engine import make_engine
from ggmodules.storage.migrations import HERE, version_table
from ggmodules.storage.telemetry import TelemetryRepository
from tests.harness import BACKENDS, drop_database, new_database_url


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = new_database_url(request.param, "blocks_migration", tmp_path)
    yield url
    drop_database(url)


def at_revision(engine: Engine, revision: str) -> None:
    with engine.begin() as conn:
        config = Config()
        config.set_main_option("script_location", str(HERE / "telemetry"))
        config.attributes.update(connection=conn, version_table=version_table("telemetry"))
        command.upgrade(config, revision)


def test_an_existing_log_is_packed_and_reads_back_every_event(url: str) -> None:
    engine = make_engine(url)
    at_revision(engine, "fanout_tel_0004")
    stored = {}
    with engine.begin() as conn:
        for n in range(1, 153):
            ev = event_pb2.Event(stream_seq=n)
            ev.write.op = f"append {n}"
            stored[n] = ev.SerializeToString()
            conn.execute(
                text(
                    "INSERT INTO tel_events (origin, origin_seq, run_id, agent_id, payload, stored_at) "
                    "VALUES ('modulestore', :n, :run, 'a-0', :p, :n)"
                ),
                {"n": n, "run": f"run-{n % 2}", "p": stored[n]},
            )
        conn.execute(text("DELETE FROM tel_events WHERE cursor > 150"))  # the newest two pruned
    engine.dispose()

    repo = TelemetryRepository(make_engine(url), Retention(1_000_000))  # migrates
    try:
        with repo.engine.connect() as conn:
            blocks = conn.execute(
                text("SELECT first_cursor, last_cursor, events FROM tel_event_blocks")
            ).all()
            rows = conn.execute(text("SELECT count(*) FROM tel_events")).scalar_one()
        assert sorted(tuple(map(int, b)) for b in blocks) == [(1, 64, 64), (65, 128, 64)]
        assert rows == 22

        got = repo.read(StreamFilter(), 0, 1000)
        assert [s.cursor for s in got.events] == list(range(1, 151))
        for s in got.events:
            n = s.cursor
            assert (s.event.origin, s.event.origin_seq, s.event.run_id) == ("modulestore", n, f"run-{n % 2}")
            assert s.event.write.op == f"append {n}" and s.size == len(stored[n])
        odd = repo.read(StreamFilter(run_id="run-1"), 60, 1000)
        assert [s.cursor for s in odd.events] == list(range(61, 151, 2))
        assert repo._count() == (150, sum(len(stored[n]) for n in range(1, 151)))

        new = event_pb2.Event(origin="modulestore", origin_seq=153, run_id="run-1", agent_id="a-0")
        assert repo.ingest("modulestore", [new]) == 1
        assert repo.head() == (153, 0)  # 151 and 152 were drawn before: never again
    finally:
        repo.close()
