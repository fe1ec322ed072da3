"""Telemetry's older events packed into compressed blocks (storage/telemetry/event_blocks.py; issue 14, stored
bytes): a log whose events were packed reads, prunes and counts exactly as the same log left in rows, and
holds LLM-history-like text in well under half its size."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from ggmodules.common.v1 import common_pb2, event_pb2
from ggmodules.core.telemetry.streams import Retention, StreamFilter
from ggmodules.storage.engine import make_engine
from ggmodules.storage.telemetry import TelemetryRepository, event_blocks
from ggmodules.storage.telemetry.eventlog import SqlEventLog
from ggmodules.storage.telemetry.recent import RecentEvents
from ggmodules.storage.telemetry.tables import TelEventBlockRow, TelEventRow
from tests.bench.archive_search import Corpus
from tests.harness import BACKENDS, drop_database, new_database_url
from tests.harness.backends import needs_postgres

BLOCKS = TelEventBlockRow.__table__  # type: ignore[attr-defined]
ROWS = TelEventRow.__table__  # type: ignore[attr-defined]
RUNS = ("run-a", "run-b")
AGENTS = ("coder", "critic", "planner")


@pytest.fixture(params=BACKENDS)
def open_repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    repos: list[TelemetryRepository] = []

    def make(retention: Retention) -> TelemetryRepository:
        url = new_database_url(str(request.param), "blocks", tmp_path)
        repos.append(TelemetryRepository(make_engine(url), retention))
        return repos[-1]

    yield make
    for repo in repos:
        url = repo.engine.url.render_as_string(hide_password=False)
        repo.close()
        drop_database(url)


def modulestore_event(
    rng: random.Random, seq: int, kind: common_pb2.Kind.ValueType, store_id: str
) -> event_pb2.Event:
    """ModuleStore's event number `seq` of a store, on one of the two runs and one of the three agents."""
    return event_pb2.Event(
        origin="modulestore", origin_seq=seq, run_id=rng.choice(RUNS), agent_id=rng.choice(AGENTS),
        stream_seq=seq, kind=kind, store_id=store_id,
    )  # fmt: skip


def history_events(n: int, seed: int = 14) -> list[event_pb2.Event]:
    """`n` ModuleStore history appends of 200 bytes of Zipf-vocabulary text, over two runs, three agents."""
    corpus, rng = Corpus(seed), random.Random(seed)
    out = []
    for seq in range(1, n + 1):
        ev = modulestore_event(rng, seq, common_pb2.KIND_HISTORY, "history-0")
        ev.time.seconds, ev.time.nanos = 1_796_000_000 + seq, rng.randrange(10**9)
        message = ev.write.delta.history.messages.add(seq=seq, role="user")
        message.content = corpus.text(60)[:200]
        ev.write.op = "append_messages"
        out.append(ev)
    return out


def batches(events: list[event_pb2.Event], seed: int = 3) -> Iterator[list[event_pb2.Event]]:
    """`events` in batches of 1 to 20, as a relay hands them over."""
    rng, i = random.Random(seed), 0
    while i < len(events):
        k = rng.randint(1, 20)
        yield events[i : i + k]
        i += k


def everything(repo: TelemetryRepository) -> dict[tuple[str, str, int, int], list[tuple[int, bytes, int]]]:
    """Every read a subscriber could make, by (run, agent, after, limit): (cursor, event, size) of each."""
    head, _ = repo.head()
    out = {}
    for run_id, agent_id in (("", ""), ("run-a", ""), ("run-b", "critic")):
        for after in (0, 1, 63, 64, 65, 130, head - 5):
            for limit in (1, 7, 500):
                got = repo.read(StreamFilter(run_id=run_id, agent_id=agent_id), after, limit)
                key = (run_id, agent_id, after, limit)
                out[key] = [(s.cursor, s.event.SerializeToString(), s.size) for s in got.events]
                out[key].append((got.head, b"full" if got.full else b"", got.pruned_through))
    return out


def packed(repo: TelemetryRepository) -> tuple[int, int]:
    """(events in blocks, rows left) in the repository's database."""
    with repo.engine.connect() as conn:
        blocks = int(conn.execute(select(func.coalesce(func.sum(BLOCKS.c.events), 0))).scalar_one())
        rows = int(conn.execute(select(func.count()).select_from(ROWS)).scalar_one())
    return blocks, rows


def test_a_packed_log_reads_exactly_as_the_same_log_in_rows(open_repo: object) -> None:
    make = open_repo
    assert callable(make)
    in_rows, in_blocks = make(Retention(1_000_000)), make(Retention(1_000_000))
    events = history_events(300)
    for batch in batches(events):
        in_rows.ingest("modulestore", batch)
        in_blocks.ingest("modulestore", batch)
    assert in_blocks.pack() == 256
    assert packed(in_blocks) == (256, 44)
    assert packed(in_rows) == (0, 300)

    assert everything(in_blocks) == everything(in_rows)
    assert in_blocks.head() == in_rows.head()
    assert in_blocks._count() == in_rows._count()
    # A restarted Telemetry (nothing in memory) reads and counts the same, and goes on from the same cursor.
    url = in_blocks.engine.url.render_as_string(hide_password=False)
    in_blocks.close()
    restarted = TelemetryRepository(make_engine(url), Retention(1_000_000))
    try:
        assert everything(restarted) == everything(in_rows)
        assert restarted._count() == in_rows._count()
        more = history_events(301)[300:]
        assert restarted.ingest("modulestore", more) == in_rows.ingest("modulestore", more) == 1
        assert restarted.head() == in_rows.head() == (301, 0)
    finally:
        restarted.close()


