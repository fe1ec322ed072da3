"""On PostgreSQL a write's COMMIT carries the read its caught-up outbox watchers would make next
(storage/outbox_commit_read.py; issue 9's write→subscriber latency): the watcher woken by the commit
numbers that reading's rows with no round trip of its own. What it sends must be what its own read would
have sent (R33: a stream the same from any reader, nothing skipped), whatever order the readings arrive in.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.storage import pg_pipeline
from ggmodules.storage.idempotency import RequestKey
from ggmodules.storage.modulestore import pg_write
from ggmodules.storage.modulestore.repository import ModuleStoreRepository
from ggmodules.storage.outbox import OutboxPage
from ggmodules.storage.outbox_commit_read import CommitReads
from ggmodules.usecases.modulestore import write as writing
from ggmodules.usecases.modulestore.bind import bind
from ggmodules.wire import modulestore as convert
from tests.harness.backends import needs_postgres
from tests.harness.modulestore import messages, new_run
from tests.modulestore import test_outbox_ahead_pg as ahead_pg
from tests.modulestore.test_group_commit import _plan
from tests.modulestore.test_outbox_ahead_pg import Reader
from tests.modulestore.test_outbox_sequencing import outbox

pytestmark = needs_postgres
# test_outbox_ahead_pg's fixtures: a PostgreSQL database per call, and its readers' kept connections closed.
databases, readers = ahead_pg.databases, ahead_pg.readers


@pytest.fixture
def engine(databases: Callable[[], Engine]) -> Engine:
    return databases()


class Watcher(Reader):
    """A caught-up watcher's feed, as WatchOutbox and ModuleStore's relay make it, taking the readings of
    `reads`; what it sent."""

    def __init__(self, engine: Engine, reads: CommitReads) -> None:
        super().__init__(engine, reads)
        self.after = 0
        self.sent: list[event_pb2.Event] = []

    def read_itself(self) -> OutboxPage:
        """Its own read, as after a heartbeat or a commit that sent it nothing: what it sends, kept."""
        page, ahead = self.feed.read_ahead(self.after, 500)
        if ahead is not None:
            self.feed.keep(ahead)
        return self._sent(page)

    def woken(self) -> OutboxPage | None:
        """Woken by a commit: the page of the reading it sent, if it may be taken (then sent and kept)."""
        got = self.feed.from_commit(self.after, 500)
        if got is None:
            return None
        page, ahead = got
        self.feed.keep(ahead)
        return self._sent(page)

    def _sent(self, page: OutboxPage) -> OutboxPage:
        self.sent += page.events
        if page.events:
            self.after = page.events[-1].origin_seq
        return page


def warm(engine: Engine, n: int) -> None:
    """Makes the pool hold `n` connections."""
    with contextlib.ExitStack() as stack:
        for _ in range(n):
            stack.enter_context(engine.connect()).execute(text("SELECT 1"))


def event(agent: str, text: str = "") -> event_pb2.Event:
    ev = event_pb2.Event(run_id="run-c", agent_id=agent, store_id="history-0")
    ev.write.op = text or "append"
    return ev


class Writer:
    """A write transaction as a group commit runs it (deferred statements), committed as
    `CommitReads.commit` does, with the watchers' reading after the COMMIT in the same round trip; the
    reading is handed to `CommitReads.taken` by the test, when it chooses."""

    def __init__(self, engine: Engine) -> None:
        self.conn: Connection = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        self.tx, _ = pg_write.open_deferring(self.conn)

    def append(self, *events: event_pb2.Event) -> Writer:
        outbox().append_all(self.tx, list(events))
        self.tx.send()  # BEGIN and the rows: their origin_seqs are drawn, the transaction stays open
        return self

    def commit(self, reads: CommitReads | None = None) -> Any:
        """Commits; with `reads`, returns what it asked and the rows its reading returned."""
        asked = None if reads is None else reads.ask(self.tx)
        try:
            if asked is None:
                self.tx.send(commit=True)
                return None
            return asked, self.tx.commit_then(asked.statements)
        finally:
            self.conn.close()


def test_r33_a_watcher_woken_by_a_group_commit_sends_the_write_from_the_commits_reading(
    engine: Engine, readers: list[Reader]
) -> None:
    """Through GroupCommit itself: each write's reading gives the watcher its events (no read of its own),
    with the stream seqs its own read would give, and the numbers stored as they were sent."""
    repo = ModuleStoreRepository(engine)
    try:
        assert repo.commit_reads is not None
        watcher = Watcher(engine, repo.commit_reads)
        readers.append(watcher)
        run, agent = new_run(), "coder-0"
        roster = repo.mutate(None, lambda unit: convert.bind_response(bind(unit, _plan(run, agent))),
                             svc.BindInstanceResponse).roster  # fmt: skip
        store = roster[0].store_id
        watcher.read_itself()  # caught up; the outbox's oids learnt

        def apply(i: int) -> Callable[[Any], svc.WriteResponse]:
            request = svc.WriteRequest(run_id=run, agent_id=agent, store_id=store,
                                       append_messages=svc.AppendMessages(messages=messages(f"m{i}")))
            op = convert.op_from(request)
            return lambda unit: convert.write_response(writing.write(unit, run, agent, store, op))

        async def write_and_wake(i: int) -> OutboxPage | None:
            with watcher.feed.waiting():  # as WatchOutbox waits for the next commit
                await repo.batched.mutate(RequestKey("Write", f"{run}-{i}", "h"), apply(i), svc.WriteResponse,
                                          order=(run, store))  # fmt: skip
            return watcher.woken()

        for i in range(12):
            page = asyncio.run(write_and_wake(i))
            assert page is not None, f"write {i}: the watcher had to read itself"
            assert [e.write.delta.history.messages[0].content for e in page.events] == [f"m{i}"]
        stored = repo.read_outbox(0, 1000, run).events
        assert [e.SerializeToString() for e in watcher.sent] == [e.SerializeToString() for e in stored]
        assert [e.stream_seq for e in stored] == list(range(1, len(stored) + 1))
    finally:
        repo.close()


def test_r33_a_reading_sent_before_the_watchers_own_read_is_not_taken_after_it(
    engine: Engine, readers: list[Reader]
) -> None:
    """A commit's reading that reaches the watcher only after the watcher read for itself (a worker thread
    slow to hand it over) is older than what the watcher knows. Taken, it would tell the outbox frontier that
    the writers the watcher saw open had ended: two open writers, the later one commits first, its row would
    be numbered and sent, and the earlier one's row, committed after, would fall below the position and never
    be sent."""
    reads = CommitReads(outbox().numbering_ahead, engine)  # type: ignore[arg-type]
    watcher = Watcher(engine, reads)
    readers.append(watcher)
    warm(engine, 4)  # the writers below reuse the pool's connections: no new one (see the next test)
    Writer(engine).append(event("a", "first")).commit()
    watcher.read_itself()  # caught up; the outbox's oids learnt
    with watcher.feed.waiting():
        asked, rows = Writer(engine).append(event("a", "second")).commit(reads)  # its reading, not yet handed
    assert [e.write.op for e in watcher.read_itself().events] == ["second"]
    earlier = Writer(engine).append(event("a", "third"))
    later = Writer(engine).append(event("a", "fourth"))
    assert watcher.read_itself().events == []  # its own read: two writers open
    reads.taken(asked, rows)  # handed over late
    later.commit()
    assert watcher.woken() is None  # older than the watcher's own read: not taken
    assert watcher.read_itself().events == []  # the fourth waits behind the third's open writer
    earlier.commit()
    watcher.read_itself()
    assert [e.write.op for e in watcher.sent] == ["first", "second", "third", "fourth"]
    assert [e.stream_seq for e in watcher.sent] == [1, 2, 3, 4]


def test_a_reading_sent_before_the_engine_made_a_connection_is_not_taken(
    engine: Engine, readers: list[Reader]
) -> None:
    """A new connection may be the first after a server crash, which can hand out again numbers the frontier
    counted final (storage/outbox_frontier.py): a reading from before it is not taken; the watcher reads
    itself, and gets the same events."""
    reads = CommitReads(outbox().numbering_ahead, engine)  # type: ignore[arg-type]
    watcher = Watcher(engine, reads)
    readers.append(watcher)
    watcher.read_itself()
    with watcher.feed.waiting():
        asked, rows = Writer(engine).append(event("a", "one")).commit(reads)
    reads.taken(asked, rows)
    with engine.connect() as first, engine.connect() as second:  # the pool makes a new one
        first.execute(text("SELECT 1"))
        second.execute(text("SELECT 1"))
    assert watcher.woken() is None
    assert [e.write.op for e in watcher.read_itself().events] == ["one"]
    with watcher.feed.waiting():
        asked, rows = Writer(engine).append(event("a", "two")).commit(reads)
    reads.taken(asked, rows)
    page = watcher.woken()
    assert page is not None and [(e.write.op, e.stream_seq) for e in page.events] == [("two", 2)]


def test_nothing_is_read_for_watchers_when_none_waits_caught_up(
    engine: Engine, readers: list[Reader]
) -> None:
    """A write pays for the watchers' read only when one waits for it."""
    reads = CommitReads(outbox().numbering_ahead, engine)  # type: ignore[arg-type]
    watcher = Watcher(engine, reads)
    readers.append(watcher)
    watcher.read_itself()
    assert Writer(engine).append(event("a")).commit(reads) is None
    with watcher.feed.waiting():
        assert Writer(engine).append(event("a")).commit(reads) is not None


