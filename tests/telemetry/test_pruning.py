"""Bounded outboxes (issue 14): an origin prunes only what every follower has durably taken in, says so to a
reader positioned below what it pruned, and forgets request ids past the retention window.

Pruning passes are run by the test (the services' own Housekeeper, `prune_once`) instead of waiting for the
background interval; the margin is 0 so each pass prunes everything acknowledged.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import Any

import grpc
import pytest
import structlog
import structlog.testing
from sqlalchemy import func, select

from ggmodules.common.v1 import event_pb2
from ggmodules.common.v1 import outbox_service_pb2 as ob
from ggmodules.core.telemetry.streams import Retention
from ggmodules.internal.v1 import outbox_service_pb2_grpc as ob_grpc
from ggmodules.modulestore.v1 import modulestore_pb2 as ms_pb
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.server.telemetry.ingestion import Follower
from ggmodules.storage.engine import make_engine
from ggmodules.storage.telemetry import TelemetryRepository
from ggmodules.storage.telemetry.eventlog import SqlEventLog
from tests.harness import (
    InProcessService,
    InProcessTelemetry,
    ServiceProcess,
    Suite,
    drop_database,
    eventually,
    is_write_of,
    new_database_url,
    open_aio_channel,
    status_of,
)
from tests.harness.registry import create_run, full_profile, open_instance, store_ids
from tests.telemetry._support.runs import key, read_run, report


@pytest.fixture()
def bare(backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Suite]:
    """ModuleStore and Registry pruning with no margin; the test starts Telemetry as a process."""
    monkeypatch.setenv("GGMODULES_OUTBOX_PRUNE_MARGIN", "0")
    monkeypatch.setenv("GGMODULES_REQUEST_LOG_RETENTION_SECONDS", "1")
    with Suite(backend, tmp_path, transfer=False) as s:
        yield s


def prune(suite: Suite, service: InProcessService | InProcessTelemetry) -> tuple[int, int]:
    result: tuple[int, int] = suite.loop.run(service.running.service.extra["housekeeper"].prune_once())
    return result


def followers(suite: Suite) -> dict[str, int]:
    """ModuleStore's record of its followers, read on its own loop (SQLite: its one pinned connection)."""
    repo = suite.modulestore.running.service.extra["repository"]

    async def read() -> dict[str, int]:
        positions: dict[str, int] = repo.read(repo.positions.followers)
        return positions

    return suite.loop.run(read())


def logged(suite: Suite, request_id: str) -> bool:
    """Whether ModuleStore's request log still holds `request_id` (read on its own loop)."""
    repo = suite.modulestore.running.service.extra["repository"]
    table = repo.request_table
    query = select(func.count()).select_from(table).where(table.c.request_id == request_id)

    async def read() -> bool:
        return bool(repo.read(lambda conn: conn.execute(query).scalar_one()))

    return suite.loop.run(read())


def outbox_stub(suite: Suite, address: str) -> ob_grpc.OutboxServiceStub:
    return ob_grpc.OutboxServiceStub(suite.channel(address))


def written(suite: Suite, count: int) -> tuple[str, list[event_pb2.Event]]:
    """A new run whose coder appended `count` messages to its history: the run, and its outbox events."""
    run = create_run(suite.reg, full_profile("coder")).run_id
    coder = open_instance(suite.reg, run, "coder")
    for n in range(count):
        suite.say(run, coder.agent_id, store_ids(coder)["history"], f"m{n}")
    return run, suite.outbox(run)


