"""Bounded growth on PostgreSQL (issue 14, storage/vacuum.py): the space of the outbox events ModuleStore
prunes, and of the old versions of what its writes update, is used again by the rows after them, whether or
not the server's autovacuum runs (it is off on this machine's PostgreSQL, as an operator may have it).

Pruning passes are run by the test (the service's own Housekeeper, `prune_once`) after each round of writes,
with an outbox margin of 0. The first test leaves the time-based VACUUM at its minute, so only the rows the
passes delete bring one; the second makes it due at every pass.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import create_engine, func, select

from ggmodules.common.v1 import outbox_service_pb2 as ob
from ggmodules.internal.v1 import outbox_service_pb2_grpc as ob_grpc
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.storage.vacuum import EVERY
from tests.harness import Suite, needs_postgres
from tests.harness.registry import create_run, full_profile, open_instance, store_ids

ROUNDS, WRITES = 12, 300  # 3,600 events through an outbox that holds at most 300 at a time


@pytest.fixture()
def pruning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Suite]:
    monkeypatch.setenv("GGMODULES_OUTBOX_PRUNE_MARGIN", "0")
    with Suite("postgres", tmp_path, transfer=False) as s:
        yield s


@pytest.fixture()
def vacuuming(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Suite]:
    monkeypatch.setenv("GGMODULES_VACUUM_INTERVAL_SECONDS", "0.01")
    with Suite("postgres", tmp_path, transfer=False) as s:
        yield s


@needs_postgres
def test_postgresql_uses_the_space_of_pruned_outbox_events_again(pruning: Suite) -> None:
    """Before, every event inserted after a pass went at the table's end: each round of 300 added its
    size again (131 kB) and the 3,600 events left ms_outbox at 1.65 MB. Now each pass that brings the
    events pruned to EVERY (1,024) VACUUMs it, and it stays at about 0.77 MB from the ninth round on."""
    suite = pruning
    run = create_run(suite.reg, full_profile("coder")).run_id
    coder = open_instance(suite.reg, run, "coder")
    history = store_ids(coder)["history"]
    acks = ob_grpc.OutboxServiceStub(suite.channel(suite.modulestore.address))
    housekeeper = suite.modulestore.running.service.extra["housekeeper"]
    engine = create_engine(suite.urls["modulestore"])
    size = select(func.pg_total_relation_size("ms_outbox"))
    sizes, pruned, head = [], 0, 0
    try:
        with ThreadPoolExecutor(4) as pool:
            for r in range(ROUNDS):
                texts = [f"r{r} m{n}" for n in range(WRITES)]
                list(pool.map(lambda text: suite.say(run, coder.agent_id, history, text), texts))
                with engine.connect() as conn:
                    sizes.append(int(conn.execute(size).scalar_one()))
                page = ms.ReadOutboxRequest(after_origin_seq=head, page_size=1000)
                events = suite.ms.ReadOutbox(page).events
                assert len(events) >= WRITES
                head = events[-1].origin_seq
                acks.AckOutbox(ob.AckOutboxRequest(follower="mirror", durable_origin_seq=head))
                pruned += suite.loop.run(housekeeper.prune_once())[0]
    finally:
        engine.dispose()
    assert pruned >= ROUNDS * WRITES - 1  # all but the newest event (storage/outbox_pruning.py)
    assert pruned // EVERY >= 3  # so the passes vacuumed at least three times
    # The table stops growing once the first VACUUM came: its last four rounds (at least one more VACUUM)
    # took less than the first round did (before: one round's worth each, 1.65 MB in all).
    one_round = sizes[0]
    assert sizes[-1] - sizes[-5] < one_round, f"ms_outbox took {sizes} bytes after each round"
    assert sizes[-1] < 8 * one_round, f"ms_outbox took {sizes} bytes after each round"


@needs_postgres
def test_postgresql_uses_the_space_of_a_store_state_written_again_and_again(vacuuming: Suite) -> None:
    """A memories pad of 20 kB (its store's state, kept out of line) written again 200 times. Before, each
    write's old value stayed: ms_stores grew by 0.45 MB a round of 20 writes, to 4.5 MB. Now the passes
    VACUUM ms_stores too, and it stays at 0.57-0.60 MB."""
    suite = vacuuming
    run = create_run(suite.reg, full_profile("coder")).run_id
    coder = open_instance(suite.reg, run, "coder")
    memories = store_ids(coder)["memories"]
    housekeeper = suite.modulestore.running.service.extra["housekeeper"]
    engine = create_engine(suite.urls["modulestore"])
    size = select(func.pg_total_relation_size("ms_stores"))
    rng = random.Random(14)
    sizes = []
    try:
        for _ in range(10):
            for _ in range(20):  # near-incompressible text, so the old versions take their whole size
                pad = "".join(rng.choices(string.ascii_letters + string.digits + " ", k=20_000))
                suite.write(run, coder.agent_id, memories, write_pad=ms.WritePad(text=pad))
            suite.loop.run(housekeeper.prune_once())
            with engine.connect() as conn:
                sizes.append(int(conn.execute(size).scalar_one()))
    finally:
        engine.dispose()
    one_round = 20 * 20_000
    assert sizes[-1] - sizes[3] < one_round, f"ms_stores took {sizes} bytes after each round"
    assert sizes[-1] < 3 * one_round, f"ms_stores took {sizes} bytes after each round"