def test_a_failing_statement_after_the_commit_fails_only_itself(engine: Engine) -> None:
    """`then` runs after COMMIT's Sync: its error is its own (None), the transaction stays committed, and the
    connection serves the next transaction."""
    writer = Writer(engine).append(event("a", "kept"))
    assert writer.tx.commit_then([("SELECT 1 / (SELECT count(*) - count(*) FROM ms_outbox)", None)]) is None
    writer = Writer(engine)
    writer.conn.close()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM ms_outbox")).scalar() == 1
    raw = engine.raw_connection()
    try:
        rows, then = pg_pipeline.send_then(raw, [("BEGIN", None)], [("SELECT 2", None)],
                                           [("SELECT 1 / 0", None)], commit=True)  # fmt: skip
        assert rows[0].fetchall() == [(2,)] and then is None
        rows, then = pg_pipeline.send_then(raw, [], [("SELECT 3", None)], [("SELECT 4", None)])
        assert rows[0].fetchall() == [(3,)] and then is not None and then[0].fetchall() == [(4,)]
    finally:
        raw.close()


def sized(n: int, size: int) -> event_pb2.Event:
    """An event named `big-<n>` of about `size` bytes."""
    ev = event("a", f"big-{n}")
    ev.write.delta.history.messages.add(role="user", content="x" * size)
    return ev