def test_acknowledgements_decide_what_is_pruned(bare: Suite) -> None:
    stub = outbox_stub(bare, bare.modulestore.address)
    run, events = written(bare, 5)

    # No follower has acknowledged anything: nothing is pruned.
    assert prune(bare, bare.modulestore)[0] == 0
    assert prune(bare, bare.registry)[0] == 0
    assert [key(e) for e in bare.outbox(run)] == [key(e) for e in events]

    # A position the outbox could not have sent, or no name, is refused and recorded nowhere.
    head = events[-1].origin_seq
    with pytest.raises(grpc.RpcError) as beyond:
        stub.AckOutbox(ob.AckOutboxRequest(follower="mirror", durable_origin_seq=head + 1000))
    assert status_of(beyond.value) == (grpc.StatusCode.FAILED_PRECONDITION, "ACK_BEYOND_HEAD")
    with pytest.raises(grpc.RpcError) as nameless:
        stub.AckOutbox(ob.AckOutboxRequest(follower="", durable_origin_seq=1))
    assert status_of(nameless.value) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
    # R47: a name that is not one printable line (NUL: PostgreSQL answered INTERNAL) is refused on both
    # outboxes, naming the field.
    for address in (bare.modulestore.address, bare.registry.address):
        for unprintable in ("\x00", "tele\nmetry", "tele\u2028metry"):
            with pytest.raises(grpc.RpcError) as garbled:
                ack = ob.AckOutboxRequest(follower=unprintable, durable_origin_seq=1)
                outbox_stub(bare, address).AckOutbox(ack)
            assert status_of(garbled.value) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
            assert "follower" in (garbled.value.details() or "")
    assert followers(bare) == {}

    # A position only rises; the slowest follower holds pruning back.
    stub.AckOutbox(ob.AckOutboxRequest(follower="fast", durable_origin_seq=head))
    stub.AckOutbox(ob.AckOutboxRequest(follower="fast", durable_origin_seq=1))
    stub.AckOutbox(ob.AckOutboxRequest(follower="slow", durable_origin_seq=events[2].origin_seq))
    assert followers(bare) == {"fast": head, "slow": events[2].origin_seq}
    assert prune(bare, bare.modulestore)[0] > 0
    after_slow = bare.ms.ReadOutbox(ms.ReadOutboxRequest(after_origin_seq=events[2].origin_seq)).events
    assert [key(e) for e in after_slow] == [key(e) for e in events[3:]]



