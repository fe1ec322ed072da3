"""ModuleStore's stream seqs numbered when the outbox is read (storage/outbox_sequencing.py, issue 14): a
write stores its events without stream_seq and takes no stream head; a read numbers every stream 1, 2, 3...
in origin_seq order, a fan-out record's holders included, and keeps the numbers (read again: the same),
whether the rows are numbered in one pass or in many."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.storage import outbox_sequencing
from ggmodules.storage.engine import make_engine
from ggmodules.storage.fan_out import FanOutEntry
from ggmodules.storage.migrations import migrate
from ggmodules.storage.modulestore.tables import MsOutbox, MsOutboxPosition, MsStreamHead
from ggmodules.storage.outbox import Outbox
from tests.harness import BACKENDS, drop_database, new_database_url

HEADS = MsStreamHead.__table__  # type: ignore[attr-defined]
ROWS = MsOutbox.__table__  # type: ignore[attr-defined]


@pytest.fixture(params=BACKENDS)
def databases(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Engine]]:
    """Makes migrated ModuleStore databases of the backend, dropped after the test."""
    made: list[tuple[str, Engine]] = []

    def make() -> Engine:
        url = new_database_url(request.param, f"sequencing{len(made)}", tmp_path)
        eng = make_engine(url)
        migrate(eng, "modulestore")
        made.append((url, eng))
        return eng

    yield make
    for url, eng in made:
        eng.dispose()
        drop_database(url)


@pytest.fixture
def engine(databases: Callable[[], Engine]) -> Engine:
    return databases()


def outbox() -> Outbox:
    return Outbox("modulestore", MsOutbox, MsStreamHead, sequenced_in=MsOutboxPosition.__table__)  # type: ignore[attr-defined]


def fan_out(writer: str, holders: list[str]) -> FanOutEntry:
    written = event_pb2.Event(run_id="run-s", agent_id=writer, store_id="board-0")
    written.write.op = "create_issue"
    snapshot = event_pb2.Event(run_id="run-s", store_id="board-0")
    snapshot.snapshot.written_by = writer
    return FanOutEntry(written, [snapshot], agent_ids=holders)


def write_some(engine: Engine) -> None:
    """Three transactions: plain events and fan-outs whose holders' streams interleave."""
    box = outbox()
    agents = [f"a-{n}" for n in range(6)]
    with engine.begin() as conn:
        box.append_all(conn, [event_pb2.Event(run_id="run-s", agent_id=a) for a in agents])
    with engine.begin() as conn:
        box.append_all(conn, [fan_out("a-0", agents[1:]), event_pb2.Event(run_id="run-s", agent_id="a-3")])
    with engine.begin() as conn:
        box.append_all(conn, [fan_out("a-4", ["a-0", "a-3"]), fan_out("a-1", agents[2:])])


def read_all(engine: Engine) -> list[event_pb2.Event]:
    box, events, after = outbox(), [], 0
    while True:
        with engine.begin() as conn:
            page = box.read(conn, after, 7)
        if not page.events:
            return events
        events += page.events
        after = page.events[-1].origin_seq


def streams(events: list[event_pb2.Event]) -> dict[str, list[tuple[int, int]]]:
    found: dict[str, list[tuple[int, int]]] = {}
    for ev in events:
        found.setdefault(ev.agent_id, []).append((ev.origin_seq, ev.stream_seq))
    return found


def test_a_write_takes_no_stream_head_and_a_read_numbers_each_stream_in_order(engine: Engine) -> None:
    write_some(engine)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(HEADS)).scalar_one() == 0
        assert set(conn.execute(select(ROWS.c.stream_seq)).scalars()) == {0}
    events = read_all(engine)
    assert len(events) == 6 + 6 + 1 + 3 + 5
    for agent, got in streams(events).items():
        assert [seq for _, seq in got] == list(range(1, len(got) + 1)), agent
        assert [o for o, _ in got] == sorted(o for o, _ in got)
    assert read_all(engine) == events  # numbered once, kept


def test_numbering_in_many_small_passes_gives_the_same_numbers(
    databases: Callable[[], Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    at_once = databases()
    write_some(at_once)
    events = read_all(at_once)
    monkeypatch.setattr(outbox_sequencing, "MAX_EVENTS", 2)  # a pass numbers one row
    in_steps = databases()
    write_some(in_steps)
    assert [(e.agent_id, e.stream_seq) for e in read_all(in_steps)] == [
        (e.agent_id, e.stream_seq) for e in events
    ]


def test_a_read_of_one_run_numbers_on_past_other_runs_rows_until_it_finds_its_own(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty page says the reader has every event there is: it is never sent while rows are left to
    number (here, one row per pass and twenty of another run's before this run's)."""
    monkeypatch.setattr(outbox_sequencing, "MAX_EVENTS", 1)
    box = outbox()
    with engine.begin() as conn:
        box.append_all(conn, [event_pb2.Event(run_id="run-other", agent_id="a-0") for _ in range(20)])
    with engine.begin() as conn:
        box.append_all(conn, [event_pb2.Event(run_id="run-s", agent_id="a-0")])
    with engine.begin() as conn:
        page = box.read(conn, 0, 10, "run-s")
    assert [(e.run_id, e.stream_seq) for e in page.events] == [("run-s", 1)]
