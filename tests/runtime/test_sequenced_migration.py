"""Revision hold_ms_0005 (issue 14) on an outbox that already holds events numbered by their writes: they keep
their stream_seqs, and the events written after it are numbered on from them when the outbox is read
(storage/outbox_sequencing.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.storage.engine import make_engine
from ggmodules.storage.migrations import HERE, migrate, version_table
from ggmodules.storage.modulestore.tables import MsOutbox, MsOutboxPosition, MsStreamHead
from ggmodules.storage.outbox import Outbox
from tests.harness import BACKENDS, drop_database, new_database_url


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = new_database_url(request.param, "sequenced", tmp_path)
    eng = make_engine(url)
    yield eng
    eng.dispose()
    drop_database(url)


def events(agents: list[str]) -> list[event_pb2.Event]:
    return [event_pb2.Event(run_id="run-m", agent_id=a) for a in agents]


def test_events_numbered_by_their_writes_keep_their_seqs_and_later_ones_follow(engine: Engine) -> None:
    numbered_by_writes = Outbox("modulestore", MsOutbox, MsStreamHead)
    with engine.begin() as conn:
        config = Config()
        config.set_main_option("script_location", str(HERE / "modulestore"))
        config.attributes.update(connection=conn, version_table=version_table("modulestore"))
        command.upgrade(config, "h8_ms_0004")
        numbered_by_writes.append_all(conn, events(["a-0", "a-1", "a-0"]))
    migrate(engine, "modulestore")
    sequenced = Outbox(
        "modulestore", MsOutbox, MsStreamHead, sequenced_in=MsOutboxPosition.__table__  # type: ignore[attr-defined]
    )
    with engine.begin() as conn:
        sequenced.append_all(conn, events(["a-1", "a-0", "a-2"]))
    with engine.begin() as conn:
        page = sequenced.read(conn, 0, 100)
    assert [(e.agent_id, e.stream_seq) for e in page.events] == [
        ("a-0", 1), ("a-1", 1), ("a-0", 2), ("a-1", 2), ("a-0", 3), ("a-2", 1),
    ]  # fmt: skip