def followers_command(suite: Suite, *args: str) -> subprocess.CompletedProcess[str]:
    """`ggmodules followers modulestore ARGS` on ModuleStore's database, as an operator runs it."""
    command = [sys.executable, "-m", "ggmodules.cli.main", "followers", "modulestore",
               "--database-url", suite.urls["modulestore"], *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_a_follower_stopped_for_good_is_shown_holding_pruning_back_and_can_be_forgotten(bare: Suite) -> None:
    """A follower that acknowledged once and stopped (a retired consumer) held pruning back for good: the
    outbox grew without bound until someone deleted its row by hand. `ggmodules followers` names it, and
    `--forget` lets pruning follow the others; coming back, it is told what it missed was pruned."""
    stub = outbox_stub(bare, bare.modulestore.address)
    _, events = written(bare, 6)
    head, retired_at = events[-1].origin_seq, events[1].origin_seq
    stub.AckOutbox(ob.AckOutboxRequest(follower="telemetry", durable_origin_seq=head))
    stub.AckOutbox(ob.AckOutboxRequest(follower="retired", durable_origin_seq=retired_at))
    prune(bare, bare.modulestore)  # through the retired follower's position only
    after_retired = bare.ms.ReadOutbox(ms.ReadOutboxRequest(after_origin_seq=retired_at)).events
    assert [key(e) for e in after_retired] == [key(e) for e in events[2:]]

    listed = followers_command(bare)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == f"modulestore: newest event {head}, pruned through {retired_at}, 2 follower(s)"
    assert lines[1].split()[:3] == ["retired", "at", str(retired_at)] and "holds pruning back" in lines[1]
    assert lines[2].split()[:3] == ["telemetry", "at", str(head)] and "holds" not in lines[2]

    forgotten = followers_command(bare, "--forget", "retired")
    assert forgotten.returncode == 0, forgotten.stderr
    assert f"follower 'retired' forgotten (it stood at {retired_at})" in forgotten.stdout
    assert followers(bare) == {"telemetry": head}
    assert prune(bare, bare.modulestore)[0] > 0  # pruning now follows Telemetry (the newest event stays)
    with pytest.raises(grpc.RpcError) as missed:
        bare.ms.ReadOutbox(ms.ReadOutboxRequest(after_origin_seq=retired_at))
    assert status_of(missed.value) == (grpc.StatusCode.OUT_OF_RANGE, "OUTBOX_PRUNED")

    unknown = followers_command(bare, "--forget", "nobody")
    assert unknown.returncode == 1 and "no outbox named has a follower 'nobody'" in unknown.stderr
    assert followers(bare) == {"telemetry": head}

def test_kill_9_telemetry_prune_restart_nothing_missing(bare: Suite) -> None:
    bare.start_telemetry_process()
    run = create_run(bare.reg, full_profile("coder")).run_id
    coder = open_instance(bare.reg, run, "coder")
    history = store_ids(coder)["history"]
    for n in range(20):
        bare.say(run, coder.agent_id, history, f"before {n}")
    bare.say(run, coder.agent_id, history, "taken in")
    sub = bare.subscribe(run)
    seen = sub.until(is_write_of("taken in"))
    sub.close()
    taken_in = max(ev.origin_seq for _, ev in seen if ev.origin == "modulestore")
    eventually(lambda: followers(bare).get("telemetry", 0) >= taken_in, "Telemetry acknowledging it")

    first = bare.telemetry
    assert isinstance(first, ServiceProcess)
    first.kill()  # kill -9
    for n in range(20):  # written while Telemetry is gone: not taken in, so never pruned
        bare.say(run, coder.agent_id, history, f"while down {n}")
    bare.say(run, coder.agent_id, history, "end")
    everything = bare.outbox(run)

    pruned, _ = prune(bare, bare.modulestore)
    prune(bare, bare.registry)
    assert pruned >= taken_in - 1  # the acknowledged events are gone from ModuleStore's outbox...
    acked = followers(bare)["telemetry"]
    left = bare.ms.ReadOutbox(ms.ReadOutboxRequest(after_origin_seq=acked, page_size=1000)).events
    assert [key(e) for e in left] == [key(e) for e in everything if e.origin_seq > acked]  # ...the rest stays

    bare.start_telemetry_process()  # same database: resumes where it stood, past nothing it lacks
    got = read_run(bare, run, "end")
    cursors = [c for c, _ in got]
    assert cursors == sorted(set(cursors))
    assert [key(ev) for _, ev in got if ev.origin == "modulestore"] == [key(ev) for ev in everything]
    assert [ev.run.status for _, ev in got if ev.origin == "registry"] == ["created"]

    # Everything is taken in again: pruned to the newest event (margin 0). A reader below is told so.
    head = everything[-1].origin_seq
    eventually(lambda: followers(bare)["telemetry"] >= head, "Telemetry acknowledging what it stored")
    prune(bare, bare.modulestore)
    with pytest.raises(grpc.RpcError) as read:
        bare.ms.ReadOutbox(ms.ReadOutboxRequest(after_origin_seq=0, page_size=10))
    assert status_of(read.value) == (grpc.StatusCode.OUT_OF_RANGE, "OUTBOX_PRUNED")
    assert "after_origin_seq" in str(read.value.details())
    watch = outbox_stub(bare, bare.modulestore.address).WatchOutbox(ob.WatchOutboxRequest(after_origin_seq=0))
    with pytest.raises(grpc.RpcError) as watched:
        next(iter(watch))
    assert status_of(watched.value) == (grpc.StatusCode.OUT_OF_RANGE, "OUTBOX_PRUNED")
    acked = followers(bare)["telemetry"]
    page = bare.ms.ReadOutbox(ms.ReadOutboxRequest(after_origin_seq=acked, page_size=10))
    assert page.head_origin_seq >= head  # the head never goes back

    # Events written after the prune take new numbers, past everything ever handed out, and reach Telemetry.
    bare.say(run, coder.agent_id, history, "after the prune")
    newer = bare.ms.ReadOutbox(ms.ReadOutboxRequest(after_origin_seq=acked, page_size=10)).events
    assert newer and all(e.origin_seq > head for e in newer)
    after = bare.subscribe(run, after=got[-1][0]).until(is_write_of("after the prune"))
    assert key(after[-1][1]) == key(newer[-1])


def test_a_request_id_older_than_the_retention_window_is_answered_as_new(bare: Suite) -> None:
    run = create_run(bare.reg, full_profile("coder")).run_id
    coder = open_instance(bare.reg, run, "coder")
    history = store_ids(coder)["history"]
    message = ms_pb.MessageInput(role="user", content="once")
    request = ms.WriteRequest(
        request_id="late-retry",
        run_id=run,
        agent_id=coder.agent_id,
        store_id=history,
        append_messages=ms.AppendMessages(messages=[message]),
    )
    first = bare.ms.Write(request)
    assert bare.ms.Write(request) == first  # within the window: the first answer, applied once

    def forgotten() -> bool:
        prune(bare, bare.modulestore)
        return not logged(bare, "late-retry")

    eventually(forgotten, "the request id falls out of the 1 s window")

    again = bare.ms.Write(request)
    assert again.last_seq == first.last_seq + 1  # applied as a new request
    store = bare.ms.GetStore(ms.GetStoreRequest(run_id=run, agent_id=coder.agent_id, store_id=history))
    assert [m.content for m in store.contents.history.messages] == ["once", "once"]



def test_telemetry_keeps_only_the_newest_row_of_its_own_outbox_and_numbers_on_after_it(bare: Suite) -> None:
    """Telemetry's own outbox only numbers its turn events (logged in the same transaction): pruned to its
    newest row, and a turn reported after that is logged under a new number, not dropped as a repeat."""
    telemetry = bare.start_telemetry()
    run = create_run(bare.reg, full_profile("coder")).run_id
    coder = open_instance(bare.reg, run, "coder")
    cursors = [report(bare, run, coder.agent_id, turn) for turn in (1, 2, 3)]
    outbox = telemetry.repository._outbox._rows

    def own_outbox() -> int:
        with telemetry.repository.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(outbox)).scalar_one())

    assert own_outbox() == 3
    prune(bare, telemetry)
    assert own_outbox() == 1
    cursors.append(report(bare, run, coder.agent_id, 4))
    got = bare.subscribe(run, agent_id=coder.agent_id).until(lambda ev: ev.turn.turn == 4)
    turns = [(c, ev.turn.turn) for c, ev in got if ev.WhichOneof("body") == "turn"]
    assert turns == list(zip(cursors, (1, 2, 3, 4), strict=True))


