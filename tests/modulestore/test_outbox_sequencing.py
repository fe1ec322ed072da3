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
from ggmodules.storage import outbox_sequencing, pg_pipeline
from ggmodules.storage.engine import make_engine
from ggmodules.storage.fan_out import FanOutEntry
from ggmodules.storage.kept import KeptConnection
from ggmodules.storage.migrations import migrate
from ggmodules.storage.modulestore.tables import MsOutbox, MsOutboxPosition, MsStreamHead
from ggmodules.storage.outbox import Outbox
from ggmodules.storage.outbox_numbering import NumberingFeed
from ggmodules.storage.outbox_pruning import OutboxPositions
from tests.harness import BACKENDS, drop_database, new_database_url
from tests.harness.backends import needs_postgres

HEADS = MsStreamHead.__table__  # type: ignore[attr-defined]
ROWS = MsOutbox.__table__  # type: ignore[attr-defined]


@pytest.fixture(params=BACKENDS)
def databases(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Engine]]:
    """Makes migrated ModuleStore databases of the backend, dropped after the test."""
    yield from _databases(request.param, tmp_path)


@pytest.fixture
def pg_databases(tmp_path: Path) -> Iterator[Callable[[], Engine]]:
    yield from _databases("postgres", tmp_path)


def _databases(backend: str, tmp_path: Path) -> Iterator[Callable[[], Engine]]:
    made: list[tuple[str, Engine]] = []

    def make() -> Engine:
        url = new_database_url(backend, f"sequencing{len(made)}", tmp_path)
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


# ---- WatchOutbox's pipelined numbering read on PostgreSQL (storage/outbox_numbering.py) -----------------


def read_all_pipelined(engine: Engine, box: Outbox | None = None) -> list[event_pb2.Event]:
    box = box or outbox()
    kept = KeptConnection(engine, autocommit=True)
    feed = NumberingFeed(box, OutboxPositions(box, MsOutboxPosition), kept)
    events: list[event_pb2.Event] = []
    try:
        while True:
            page = feed.read(len(events) and events[-1].origin_seq, 7)
            if not page.events:
                return events
            events += page.events
    finally:
        kept.close()


