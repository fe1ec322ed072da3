"""The stream contract (R33): cursors, resume, filters, heartbeats, and retention's OUT_OF_RANGE."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from ggmodules.common.v1 import common_pb2 as c
from ggmodules.common.v1 import event_pb2
from ggmodules.core.errors import OutOfRange
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.server.telemetry.subscriptions import subscribe
from ggmodules.storage.telemetry import TelemetryRepository
from ggmodules.storage.telemetry.eventlog import SqlEventLog
from ggmodules.telemetry.v1 import telemetry_pb2
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from tests.harness import InProcessTelemetry, StreamEnded, Suite, credit, is_write_of, refusal_of, status_of
from tests.harness.modulestore import new_run, open_agent
from tests.harness.registry import create_run, full_profile, open_instance, store_ids

RETAINED = 10
SETTLE_ATTEMPTS = 5


@pytest.fixture(scope="module")
def small(backend_module: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Suite]:
    """A suite whose Telemetry keeps only the newest RETAINED events."""
    with Suite(backend_module, Path(tmp_path_factory.mktemp(f"small-{backend_module}")), transfer=False,
               telemetry=True, retention=RETAINED) as s:
        yield s


def agent_with_events(suite: Suite, marker: str) -> tuple[str, str, str, list[tuple[int, event_pb2.Event]]]:
    run = create_run(suite.reg, full_profile("coder")).run_id
    coder = open_instance(suite.reg, run, "coder")
    history = store_ids(coder)["history"]
    for n in range(5):
        suite.say(run, coder.agent_id, history, f"message {n}")
    suite.say(run, coder.agent_id, history, marker)
    return run, coder.agent_id, history, suite.subscribe(run, coder.agent_id).until(is_write_of(marker))


def test_r33_resume_after_a_cursor_gives_every_later_event_once_in_order(suite: Suite) -> None:
    run, agent, history, first = agent_with_events(suite, "end-1")
    cursors = [cursor for cursor, _ in first]
    assert cursors == sorted(set(cursors))

    middle = cursors[4]
    resumed = suite.subscribe(run, agent, after=middle)
    everything = suite.subscribe()  # the whole log, filtered here to this agent
    suite.say(run, agent, history, "after resuming")
    suite.say(run, agent, history, "end-2")

    later = resumed.until(is_write_of("end-2"))
    assert len(later) == len(first) - 5 + 2
    assert [c for c, _ in later[: len(first) - 5]] == cursors[5:]
    assert [c for c, _ in later] == sorted(set(c for c, _ in later)) and later[0][0] > middle
    assert [ev.stream_seq for _, ev in later] == list(range(6, len(first) + 3))

    mine = []
    while not mine or not is_write_of("end-2")(mine[-1][1]):
        cursor, ev = everything.next_event()
        if (ev.run_id, ev.agent_id) == (run, agent):
            mine.append((cursor, ev))
    assert [c for c, _ in mine] == [c for c, _ in first] + [c for c, _ in later[len(first) - 5 :]]


def test_r33_a_run_stream_and_an_agent_stream_carry_the_same_cursors(suite: Suite) -> None:
    run, agent, _, got = agent_with_events(suite, "end")
    run_stream = suite.subscribe(run).until(is_write_of("end"))
    assert [c for c, ev in run_stream if ev.agent_id == agent] == [c for c, _ in got]


def test_r33_an_idle_stream_carries_heartbeats_with_the_head(suite: Suite) -> None:
    run, agent, history, got = agent_with_events(suite, "end")
    last = got[-1][0]
    someone_else = open_instance(suite.reg, run, "coder").agent_id
    head = suite.tel.ReportTurn(tel.ReportTurnRequest(run_id=run, agent_id=someone_else, turn=1)).cursor
    assert head > last

    idle = suite.subscribe(run, agent, after=last, heartbeat_ms=50)
    beats = [idle.next(), idle.next()]
    assert [b.WhichOneof("item") for b in beats] == ["heartbeat", "heartbeat"]
    assert all(b.heartbeat.head_cursor >= head for b in beats)

    suite.say(run, agent, history, "wake up")
    cursor, ev = idle.next_event()
    assert is_write_of("wake up")(ev) and cursor > head
    after = idle.next()
    assert after.WhichOneof("item") == "heartbeat" and after.heartbeat.head_cursor >= cursor

    nothing = suite.subscribe("run-000000000000", heartbeat_ms=50).next()
    assert nothing.WhichOneof("item") == "heartbeat" and nothing.heartbeat.head_cursor >= cursor


def test_r33_a_cursor_past_2_31_is_an_idle_stream_on_every_backend(suite: Suite) -> None:
    run, agent, _, _ = agent_with_events(suite, "end")
    for sub in (suite.subscribe(after=2**40, heartbeat_ms=50), suite.subscribe(run, agent, after=2**40)):
        beat = sub.next()
        assert beat.WhichOneof("item") == "heartbeat" and beat.heartbeat.head_cursor > 0


@pytest.mark.parametrize("heartbeat_ms", [1, 49, 60_001, -5])
def test_r47_a_heartbeat_out_of_bounds_is_refused_naming_the_bounds(suite: Suite, heartbeat_ms: int) -> None:
    err = suite.subscribe(heartbeat_ms=heartbeat_ms).error()
    code, reason, metadata, _ = refusal_of(err)
    assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
    assert metadata == {"field": "heartbeat_ms", "min": "50", "max": "60000"}
    assert "between 50 and 60000" in (err.details() or "")


def test_r33_an_agent_filter_without_its_run_is_refused(suite: Suite) -> None:
    err = suite.subscribe(agent_id="coder-0").error()
    assert status_of(err) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")
    negative = suite.subscribe(after=-1).error()
    assert status_of(negative) == (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_FIELD")


def test_r33_a_cursor_older_than_retention_is_out_of_range_with_the_oldest_cursor(small: Suite) -> None:
    run = new_run()
    agent = open_agent(small.ms, run, "coder-0")
    for n in range(20):
        small.say(run, "coder-0", agent[1], f"message {n}")
    small.say(run, "coder-0", agent[1], "end")

    # Wait until the log has settled: a subscription from the oldest retained reaches the marker (one
    # started while pruning is still going on may itself be cut off; it is then started again, a bounded
    # number of times: pruning runs as the events are ingested, so it ends with the last of them).
    for _ in range(SETTLE_ATTEMPTS):
        try:
            small.subscribe().until(is_write_of("end"))
            break
        except StreamEnded as ended:
            assert ended.error is not None and status_of(ended.error)[1] == "CURSOR_EXPIRED"
    else:
        raise AssertionError(f"every one of {SETTLE_ATTEMPTS} subscriptions was cut off by pruning")
    retained = small.subscribe().events(RETAINED)
    assert is_write_of("end")(retained[-1][1])
    oldest = retained[0][0]

    code, reason, metadata, _ = refusal_of(small.subscribe(after=1).error())
    assert (code, reason) == (grpc.StatusCode.OUT_OF_RANGE, "CURSOR_EXPIRED")
    assert metadata["oldest_cursor"] == str(oldest)
    code, reason, metadata, _ = refusal_of(small.subscribe(run, "coder-0", after=oldest - 2).error())
    assert (code, metadata["oldest_cursor"]) == (grpc.StatusCode.OUT_OF_RANGE, str(oldest))

    # Resuming just before the oldest retained cursor is fine, and gives exactly what is retained.
    assert small.subscribe(after=oldest - 1).events(RETAINED) == retained


def test_r33_a_subscriber_that_falls_behind_retention_is_cut_off_not_skipped(small: Suite) -> None:
    assert isinstance(small.telemetry, InProcessTelemetry)
    repo = small.telemetry.running.service.extra["repository"]
    assert isinstance(repo, TelemetryRepository)
    origin = f"test-{new_run()}"
    repo.ingest(origin, [event_pb2.Event(origin=origin, origin_seq=1, run_id="run-slow")])

    async def fall_behind() -> OutOfRange:
        stream = subscribe(SqlEventLog(repo), tel.SubscribeRequest(run_id="run-slow"))
        first = tel.SubscribeResponse.FromString(await anext(stream))
        assert first.event.event.origin_seq == 1
        # While this subscriber holds on to its first event, the log moves on past retention.
        more = [
            event_pb2.Event(origin=origin, origin_seq=n, run_id="run-slow") for n in range(2, 2 * RETAINED)
        ]
        repo.ingest(origin, more)
        with pytest.raises(OutOfRange) as cut:
            await anext(stream)
        await stream.aclose()
        return cut.value

    cut = small.loop.run(fall_behind())
    _, pruned = repo.head()
    assert cut.metadata["oldest_cursor"] == str(pruned + 1)


def test_report_turn_is_stored_once_on_the_agents_stream(suite: Suite) -> None:
    run, agent, _, got = agent_with_events(suite, "end")
    history = got[1][1].store_id
    request = tel.ReportTurnRequest(
        request_id="turn-1",
        run_id=run,
        agent_id=agent,
        turn=3,
        modules=[telemetry_pb2.ModuleTokens(kind=c.KIND_HISTORY, store_id=history, tokens=1200)],
    )
    first = suite.tel.ReportTurn(request)
    again = suite.tel.ReportTurn(request)
    assert first.cursor == again.cursor > got[-1][0]

    stream = suite.subscribe(run, agent, after=got[-1][0], heartbeat_ms=50)
    cursor, ev = stream.next_event()
    assert cursor == first.cursor and (ev.origin, ev.WhichOneof("body"), ev.turn.turn) == (
        "telemetry",
        "turn",
        3,
    )
    assert [(m.kind, m.store_id, m.tokens) for m in ev.turn.modules] == [(c.KIND_HISTORY, history, 1200)]
    assert ev.stream_seq == 1
    assert stream.next().WhichOneof("item") == "heartbeat"  # once: the retried request added nothing

    reused = suite.tel.ReportTurn
    with pytest.raises(grpc.RpcError) as caught:
        reused(tel.ReportTurnRequest(request_id="turn-1", run_id=run, agent_id=agent, turn=4))
    assert status_of(caught.value) == (grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED")


def test_report_turn_refuses_an_unknown_kind(suite: Suite) -> None:
    credit("run-x", "coder-0")  # a valid credential: the kind is what is refused
    with pytest.raises(grpc.RpcError) as caught:
        suite.tel.ReportTurn(
            tel.ReportTurnRequest(
                run_id="run-x", agent_id="coder-0", modules=[telemetry_pb2.ModuleTokens(kind=9, tokens=1)]
            )
        )
    assert status_of(caught.value) == (grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_KIND")


def test_a_write_refused_by_modulestore_reaches_no_stream(suite: Suite) -> None:
    run, agent, history, got = agent_with_events(suite, "end")
    with pytest.raises(grpc.RpcError):
        suite.write(run, agent, "tasks-999", create_task=ms.CreateTask(title="nowhere"))
    suite.say(run, agent, history, "after the refusal")
    later = suite.subscribe(run, agent, after=got[-1][0]).next_event()[1]
    assert is_write_of("after the refusal")(later)