def test_issue_9_a_relay_refused_for_what_another_relay_stored_follows_on_and_logs_no_gap(
    bare: Suite, tmp_path: Path
) -> None:
    """Two Telemetry replicas relay one origin into one log. One reconnects (its ModuleStore replica was
    restarting) after reading the log's position; before its WatchOutbox reaches the origin, the other
    stores and acknowledges more and the origin prunes them: the call is refused OUT_OF_RANGE. Nothing is
    missing, and the relay says no gap. It logged "origin pruned events Telemetry never stored" at error level
    (seen in a rolling restart of two replicas of each service: 833 events named lost, each one in the log).
    A log that truly lacks them (a fresh one here) still gets the error and resumes after the gap."""
    bare.start_telemetry_process()  # the relay that stores and acknowledges
    run, events = written(bare, 5)
    head = events[-1].origin_seq
    eventually(lambda: followers(bare).get("telemetry", 0) >= head, "Telemetry acknowledging the writes")
    assert prune(bare, bare.modulestore)[0] > 0
    shared = TelemetryRepository(make_engine(bare.telemetry_config.database_url), Retention(10_000))
    fresh_url = new_database_url(bare.backend, "relay_gap", tmp_path)
    empty = TelemetryRepository(make_engine(fresh_url), Retention(10_000))

    async def refused_then(log: SqlEventLog) -> tuple[bool, int, list[MutableMapping[str, Any]]]:
        """Whether the relay handled the refusal, where it resumes next, and what it logged."""
        channel = open_aio_channel(bare.modulestore.address)
        try:
            # Where the relay stood before the other relay stored those events (its read of the position).
            call = ob_grpc.OutboxServiceStub(channel).WatchOutbox(ob.WatchOutboxRequest(after_origin_seq=0))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call.read()
        finally:
            await channel.close()
        with structlog.testing.capture_logs() as logs:
            relay = Follower("modulestore", bare.modulestore.address, log, structlog.get_logger())
            handled = await relay._past_gap(refused.value)
        return handled, max(relay._resume_at, await log.highest_origin_seq("modulestore")), logs

    try:
        handled, resumes_after, logs = asyncio.run(refused_then(SqlEventLog(shared)))
        assert handled
        assert [e for e in logs if e["log_level"] == "error"] == []
        assert resumes_after >= head  # the log's position: everything up to it is in the log
        assert [e.origin_seq for e in events] == [
            e.origin_seq for _, e in read_run(bare, run, "m4") if e.origin == "modulestore"
        ]

        handled, resumes_after, logs = asyncio.run(refused_then(SqlEventLog(empty)))
        assert handled
        assert [e["event"] for e in logs if e["log_level"] == "error"] == [
            "origin pruned events Telemetry never stored; resuming after the gap"
        ]
        assert resumes_after == head - 1  # past the gap: the origin keeps its newest event only (margin 0)
    finally:
        shared.close()
        empty.close()
        drop_database(fresh_url)