def snapshot_events(n: int, seed: int = 29) -> list[event_pb2.Event]:
    """`n` snapshots of a memories store of 40 files that many agents hold, as a crowd's writes send them:
    each holder's event carries the store's contents, about 5 kB."""
    corpus, rng = Corpus(seed), random.Random(seed)
    files = [(f"note-{i}", corpus.text(20)) for i in range(40)]
    out = []
    for seq in range(1, n + 1):
        ev = modulestore_event(rng, seq, common_pb2.KIND_MEMORIES, "memories-0")
        files[seq % len(files)] = (files[seq % len(files)][0], corpus.text(20))  # the write
        for name, body in files:
            ev.snapshot.contents.memories.entries.add(name=name, body=body, index_line=name)
        ev.snapshot.written_by = rng.choice(AGENTS)
        out.append(ev)
    return out


def test_large_events_pack_with_zlib_and_blocks_bzip2_packed_before_still_read(open_repo: object) -> None:
    """Blocks of large events (over BZIP2_UP_TO) are compressed with zlib: bzip2 took 30 times as long on
    them and held two fifths of a Telemetry replica's CPU under a crowd on shared stores. They, and a block
    of small events packed with bzip2 (as every block was before), read exactly as the same log in rows."""
    make = open_repo
    assert callable(make)
    in_rows, in_blocks = make(Retention(1_000_000)), make(Retention(1_000_000))
    events = snapshot_events(80) + history_events(300)[80:]
    for batch in batches(events):
        in_rows.ingest("modulestore", batch)
        in_blocks.ingest("modulestore", batch)
    assert in_blocks.pack() == 256
    with in_blocks.engine.connect() as conn:
        blocks = conn.execute(select(BLOCKS.c.payload).order_by(BLOCKS.c.first_cursor))
        kinds = [bytes(p[:3]) for (p,) in blocks]
    assert kinds[0][:1] == b"\x78" and kinds[2] == event_blocks.BZIP2  # large: zlib; history text: bzip2
    assert everything(in_blocks) == everything(in_rows)


@needs_postgres
def test_postgresql_reuses_the_space_of_packed_rows_over_a_burst(tmp_path: Path) -> None:
    """On PostgreSQL the rows packed away are vacuumed every 1,024 (storage/vacuum.py), so tel_events stays
    the size of about that many rows however many events went through it. Before, over a burst it kept the
    space of every row it had taken in until autovacuum came (at most once a minute): 3,000 events of about
    280 bytes left it at 1.06 MB, more than their payloads; now 0.37 MB."""
    url = new_database_url("postgres", "blocks", tmp_path)
    repo = TelemetryRepository(make_engine(url), Retention(1_000_000))
    events = history_events(3000)
    try:
        for batch in batches(events):
            repo.ingest("modulestore", batch)
            if repo.pack_due():  # as the log does after its writes (storage/telemetry/eventlog.py)
                repo.pack()
        with repo.engine.connect() as conn:
            size = int(conn.execute(select(func.pg_relation_size("tel_events"))).scalar_one())
            assert packed(repo)[0] == 2944
    finally:
        repo.close()
        drop_database(url)
    payloads = sum(len(ev.SerializeToString()) for ev in events)
    assert size < 0.6 * payloads, f"tel_events takes {size:,} bytes for {payloads:,} bytes of events"


@pytest.mark.parametrize(
    "retention",
    [Retention(100), Retention(1_000_000, max_bytes=40_000)],
    ids=["by-count", "by-bytes"],
)
def test_retention_prunes_packed_events_as_it_prunes_rows(open_repo: object, retention: Retention) -> None:
    make = open_repo
    assert callable(make)
    in_rows, in_blocks = make(retention), make(retention)
    for batch in batches(history_events(600)):
        in_rows.ingest("modulestore", batch)
        in_blocks.ingest("modulestore", batch)
        in_blocks.pack()  # as often as it may: blocks straddle every pruning point
        assert in_blocks.head() == in_rows.head()  # the same pruned_through at every step
        assert in_blocks._count() == in_rows._count()
    blocks, _ = packed(in_blocks)
    assert blocks > 0
    assert in_blocks._stored == in_rows._stored and in_blocks._stored_bytes == in_rows._stored_bytes
    assert everything(in_blocks) == everything(in_rows)


