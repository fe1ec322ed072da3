"""Telemetry's log bounded by bytes and by age as well as by count (issue 14): the oldest events go first,
the newest stay, and a subscriber positioned before what was pruned is refused OUT_OF_RANGE (R33)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from sqlalchemy import func, select

from ggmodules.core.telemetry.streams import Retention
from ggmodules.storage.telemetry import meta
from ggmodules.storage.telemetry.repository import PRUNED_THROUGH
from ggmodules.storage.telemetry.tables import TelEventRow
from tests.harness import InProcessTelemetry, StreamEnded, Suite, error_metadata, is_write_of, status_of
from tests.harness.registry import create_run, full_profile, open_instance, store_ids

MAX_BYTES = 20_000
EVENTS = TelEventRow.__table__  # type: ignore[attr-defined]


@pytest.fixture()
def by_bytes(backend: str, tmp_path: Path) -> Iterator[Suite]:
    retention = Retention(1_000_000, max_bytes=MAX_BYTES)
    with Suite(backend, tmp_path, transfer=False, telemetry=True, retention=retention) as s:
        yield s


@pytest.fixture()
def by_age(backend: str, tmp_path: Path) -> Iterator[Suite]:
    retention = Retention(1_000_000, max_age_seconds=1)
    with Suite(backend, tmp_path, transfer=False, telemetry=True, retention=retention) as s:
        yield s


def read_until(suite: Suite, run: str, agent_id: str, text: str) -> list[tuple[int, object]]:
    """The agent's stream from the oldest event still retained up to the write of `text`. Pruning goes on
    while the stream is read, so a read from the old oldest cursor may be refused OUT_OF_RANGE (R33) with
    the new oldest: resume there, as a consumer that accepts the gap would."""
    after = 0
    for _ in range(20):
        try:
            return list(suite.subscribe(run, agent_id=agent_id, after=after).until(is_write_of(text)))
        except StreamEnded as ended:
            assert ended.error is not None and status_of(ended.error)[1] == "CURSOR_EXPIRED", ended
            after = int(error_metadata(ended.error)["oldest_cursor"]) - 1
    raise AssertionError(f"the stream never reached {text!r}: pruned past every resume")


def stored(suite: Suite) -> tuple[int, int, int]:
    """(events held, their payload bytes, pruned_through) as Telemetry's database has them."""
    assert isinstance(suite.telemetry, InProcessTelemetry)
    with suite.telemetry.repository.engine.connect() as conn:
        count, size = conn.execute(select(func.count(), func.sum(func.length(EVENTS.c.payload)))).one()
        return int(count), int(size or 0), meta.value(conn, PRUNED_THROUGH)


def test_the_log_keeps_within_its_byte_bound_newest_first(by_bytes: Suite) -> None:
    run = create_run(by_bytes.reg, full_profile("coder")).run_id
    coder = open_instance(by_bytes.reg, run, "coder")
    history = store_ids(coder)["history"]
    for n in range(100):  # about 100 KB of events against a 20 KB bound
        by_bytes.say(run, coder.agent_id, history, f"{n:03d} " + "x" * 1000)
    by_bytes.say(run, coder.agent_id, history, "end")
    read_until(by_bytes, run, coder.agent_id, "end")

    count, size, pruned = stored(by_bytes)
    assert pruned > 0
    assert size <= MAX_BYTES + MAX_BYTES // 100 + 2000  # the bound, its slack, one event past it
    assert count < 100
    refused = by_bytes.subscribe(run, after=1).error()
    assert status_of(refused) == (grpc.StatusCode.OUT_OF_RANGE, "CURSOR_EXPIRED")


def test_events_older_than_the_age_bound_are_pruned_as_new_ones_arrive(by_age: Suite) -> None:
    run = create_run(by_age.reg, full_profile("coder")).run_id
    coder = open_instance(by_age.reg, run, "coder")
    history = store_ids(coder)["history"]
    by_age.say(run, coder.agent_id, history, "old")
    sub = by_age.subscribe(run, agent_id=coder.agent_id)
    old = sub.until(is_write_of("old"))[-1][0]
    sub.close()
    before, _, _ = stored(by_age)

    # Writes keep arriving; once "old" is more than a second old, one of them prunes it. (Waiting for the
    # first pruning of anything would race the events stored before "old" in an earlier second.)
    end, n = time.monotonic() + 30, 0
    while stored(by_age)[2] < old:
        assert time.monotonic() < end, "nothing pruned by age within 30 s"
        n += 1
        by_age.say(run, coder.agent_id, history, f"tick {n}")
        read_until(by_age, run, coder.agent_id, f"tick {n}")
        time.sleep(0.2)

    got = by_age.subscribe(run, agent_id=coder.agent_id).until(is_write_of(f"tick {n}"))
    texts = [m.content for _, ev in got for m in ev.write.delta.history.messages]
    assert "old" not in texts and f"tick {n}" in texts
    assert stored(by_age)[0] < before + n
