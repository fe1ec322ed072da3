"""A caught-up WatchOutbox of ModuleStore's outbox on PostgreSQL (and ModuleStore's own JetStream relay, which
reads through it) numbers its page in memory in one round trip on no transaction, sends it, and stores the
numbers after (storage/outbox_numbering.py `read_ahead`/`keep`, storage/outbox_ahead.py; issue 9's
write→subscriber latency). The numbers must be exactly those the transactional numbering gives, whoever
numbers the rows first, and never past the outbox frontier (an open writer's row numbered later would fall
behind a row numbered already: R33, a stream the same from any reader)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.storage import pg_pipeline
from ggmodules.storage.fan_out import FanOutEntry
from ggmodules.storage.kept import KeptConnection
from ggmodules.storage.modulestore.tables import MsOutboxPosition
from ggmodules.storage.outbox import OutboxPage
from ggmodules.storage.outbox_ahead import Ahead
from ggmodules.storage.outbox_commit_read import CommitReads
from ggmodules.storage.outbox_numbering import NumberingFeed
from ggmodules.storage.outbox_pruning import OutboxPositions
from ggmodules.storage.prepared import Tx
from tests.harness.backends import needs_postgres
from tests.modulestore.test_outbox_sequencing import _databases, outbox

pytestmark = needs_postgres


class Reader:
    """One watcher's reads of one database's outbox, as WatchOutbox makes them (its own kept connection)."""

    def __init__(self, engine: Engine, reads: CommitReads | None = None) -> None:
        box = outbox()
        self.kept = KeptConnection(engine, autocommit=True)
        self.feed = NumberingFeed(box, OutboxPositions(box, MsOutboxPosition), self.kept, reads)

    def ahead(self, after: int) -> tuple[OutboxPage, Ahead | None]:
        return self.feed.read_ahead(after, 500)

    def read(self, after: int) -> OutboxPage:
        """The transactional numbering and read (a watcher that is not caught up)."""
        return self.feed.read(after, 500)


@pytest.fixture
def databases(tmp_path: Path) -> Iterator[Callable[[], Engine]]:
    yield from _databases("postgres", tmp_path)


@pytest.fixture
def readers() -> Iterator[list[Reader]]:
    made: list[Reader] = []
    yield made
    for reader in made:
        reader.kept.close()


def reader(readers: list[Reader], engine: Engine) -> Reader:
    readers.append(Reader(engine))
    return readers[-1]


def event(agent: str) -> event_pb2.Event:
    ev = event_pb2.Event(run_id="run-s", agent_id=agent, store_id="history-0")
    ev.write.op = "append"
    ev.time.seconds = 7  # twins store the same bytes
    return ev


def shared(writer: str, holders: list[str]) -> FanOutEntry:
    """A write to a store several agents hold: one fan-out record (storage/fan_out.py)."""
    ev = event(writer)
    ev.store_id, ev.write.op = "board-0", "create_issue"
    snapshot = event_pb2.Event(run_id="run-s", store_id="board-0")
    return FanOutEntry(ev, [snapshot], agent_ids=holders)


def write(engine: Engine, agents: list[str], holders: list[str] | None = None) -> None:
    with engine.begin() as conn:
        fanned = [shared(agents[0], holders)] if holders else []
        outbox().append_all(conn, [*(event(a) for a in agents), *fanned])


def stored(engine: Engine) -> tuple[list[tuple[object, ...]], ...]:
    q = (
        "SELECT origin_seq, stream_seq, payload FROM ms_outbox ORDER BY 1",
        "SELECT * FROM ms_stream_heads ORDER BY 1, 2",
        "SELECT * FROM ms_outbox_positions ORDER BY 1",
    )
    with engine.connect() as conn:
        return tuple([tuple(r) for r in conn.execute(text(s))] for s in q)


def wire(page: OutboxPage) -> list[bytes]:
    return [ev.SerializeToString() for ev in page.events]


def test_r33_a_page_numbered_ahead_is_the_page_and_the_numbers_the_transactional_read_gives(
    databases: Callable[[], Engine], readers: list[Reader]
) -> None:
    fast_db, slow_db = databases(), databases()
    fast, slow = reader(readers, fast_db), reader(readers, slow_db)
    rng = random.Random(9)
    after, numbered_ahead = [0, 0], 0
    for i in range(60):
        agents = [rng.choice("abcd") for _ in range(rng.randint(1, 3))]
        holders = ["b", "c"] if i % 15 == 14 else None  # a fan-out record now and then (a board write)
        for db in (fast_db, slow_db):
            write(db, agents, holders)
        page, kept = fast.ahead(after[0])
        expected = slow.read(after[1])
        assert wire(page) == wire(expected) and page.head == expected.head and not page.more
        if kept is not None:
            fast.feed.keep(kept)
            numbered_ahead += 1
        after = [page.events[-1].origin_seq, expected.events[-1].origin_seq]
    assert numbered_ahead == 60  # fan-out records too: their holders' heads are read with the rows
    assert stored(fast_db) == stored(slow_db)  # rows, stream heads, positions
    page, kept = fast.ahead(after[0])  # caught up, nothing new: an empty page, nothing to keep
    assert page.events == [] and kept is not None and kept.params == []


def test_numbers_sent_but_not_kept_are_given_again_by_the_next_reader(
    databases: Callable[[], Engine], readers: list[Reader]
) -> None:
    db = databases()
    first = reader(readers, db)
    write(db, ["a", "b", "a"])
    _, kept = first.ahead(0)
    assert kept is not None
    first.feed.keep(kept)
    write(db, ["b", "a"])
    sent, _lost = first.ahead(3)  # sent; the process dies before `keep`
    assert [(e.agent_id, e.stream_seq) for e in sent.events] == [("b", 2), ("a", 3)]
    again = reader(readers, db).read(3)  # a new process numbers them in a transaction
    assert wire(again) == wire(sent)


def test_keep_after_another_reader_numbered_the_rows_and_more_writes_nothing_over_it(
    databases: Callable[[], Engine], readers: list[Reader]
) -> None:
    """The other reader (another replica's relay, a Telemetry watcher) moved the position and the heads past
    what this one numbered: `keep` must neither move the position back nor set the heads to its own, older,
    values (the next event of stream a would then repeat seq 3)."""
    db = databases()
    mine, other = reader(readers, db), reader(readers, db)
    write(db, ["a", "a"])
    sent, kept = mine.ahead(0)
    assert kept is not None
    write(db, ["a"])
    theirs = other.read(0)
    assert wire(theirs)[:2] == wire(sent) and [e.stream_seq for e in theirs.events] == [1, 2, 3]
    before = stored(db)
    mine.feed.keep(kept)
    assert stored(db) == before
    write(db, ["a"])
    page, _ = mine.ahead(3)
    assert [e.stream_seq for e in page.events] == [4]


def test_an_open_writer_holds_what_is_numbered_ahead_until_it_ends(
    databases: Callable[[], Engine], readers: list[Reader]
) -> None:
    """Row 1 is drawn by a transaction still open when row 2 commits: nothing is numbered past it (row 2 would
    take seq 1 of stream a, and row 1, committed later, seq 2: behind an event already sent)."""
    db = databases()
    watcher = reader(readers, db)
    with db.connect() as slow:
        with slow.begin():
            outbox().append_all(slow, [event("a")])
            write(db, ["a"])
            page, _ = watcher.ahead(0)
            assert page.events == [] and page.held
        page, kept = watcher.ahead(0)
    assert [(e.origin_seq, e.stream_seq) for e in page.events] == [(1, 1), (2, 2)] and not page.held
    assert kept is not None


def test_the_read_ahead_is_one_round_trip_and_keep_one(
    databases: Callable[[], Engine], readers: list[Reader], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The frontier and the rows with their heads, on no transaction; then, after the send, the numbers
    stored by one statement in a transaction whose COMMIT does not wait for the WAL flush."""
    db = databases()
    watcher = reader(readers, db)
    write(db, ["a"])
    watcher.ahead(0)  # the table's oids are read once
    write(db, ["a"])
    sent: list[list[str]] = []
    real = pg_pipeline.send

    def counted(dbapi: object, waiting: list[tuple[str, object]], wanted: list[tuple[str, object]],
                *, commit: bool = False) -> list[pg_pipeline.Rows]:  # fmt: skip
        sent.append([sql.split()[0] for sql, _ in [*waiting, *wanted]] + (["COMMIT"] if commit else []))
        return real(dbapi, waiting, wanted, commit=commit)

    monkeypatch.setattr(pg_pipeline, "send", counted)
    page, kept = watcher.ahead(0)
    assert kept is not None and [(e.origin_seq, e.stream_seq) for e in page.events] == [(1, 1), (2, 2)]
    watcher.feed.keep(kept)
    assert sent == [["SELECT", "SELECT"], ["BEGIN", "SET", "WITH", "COMMIT"]]


def test_a_fan_out_record_read_while_another_reader_moved_the_position_is_read_in_a_transaction(
    databases: Callable[[], Engine], readers: list[Reader]
) -> None:
    """The rows and the runs' heads are two statements, two snapshots: when the position moved between them,
    the heads read second may be past the rows read first, and numbering from them would skip seqs."""
    db = databases()
    watcher = reader(readers, db)
    write(db, ["a"], holders=["b", "c"])
    ahead = outbox().numbering_ahead
    assert ahead is not None
    with watcher.kept.connection() as conn:
        tx = Tx(conn)
        found, run_heads = tx.send([ahead.read_statement(tx, 1 << 20), ahead.run_heads_statement(tx)])
        rows, heads = found.fetchall(), run_heads.fetchall()
    assert ahead.numbered(rows, 0, 500, 1 << 20, run_heads=heads) is not None
    moved = [(1, *head[1:]) for head in heads]  # the same heads, read once the position stood at 1
    assert ahead.numbered(rows, 0, 500, 1 << 20, run_heads=moved) is None
    page = watcher.read(0)
    assert [(e.agent_id, e.stream_seq) for e in page.events] == [("a", 1), ("a", 2), ("b", 1), ("c", 1)]