def test_packing_holds_history_text_in_less_than_half_its_size(open_repo: object) -> None:
    make = open_repo
    assert callable(make)
    repo = make(Retention(1_000_000))
    events = history_events(640)
    for batch in batches(events):
        repo.ingest("modulestore", batch)
    repo.pack()
    with repo.engine.connect() as conn:
        stored = int(conn.execute(select(func.sum(func.length(BLOCKS.c.payload)))).scalar_one())
    text = sum(len(ev.SerializeToString()) for ev in events[:640])
    assert stored < 0.45 * text


def test_packing_gives_way_to_pruning_that_came_first(open_repo: object) -> None:
    """Rows read for packing and pruned before the block is stored: nothing is packed, nothing changes."""
    make = open_repo
    assert callable(make)
    repo = make(Retention(1_000_000))
    for batch in batches(history_events(100)):
        repo.ingest("modulestore", batch)
    with repo.engine.connect() as conn:
        rows = event_blocks.oldest_rows(conn, event_blocks.BLOCK)
    data = event_blocks.encode(rows)
    with repo.engine.begin() as conn:  # the ten oldest pruned meanwhile
        conn.execute(ROWS.delete().where(ROWS.c.cursor <= rows[9].cursor))
    with pytest.raises(event_blocks.Moved), repo.engine.begin() as conn:
        event_blocks.store_block(conn, rows, data)
    assert packed(repo) == (0, 90)
    assert repo.pack() == 64  # the next packing takes the oldest that are left
    assert packed(repo) == (64, 26)


def test_the_sql_event_log_packs_after_its_writes_and_a_subscriber_from_the_start_gets_every_event(
    open_repo: object,
) -> None:
    make = open_repo
    assert callable(make)
    repo = make(Retention(1_000_000))
    events = history_events(150)

    async def write_then_subscribe() -> list[int]:
        log = SqlEventLog(repo)
        await log.start()
        for batch in batches(events):
            await log.append("modulestore", batch)
        await log.close()  # waits for the packing the writes set off
        # A fresh log over the same repository: nothing of what was written is in its memory.
        repo.recent = RecentEvents(*repo.head(), capacity=10_000, max_bytes=1)
        log = SqlEventLog(repo)
        await log.start()
        got: list[int] = []
        try:
            async for item in log.subscribe(StreamFilter(run_id="run-a"), 0, idle=600):
                assert isinstance(item, list)
                got += [s.cursor for s in item]
                if got and got[-1] == max(i + 1 for i, ev in enumerate(events) if ev.run_id == "run-a"):
                    return got
        finally:
            await log.close()
        return got

    got = asyncio.run(asyncio.wait_for(write_then_subscribe(), 60))
    assert packed(repo)[0] >= 128
    assert got == [i + 1 for i, ev in enumerate(events) if ev.run_id == "run-a"]


def test_events_written_while_a_packing_reads_still_set_off_the_next_packing(
    open_repo: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Packing runs on a worker thread while writes go on. A full block's worth of rows written around a
    packing that found too few must still count as due: before, the packing set its count to the rows it had
    read, dropping what writes added meanwhile, and those rows waited in tel_events for later writes (a
    Telemetry that then went quiet kept them uncompressed)."""
    make = open_repo
    assert callable(make)
    repo = make(Retention(1_000_000))
    events = history_events(event_blocks.BLOCK + 9)
    repo.ingest("modulestore", events[: event_blocks.BLOCK - 1])
    read = event_blocks.oldest_rows

    def read_then_a_write_lands(conn: object, limit: int) -> list[event_blocks.PackedEvent]:
        rows = read(conn, limit)  # type: ignore[arg-type]
        repo.ingest("modulestore", events[event_blocks.BLOCK - 1 :])  # a write while the packing works
        return rows

    monkeypatch.setattr(event_blocks, "oldest_rows", read_then_a_write_lands)
    assert repo.pack(4) == 0  # it read BLOCK - 1 rows: too few
    monkeypatch.setattr(event_blocks, "oldest_rows", read)
    assert repo.pack_due()  # BLOCK + 9 rows wait
    assert repo.pack(4) == event_blocks.BLOCK


def test_a_backlog_one_write_brings_is_packed_whole_before_any_later_write(open_repo: object) -> None:
    """One append can bring many blocks' worth of events (a write to a store many agents hold: a snapshot
    for each holder). Before, it set off one packing of PACK_STEP blocks and the rest waited in rows for
    later writes, uncompressed for as long as Telemetry stayed quiet; now the packing goes on until fewer
    than BLOCK rows are left."""
    make = open_repo
    assert callable(make)
    repo = make(Retention(1_000_000))
    events = history_events(event_blocks.BLOCK * 20 + 5)

    async def one_write() -> None:
        log = SqlEventLog(repo)
        await log.start()
        try:
            await log.append("modulestore", events)
            await log.packed()
        finally:
            await log.close()

    asyncio.run(asyncio.wait_for(one_write(), 60))
    assert packed(repo) == (event_blocks.BLOCK * 20, 5)
    assert everything(repo)  # and it reads back
