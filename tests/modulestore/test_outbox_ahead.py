"""A caught-up WatchOutbox on SQLite reads its page numbered in memory and stores the numbers after sending
it (storage/outbox_sequencing.py `ahead`/`keep`, issue 9's write→subscriber latency). The numbers must be
exactly those the transactional numbering gives, whoever numbers the rows first, before or after a kill -9
between the send and `keep` (R33: a stream is the same from any reader, resumed or not), and pruning must
never remove a row whose numbers are not stored yet (issue 14)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from ggmodules.common.v1 import event_pb2
from ggmodules.storage import outbox_sequencing
from ggmodules.storage.engine import make_engine
from ggmodules.storage.fan_out import FanOutEntry
from ggmodules.storage.modulestore.repository import ModuleStoreRepository
from ggmodules.storage.outbox import OutboxFeed, OutboxPage
from ggmodules.storage.outbox_ahead import Ahead


@pytest.fixture
def twins(tmp_path: Path) -> Iterator[tuple[ModuleStoreRepository, ModuleStoreRepository]]:
    """Two ModuleStore SQLite repositories (pinned, as the service runs them), written alike."""
    repos = [ModuleStoreRepository(make_engine(f"sqlite:///{tmp_path}/m{i}"), pinned=True) for i in (0, 1)]
    yield repos[0], repos[1]
    for repo in repos:
        repo.close()


def write(repo: ModuleStoreRepository, agents: list[str], holders: list[str] | None = None) -> None:
    """One transaction appending an event per agent (and a fan-out record when `holders`), at a fixed time
    so twins store the same bytes."""
    events: list[event_pb2.Event | FanOutEntry] = []
    for agent in agents:
        ev = event_pb2.Event(run_id="run-a", agent_id=agent, store_id="history-0")
        ev.write.op = "append"
        ev.time.seconds = 7
        events.append(ev)
    if holders:
        ev = event_pb2.Event(run_id="run-a", agent_id=agents[0], store_id="board-0")
        ev.write.op = "create_issue"
        ev.time.seconds = 7
        snapshot = event_pb2.Event(run_id="run-a", store_id="board-0")
        events.append(FanOutEntry(ev, [snapshot], agent_ids=holders))
    with repo.transactions.begin_tx() as tx:
        repo.outbox.append_all(tx, events)


def read(repo: ModuleStoreRepository, after: int) -> OutboxPage:
    """The transactional read a watcher that is not caught up makes (numbering first)."""
    feed = OutboxFeed(repo.outbox)
    return repo.read(lambda conn: repo.positions.check(conn, after, feed.read(conn, after, 500)))


def ahead(repo: ModuleStoreRepository, after: int) -> tuple[OutboxPage, Ahead]:
    got = repo.read_ahead(after, 500)
    assert got is not None
    return got


def stored(repo: ModuleStoreRepository) -> tuple[list[tuple[object, ...]], ...]:
    q = (
        "SELECT origin_seq, stream_seq, payload FROM ms_outbox ORDER BY 1",
        "SELECT * FROM ms_stream_heads ORDER BY 1, 2",
        "SELECT * FROM ms_outbox_positions ORDER BY 1",
    )
    return tuple(repo.read(lambda conn, s=s: [tuple(r) for r in conn.execute(text(s))]) for s in q)


def wire(page: OutboxPage) -> list[bytes]:
    return [ev.SerializeToString() for ev in page.events]


def test_a_page_numbered_ahead_is_the_page_and_the_numbers_the_transactional_read_gives(
    twins: tuple[ModuleStoreRepository, ModuleStoreRepository],
) -> None:
    fast, slow = twins
    rng = random.Random(9)
    after = [0, 0]
    for _ in range(60):
        agents = [rng.choice("abcd") for _ in range(rng.randint(1, 3))]
        for repo in twins:
            write(repo, agents)
        page, numbered = ahead(fast, after[0])
        expected = read(slow, after[1])
        assert wire(page) == wire(expected) and page.head == expected.head and not page.more
        fast.keep(numbered)
        after = [page.events[-1].origin_seq, expected.events[-1].origin_seq]
    assert stored(fast) == stored(slow)  # rows, stream heads, positions
    page, numbered = ahead(fast, after[0])  # caught up, nothing new: an empty page, nothing to keep
    assert page.events == [] and numbered.params == []


def test_numbers_sent_but_not_kept_before_a_kill_are_given_again_by_the_next_reader(
    twins: tuple[ModuleStoreRepository, ModuleStoreRepository],
) -> None:
    repo, _ = twins
    write(repo, ["a", "b", "a"])
    first, kept = ahead(repo, 0)
    repo.keep(kept)
    write(repo, ["b", "a"])
    sent, _lost = ahead(repo, first.events[-1].origin_seq)  # sent; the process dies before `keep`
    assert [(e.agent_id, e.stream_seq) for e in sent.events] == [("b", 2), ("a", 3)]
    again = read(repo, first.events[-1].origin_seq)  # whoever reads next numbers them in a transaction
    assert wire(again) == wire(sent)


def test_keep_after_another_reader_numbered_the_rows_stores_nothing_and_moves_no_head_twice(
    twins: tuple[ModuleStoreRepository, ModuleStoreRepository],
) -> None:
    repo, _ = twins
    write(repo, ["a", "a"])
    sent, numbered = ahead(repo, 0)
    other = read(repo, 0)  # another watcher (or ReadOutbox) numbers the same rows first
    assert wire(other) == wire(sent)
    before = stored(repo)
    assert repo.outbox.sequencer is not None
    assert not repo.read(lambda conn: repo.outbox.keep(conn, numbered))
    assert stored(repo) == before
    write(repo, ["a"])
    page, _ = ahead(repo, sent.events[-1].origin_seq)
    assert [e.stream_seq for e in page.events] == [3]  # not 5: the head moved once


def test_a_reader_not_at_the_numbering_position_or_a_fan_out_record_is_read_in_a_transaction(
    twins: tuple[ModuleStoreRepository, ModuleStoreRepository],
) -> None:
    repo, _ = twins
    write(repo, ["a", "b"])
    assert repo.read_ahead(1, 500) is None  # behind where numbering stands (0): not caught up
    _, numbered = ahead(repo, 0)
    repo.keep(numbered)
    assert repo.read_ahead(0, 500) is None  # behind it now
    write(repo, ["a"], holders=["b", "c"])
    assert repo.read_ahead(2, 500) is None  # a fan-out record: its holders' heads are not read ahead
    page = read(repo, 2)
    assert [(e.agent_id, e.stream_seq) for e in page.events] == [("a", 2), ("a", 3), ("b", 2), ("c", 1)]


def test_pruning_never_removes_rows_whose_stream_seqs_are_not_stored(
    twins: tuple[ModuleStoreRepository, ModuleStoreRepository],
) -> None:
    """A follower may take events in (and acknowledge them) before their numbers are kept; the rows stay
    until they are, so the numbering after a restart still sees every row and every stream stays 1, 2, 3."""
    repo, _ = twins
    for _ in range(4):
        write(repo, ["a"])
    sent, _lost = ahead(repo, 0)  # sent, acknowledged, then killed before `keep`
    repo.read(lambda conn: repo.positions.ack(conn, "telemetry", sent.events[-1].origin_seq))
    assert repo.read(lambda conn: repo.positions.prune_step(conn, 0, 100)) == 0
    write(repo, ["a"])
    page = read(repo, 4)
    assert [(e.origin_seq, e.stream_seq) for e in page.events] == [(5, 5)]


def test_a_caught_up_read_of_large_events_numbers_a_few_megabytes_of_them(
    twins: tuple[ModuleStoreRepository, ModuleStoreRepository],
) -> None:
    """Ten 1 MiB events after the position: the read ahead fetches and numbers the payloads while MAX_BYTES of
    them come before (it had fetched and numbered all ten, 10 MiB, on the event loop), says more, and the
    reads after it number the rest, 1-10 in order."""
    repo, _ = twins
    for i in range(10):
        ev = event_pb2.Event(run_id="run-a", agent_id="a", store_id="history-0")
        ev.write.op = f"{i}".ljust(1024 * 1024, "x")
        with repo.transactions.begin_tx() as tx:
            repo.outbox.append_all(tx, [ev])
    page, numbered = ahead(repo, 0)
    assert 1 <= len(numbered.params) <= outbox_sequencing.MAX_BYTES // (1024 * 1024) + 1 and page.more
    repo.keep(numbered)
    sent = [(e.origin_seq, e.stream_seq, e.write.op[:1]) for e in page.events]
    while len(sent) < 10:  # as WatchOutbox goes on: read ahead where it applies, else in a transaction
        after = sent[-1][0]
        got = repo.read_ahead(after, 500)
        if got is not None:
            repo.keep(got[1])
        page = read(repo, after) if got is None else got[0]
        sent += [(e.origin_seq, e.stream_seq, e.write.op[:1]) for e in page.events]
    assert sent == [(i + 1, i + 1, str(i)) for i in range(10)]
