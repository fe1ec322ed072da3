"""The outbox storing a write's fan-out once (storage/fan_out.py, storage/fan_out_rows.py), at the
storage level: one row for the writer's event and every holder's snapshot, read back as the separate events;
and on PostgreSQL, when another transaction drew outbox numbers in between (so the block is not consecutive),
a row per event under the numbers drawn, read back exactly the same."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.storage import fan_out_rows
from ggmodules.storage.engine import make_engine
from ggmodules.storage.fan_out import FanOutEntry
from ggmodules.storage.migrations import migrate
from ggmodules.storage.modulestore.tables import MsOutbox, MsStreamHead
from ggmodules.storage.outbox import Outbox
from tests.harness import BACKENDS, drop_database, new_database_url

HOLDERS = [f"h-{n}" for n in range(1, 9)]
ROWS = MsOutbox.__table__  # type: ignore[attr-defined]


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    yield from _engine(request, tmp_path)


@pytest.fixture(params=[p for p in BACKENDS if p.id == "postgres"])
def postgres(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """PostgreSQL only: SQLite admits one writer at a time, so its numbers are never drawn apart."""
    yield from _engine(request, tmp_path)


def _engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    url = new_database_url(request.param, "fanrows", tmp_path)
    eng = make_engine(url)
    migrate(eng, "modulestore")
    yield eng
    eng.dispose()
    drop_database(url)


def entry() -> FanOutEntry:
    written = event_pb2.Event(run_id="run-f", agent_id="w-0", store_id="board-0")
    written.write.op = "create_issue"
    snapshot = event_pb2.Event(run_id="run-f", store_id="board-0")
    snapshot.snapshot.written_by = "w-0"
    return FanOutEntry(written, [snapshot], [(h, 0) for h in HOLDERS])


def append_and_read(engine: Engine) -> tuple[list[event_pb2.Event], int]:
    outbox = Outbox("modulestore", MsOutbox, MsStreamHead)
    with engine.begin() as conn:
        outbox.append_all(conn, [event_pb2.Event(run_id="run-f", agent_id="w-0"), entry()])
    with engine.connect() as conn:
        rows = int(conn.execute(select(func.count()).select_from(ROWS)).scalar_one())
        return outbox.read(conn, 0, 100).events, rows


def check(events: list[event_pb2.Event]) -> None:
    assert [ev.agent_id for ev in events] == ["w-0", "w-0", *HOLDERS]
    assert [ev.WhichOneof("body") for ev in events] == [None, "write"] + ["snapshot"] * len(HOLDERS)
    assert [ev.stream_seq for ev in events] == [1, 2] + [1] * len(HOLDERS)
    assert all(ev.snapshot.written_by == "w-0" for ev in events[2:])
    assert len({ev.time.ToNanoseconds() for ev in events}) == 1
    seqs = [ev.origin_seq for ev in events]
    assert seqs == sorted(set(seqs))


def test_a_fan_out_is_one_row_read_back_as_its_events(engine: Engine) -> None:
    events, rows = append_and_read(engine)
    check(events)
    assert rows == 2  # the plain event's, and the fan-out's
    assert [ev.origin_seq for ev in events] == list(range(events[0].origin_seq, events[0].origin_seq + 10))


def test_on_postgresql_numbers_drawn_apart_store_a_row_per_event_read_back_the_same(
    postgres: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The block's draw, with another transaction's number taken in the middle of it: n + 1 numbers drawn,
    # the middle one not this transaction's.
    drawn_apart = (
        "SELECT v FROM (SELECT i, nextval(CAST(pg_get_serial_sequence('{table}', 'origin_seq') AS regclass))"
        " AS v FROM generate_series(1, CAST(:n AS integer) + 1) AS i OFFSET 0) x"
        " WHERE i <> CAST(:n AS integer) / 2 + 1"
    )
    monkeypatch.setattr(fan_out_rows, "_BLOCK", drawn_apart)
    events, rows = append_and_read(postgres)
    check(events)
    assert rows == 2 + len(HOLDERS)  # a row per event
