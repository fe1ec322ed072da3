"""ModuleStore's WatchOutbox read on SQLite (runtime/outbox_service.py): it runs after every commit, on the
event loop, between a write and its event's way to Telemetry (issue 9's write-to-subscriber latency). On the
pinned connection it numbers and reads the new rows, and checks what was pruned, with prepared statements
in a transaction begun on the DBAPI connection: no SQLAlchemy Core execution and no SQLAlchemy transaction,
whose bookkeeping cost more than SQLite's own work. The events it serves are those of any other read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from ggmodules.common.v1 import event_pb2
from ggmodules.core.errors import OutOfRange
from ggmodules.storage.engine import make_engine
from ggmodules.storage.modulestore.repository import ModuleStoreRepository
from ggmodules.storage.outbox import OutboxFeed, OutboxPage


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[ModuleStoreRepository]:
    repository = ModuleStoreRepository(make_engine(f"sqlite:///{tmp_path / 'ms.db'}"), pinned=True)
    yield repository
    repository.close()


def write(repo: ModuleStoreRepository, *agents: str) -> None:
    with repo.transactions.begin_tx() as tx:
        repo.outbox.append_all(tx, [event_pb2.Event(run_id="run-w", agent_id=a) for a in agents])
    repo.committed.notify()


def watch_read(repo: ModuleStoreRepository, after: int) -> OutboxPage:
    """What WatchOutbox reads after a commit (OutboxServicer._read on SQLite), in its transaction."""
    feed = OutboxFeed(repo.outbox)
    return repo.read(lambda conn: repo.positions.check(conn, after, feed.read(conn, after, 500)))


class Counted:
    """SQLAlchemy Core executions and transactions begun on an engine."""

    def __init__(self, repo: ModuleStoreRepository) -> None:
        self.executions = 0
        self.begins = 0
        event.listen(repo.transactions.engine, "before_execute", self._executed)
        event.listen(repo.transactions.engine, "begin", self._begun)

    def _executed(self, *_: Any) -> None:
        self.executions += 1

    def _begun(self, *_: Any) -> None:
        self.begins += 1


def test_the_watch_read_numbers_and_serves_new_events_without_sqlalchemy_execution(
    repo: ModuleStoreRepository,
) -> None:
    write(repo, "a-0", "a-1")
    first = watch_read(repo, 0)
    counted = Counted(repo)
    write(repo, "a-0")
    write(repo, "a-1", "a-0")
    page = watch_read(repo, first.events[-1].origin_seq)
    assert [(e.agent_id, e.stream_seq) for e in page.events] == [("a-0", 2), ("a-1", 2), ("a-0", 3)]
    assert page.head == page.events[-1].origin_seq and not page.more
    assert [e.origin_seq for e in page.events] == [3, 4, 5]
    # Nothing new: an empty page that says where the outbox stands.
    idle = watch_read(repo, page.events[-1].origin_seq)
    assert idle.events == [] and idle.head == 5
    assert (counted.executions, counted.begins) == (0, 0)
    # The numbers were kept: a read from the start serves the same events.
    again = watch_read(repo, 0)
    assert [(e.agent_id, e.stream_seq) for e in again.events][2:] == [("a-0", 2), ("a-1", 2), ("a-0", 3)]


def test_a_refused_watch_read_rolls_back_and_the_connection_serves_the_next(
    repo: ModuleStoreRepository,
) -> None:
    write(repo, "a-0", "a-0", "a-0")
    assert len(watch_read(repo, 0).events) == 3
    with repo.transactions.begin() as conn:  # a follower took in 2 events; they are pruned
        repo.positions.ack(conn, "telemetry", 2)
        assert repo.positions.prune_step(conn, 0, 100) == 2
    with pytest.raises(OutOfRange):
        watch_read(repo, 0)
    assert not repo.transactions.pinned_dbapi.in_transaction  # rolled back
    write(repo, "a-0")
    assert [e.stream_seq for e in watch_read(repo, 3).events] == [4]


def test_a_caught_up_watch_read_reads_the_new_rows_once(repo: ModuleStoreRepository) -> None:
    """The rows it numbers are its page: they are not selected again to be served."""
    write(repo, "a-0")
    first = watch_read(repo, 0)
    write(repo, "a-0", "a-1")
    statements: list[str] = []
    repo.transactions.pinned_dbapi.set_trace_callback(statements.append)
    try:
        page = watch_read(repo, first.events[-1].origin_seq)
    finally:
        repo.transactions.pinned_dbapi.set_trace_callback(None)
    assert [(e.agent_id, e.stream_seq) for e in page.events] == [("a-0", 2), ("a-1", 1)]
    payloads_read = [s for s in statements if s.lstrip().upper().startswith("SELECT") and "payload" in s]
    assert len(payloads_read) == 1, statements