@needs_postgres
def test_the_pipelined_read_numbers_as_the_transaction_read_does(
    pg_databases: Callable[[], Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same stream seqs, in batches or one row a pass, and kept: a read of either kind afterwards
    gives the same events."""
    databases = pg_databases
    plain = databases()
    write_some(plain)
    read_all(plain)
    write_some(plain)  # numbered on from the heads the first read left
    events = read_all(plain)
    for max_events in (outbox_sequencing.MAX_EVENTS, 2):
        monkeypatch.setattr(outbox_sequencing, "MAX_EVENTS", max_events)
        pipelined = databases()
        write_some(pipelined)
        read_all_pipelined(pipelined)
        write_some(pipelined)
        got = read_all_pipelined(pipelined)
        assert [(e.agent_id, e.origin_seq, e.stream_seq) for e in got] == [
            (e.agent_id, e.origin_seq, e.stream_seq) for e in events
        ]
        assert read_all(pipelined) == got == read_all_pipelined(pipelined)


@needs_postgres
def test_the_pipelined_read_takes_two_round_trips(
    pg_databases: Callable[[], Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event on its way to Telemetry: BEGIN, its commit not waiting for the WAL flush
    (storage/outbox_numbering.py), the position's lock, the frontier, the rows and their streams' heads in
    one round trip; the head's, the row's and the position's updates, the page, the
    pruning point and COMMIT in the second. Nothing else is sent (psycopg's own cursors are not used)."""
    engine, box = pg_databases(), outbox()
    with engine.begin() as conn:
        box.append_all(conn, [event_pb2.Event(run_id="run-s", agent_id="a-0")])
    assert [e.stream_seq for e in read_all_pipelined(engine, box)] == [1]  # warm: the table's oids are read
    with engine.begin() as conn:
        box.append_all(conn, [event_pb2.Event(run_id="run-s", agent_id="a-0")])
    kept = KeptConnection(engine, autocommit=True)
    feed = NumberingFeed(box, OutboxPositions(box, MsOutboxPosition), kept)
    feed.read(1, 7)  # oids
    sent: list[list[str]] = []
    real = pg_pipeline.send

    def counted(dbapi: object, waiting: list[tuple[str, object]], wanted: list[tuple[str, object]],
                *, commit: bool = False) -> list[pg_pipeline.Rows]:  # fmt: skip
        sent.append([sql.split()[0] for sql, _ in [*waiting, *wanted]] + (["COMMIT"] if commit else []))
        return real(dbapi, waiting, wanted, commit=commit)

    with engine.begin() as conn:
        box.append_all(conn, [event_pb2.Event(run_id="run-s", agent_id="a-0")])
    monkeypatch.setattr(pg_pipeline, "send", counted)
    with kept.connection() as conn:
        dbapi = conn.connection.dbapi_connection
        monkeypatch.setattr(dbapi, "execute", None, raising=False)  # no statement outside the pipeline
        monkeypatch.setattr(dbapi, "cursor", None, raising=False)
    try:
        page = feed.read(2, 7)
    finally:
        kept.close()
    assert [(e.origin_seq, e.stream_seq) for e in page.events] == [(3, 3)]
    assert sent == [
        ["BEGIN", "SET", "SELECT", "SELECT", "SELECT", "SELECT"],
        ["INSERT", "UPDATE", "UPDATE", "SELECT", "SELECT", "COMMIT"],
    ]


@needs_postgres
def test_the_pipelined_read_serves_on_after_its_connection_was_killed(
    pg_databases: Callable[[], Engine],
) -> None:
    """The kept connection's server process is terminated between two reads: the next read finds it
    broken, reads on a fresh one and numbers the new event once."""
    engine, box = pg_databases(), outbox()
    kept = KeptConnection(engine, autocommit=True)
    feed = NumberingFeed(box, OutboxPositions(box, MsOutboxPosition), kept)
    try:
        with engine.begin() as conn:
            box.append_all(conn, [event_pb2.Event(run_id="run-s", agent_id="a-0")])
        assert [e.stream_seq for e in feed.read(0, 7).events] == [1]
        with kept.connection() as conn:
            pid = conn.connection.dbapi_connection.info.backend_pid  # type: ignore[union-attr]
        with engine.connect() as conn:
            conn.execute(select(func.pg_terminate_backend(pid)))
        with engine.begin() as conn:
            box.append_all(conn, [event_pb2.Event(run_id="run-s", agent_id="a-0")])
        assert [(e.origin_seq, e.stream_seq) for e in feed.read(1, 7).events] == [(2, 2)]
    finally:
        kept.close()
    assert [(e.origin_seq, e.stream_seq) for e in read_all(engine)] == [(1, 1), (2, 2)]


def test_a_backlog_of_large_events_is_numbered_a_few_megabytes_a_pass(
    databases: Callable[[], Engine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten 1 MiB events waiting: a pass reads and numbers the payloads while MAX_BYTES of them come before
    (the rest are not fetched), not the whole batch of ten (10 MiB read and rewritten in one transaction);
    every event still comes out once, numbered 1-10. PostgreSQL: by the transaction read and the pipelined
    one alike."""
    big = 1024 * 1024
    handed: list[list[int]] = []  # each pass: the sizes of the payloads it was given
    real = outbox_sequencing.parse

    def spied(rows: list[tuple[object, ...]]) -> object:
        handed.append([len(bytes(p)) for _, _, _, p in rows if p is not None])  # type: ignore[call-overload]
        return real(rows)

    monkeypatch.setattr(outbox_sequencing, "parse", spied)
    engine = databases()
    readers = [read_all]
    if engine.dialect.name == "postgresql":
        readers.append(read_all_pipelined)
    for read in readers:
        engine = databases()
        box = outbox()
        for i in range(10):
            ev = event_pb2.Event(run_id="run-s", agent_id="a-0")
            ev.write.op = f"{i}".ljust(big, "x")
            with engine.begin() as conn:
                box.append_all(conn, [ev])
        handed.clear()
        events = read(engine)
        assert [(e.origin_seq, e.stream_seq, e.write.op[:1]) for e in events] == [
            (i + 1, i + 1, str(i)) for i in range(10)
        ], read.__name__
        assert len(handed) >= 3 and sum(map(len, handed)) == 10, (read.__name__, handed)
        for sizes in handed:
            assert sum(sizes[:-1]) < outbox_sequencing.MAX_BYTES, (read.__name__, handed)
