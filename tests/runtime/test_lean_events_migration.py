"""Revision fanout_tel_0004 (issue 14) on a log that already holds events: every row is kept, and no cursor is
drawn twice, even one whose event was pruned (SQLite rebuilds the table and must carry its counter over)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Engine

from ggmodules.storage.engine import make_engine
from ggmodules.storage.migrations import HERE, migrate, version_table
from tests.harness import BACKENDS, drop_database, new_database_url


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = new_database_url(request.param, "lean", tmp_path)
    eng = make_engine(url)
    yield eng
    eng.dispose()
    drop_database(url)


def test_a_log_with_events_keeps_them_and_never_draws_a_cursor_again(engine: Engine) -> None:
    with engine.begin() as conn:
        config = Config()
        config.set_main_option("script_location", str(HERE / "telemetry"))
        config.attributes.update(connection=conn, version_table=version_table("telemetry"))
        command.upgrade(config, "h9log_tel_0003")
        for n in range(1, 6):
            conn.execute(
                text(
                    "INSERT INTO tel_events (origin, origin_seq, run_id, agent_id, payload, stored_at) "
                    "VALUES ('modulestore', :n, 'run-1', 'a-0', :p, 0)"
                ),
                {"n": n, "p": bytes([n])},
            )
        conn.execute(text("DELETE FROM tel_events WHERE cursor > 3"))  # the newest two pruned
    migrate(engine, "telemetry")
    with engine.begin() as conn:
        kept = conn.execute(text("SELECT cursor, origin_seq, payload FROM tel_events ORDER BY cursor")).all()
        assert [(int(c), int(s), bytes(p)) for c, s, p in kept] == [(n, n, bytes([n])) for n in (1, 2, 3)]
        new = conn.execute(
            text(
                "INSERT INTO tel_events (origin, origin_seq, run_id, agent_id, payload, stored_at) "
                "VALUES ('modulestore', 6, 'run-1', 'a-0', :p, 0) RETURNING cursor"
            ),
            {"p": b"\x06"},
        ).scalar_one()
    assert int(new) == 6