def test_r33_a_commits_reading_carries_at_most_a_pages_bytes_and_the_watcher_still_sends_every_row(
    engine: Engine, readers: list[Reader]
) -> None:
    """Four rows of 600 KB committed at once: the reading that comes back with the COMMIT carries the rows
    while what precedes each fits a page (1 MiB), then the first row past it without its payload; not all
    2.4 MB (a write's answer would wait for every payload after its COMMIT). The watcher sends all four, in
    order, numbered 1 to 4."""
    reads = CommitReads(outbox().numbering_ahead, engine)  # type: ignore[arg-type]
    watcher = Watcher(engine, reads)
    readers.append(watcher)
    watcher.read_itself()
    with watcher.feed.waiting():
        asked, rows = Writer(engine).append(*(sized(n, 600_000) for n in range(4))).commit(reads)
    reads.taken(asked, rows)
    reading = reads.since(0)
    assert reading is not None
    assert [payload is not None for *_, payload, _ in reading.found] == [True, True, False]
    page = watcher.woken()
    assert page is not None and [e.write.op for e in page.events] == ["big-0"] and page.more
    for _ in range(4):
        watcher.read_itself()
    assert [(e.write.op, e.stream_seq) for e in watcher.sent] == [(f"big-{n}", n + 1) for n in range(4)]


def test_r33_one_row_larger_than_a_page_then_more_rows_says_there_is_more(
    engine: Engine, readers: list[Reader]
) -> None:
    """The first row alone passes the byte bound: the rows after it are left out of the read, and the page
    must say more follow, or the watcher would wait for the next commit (or its heartbeat) to send them."""
    reads = CommitReads(outbox().numbering_ahead, engine)  # type: ignore[arg-type]
    watcher = Watcher(engine, reads)
    readers.append(watcher)
    watcher.read_itself()
    Writer(engine).append(sized(0, 1_500_000), sized(1, 10), sized(2, 10)).commit()
    page = watcher.read_itself()
    assert [e.write.op for e in page.events] == ["big-0"] and page.more
    watcher.read_itself()
    assert [(e.write.op, e.stream_seq) for e in watcher.sent] == [(f"big-{n}", n + 1) for n in range(3)]
