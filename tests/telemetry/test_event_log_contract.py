"""The event-log contract (storage/telemetry/eventlog.py), one suite over every implementation: the SQL log
on SQLite and on PostgreSQL, and NATS JetStream. Each test has its own database and its own stream and
subject prefix. Replica cases run two logs over one PostgreSQL database or one JetStream stream, as two
Telemetry replicas would."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ggmodules.common.v1 import event_pb2
from ggmodules.core.errors import OutOfRange
from ggmodules.core.telemetry.streams import Retention, StreamFilter
from ggmodules.storage.engine import make_engine
from ggmodules.storage.telemetry import StoredEvent, TelemetryRepository
from ggmodules.storage.telemetry.event_logs import open_event_log
from ggmodules.storage.telemetry.eventlog import EventLog, Heartbeat, StreamItem
from ggmodules.storage.telemetry.jetstream import JetStreamEventLog
from tests.harness import drop_database, new_database_url
from tests.harness.event_logs import EVENT_LOGS, drop_stream, fresh_jetstream_url, needs_nats

T = TypeVar("T")
DEADLINE = 15.0
# Longer than any test waits: a test that needs a heartbeat to see an event fails instead.
NEVER = 600.0
REPLICATED = EVENT_LOGS[1:]  # one SQLite file is one process's: replicas share PostgreSQL or JetStream
EVERYTHING = StreamFilter()


class Logs:
    """`count` event logs over one store (a database, a stream), each as its own replica would open it."""

    def __init__(self, param: tuple[str, str], directory: Path, retention: Retention) -> None:
        self.backend, self.kind = param
        self.directory = directory
        self.retention = retention
        self.url = new_database_url(self.backend, "h9log_telemetry", directory)
        self.event_log_url = fresh_jetstream_url() if self.kind == "jetstream" else ""
        self.logs: list[EventLog] = []
        self.repos: list[TelemetryRepository] = []

    async def open(self) -> EventLog:
        # JetStream keeps its events in the stream; each replica has its own positions database here.
        url = self.url if self.kind == "sql" or not self.repos else new_database_url(
            self.backend, "h9log_telemetry", self.directory
        )
        repo = TelemetryRepository(make_engine(url), self.retention)
        log = open_event_log(self.event_log_url, repo, self.retention)
        await log.start()
        self.repos.append(repo)
        self.logs.append(log)
        listener = getattr(log, "listener", None)
        if listener is not None:  # PostgreSQL: LISTEN in force before anything is written
            assert await asyncio.to_thread(listener.listening.wait, DEADLINE)
        return log

    async def close(self) -> None:
        for log in self.logs:
            await log.close()
        for repo in self.repos:
            url = repo.engine.url.render_as_string(hide_password=False)
            repo.close()
            drop_database(url)
        if self.event_log_url:
            await asyncio.to_thread(drop_stream, self.event_log_url)


@asynccontextmanager
async def opened(param: Any, directory: Path, retention: int = 1_000_000) -> AsyncIterator[Logs]:
    logs = Logs(param, directory, Retention(retention))
    try:
        yield logs
    finally:
        await logs.close()


def run(body: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(asyncio.wait_for(body(), 120))


def ev(origin: str, seq: int, run_id: str = "run-1", agent_id: str = "agent-1") -> event_pb2.Event:
    return event_pb2.Event(origin=origin, origin_seq=seq, run_id=run_id, agent_id=agent_id, stream_seq=seq)


async def read_all(log: EventLog, where: StreamFilter = EVERYTHING, after: int = 0) -> list[StoredEvent]:
    out: list[StoredEvent] = []
    while True:
        page = await log.read(where, after, 3)
        out += page.events
        if not page.full:
            return out
        after = page.events[-1].cursor


async def take(stream: AsyncIterator[StreamItem], n: int) -> list[StoredEvent]:
    """The next `n` events of a subscription (heartbeats passed over), within DEADLINE seconds."""
    got: list[StoredEvent] = []

    async def fill() -> None:
        while len(got) < n:
            item = await anext(stream)
            if not isinstance(item, Heartbeat):
                got.extend(item)

    await asyncio.wait_for(fill(), DEADLINE)
    return got


def keys(events: list[StoredEvent]) -> list[tuple[str, int]]:
    return [(s.event.origin, s.event.origin_seq) for s in events]


@pytest.mark.parametrize("param", EVENT_LOGS)
def test_each_event_is_stored_once_and_a_repeat_wastes_no_cursor(param: Any, tmp_path: Path) -> None:
    async def body() -> None:
        async with opened(param, tmp_path) as logs:
            log = await logs.open()
            assert await log.append("ms", [ev("ms", n) for n in (1, 2, 3)]) == 3
            assert await log.append("ms", [ev("ms", n) for n in (2, 3, 4)]) == 1  # a relay's repeat
            assert await log.append("reg", [ev("reg", 1)]) == 1
            assert await log.highest_origin_seq("ms") == 4
            stored = await read_all(log)
            assert keys(stored) == [("ms", 1), ("ms", 2), ("ms", 3), ("ms", 4), ("reg", 1)]
            cursors = [s.cursor for s in stored]
            assert cursors == list(range(cursors[0], cursors[0] + 5))  # no cursor drawn for a repeat
            head, pruned = await log.bounds()
            assert (head, pruned) == (cursors[-1], cursors[0] - 1)

    run(body)


@needs_nats
def test_jetstream_keeps_the_events_of_an_origin_that_numbers_from_1_again(tmp_path: Path) -> None:
    """A ModuleStore started on a new database numbers its outbox from 1 again; on a stream that still
    holds the old installation's events (within JetStream's duplicate window) its events are stored, not
    dropped as repeats of the old ones with the same origin_seq. (The dedupe id was origin:origin_seq.)"""

    async def body() -> None:
        async with opened(("sqlite", "jetstream"), tmp_path) as logs:
            before, after = await logs.open(), await logs.open()  # two positions databases, one stream
            assert await before.append("ms", [ev("ms", n, run_id="run-old") for n in (1, 2)]) == 2
            assert await after.append("ms", [ev("ms", n, run_id="run-new") for n in (1, 2)]) == 2
            stored = await read_all(after)
            assert [(s.event.run_id, s.event.origin_seq) for s in stored] == [
                ("run-old", 1), ("run-old", 2), ("run-new", 1), ("run-new", 2)
            ]
            # A relay's repeat of the same event is still dropped.
            assert await before.append("ms", [ev("ms", 2, run_id="run-new")]) == 0

    run(body)


@pytest.mark.parametrize("param", EVENT_LOGS)
def test_subscribe_filters_resumes_after_a_cursor_and_heartbeats_a_resumable_cursor(
    param: Any, tmp_path: Path
) -> None:
    async def body() -> None:
        async with opened(param, tmp_path) as logs:
            log = await logs.open()
            await log.append("ms", [ev("ms", 1, "run-1", "a"), ev("ms", 2, "run-1", "b")])
            await log.append("ms", [ev("ms", 3, "run-2", "a"), ev("ms", 4, "run-1", "a")])
            mine = StreamFilter("run-1", "a")

            stream = log.subscribe(mine, 0, 0.05)
            first = await take(stream, 2)
            assert keys(first) == [("ms", 1), ("ms", 4)]
            # Idle: a heartbeat whose cursor is resumable (nothing of this stream at or below it is unsent).
            beat = await asyncio.wait_for(anext(stream), DEADLINE)
            assert isinstance(beat, Heartbeat) and beat.cursor >= first[-1].cursor
            await log.append("ms", [ev("ms", 5, "run-1", "a")])
            assert keys(await take(stream, 1)) == [("ms", 5)]
            await stream.aclose()

            resumed = log.subscribe(mine, first[0].cursor, NEVER)
            assert keys(await take(resumed, 2)) == [("ms", 4), ("ms", 5)]
            await resumed.aclose()
            by_run = await read_all(log, StreamFilter("run-1"))
            assert keys(by_run) == [("ms", 1), ("ms", 2), ("ms", 4), ("ms", 5)]

    run(body)


@pytest.mark.parametrize("param", EVENT_LOGS)
def test_r33_below_retention_is_out_of_range_with_the_oldest_cursor(param: Any, tmp_path: Path) -> None:
    async def body() -> None:
        async with opened(param, tmp_path, retention=5) as logs:
            log = await logs.open()
            for n in range(1, 13):
                await log.append("ms", [ev("ms", n)])
            retained = await read_all(log)
            assert keys(retained) == [("ms", n) for n in range(12 - len(retained) + 1, 13)]
            assert 5 <= len(retained) < 12
            _, pruned = await log.bounds()
            assert pruned == retained[0].cursor - 1

            with pytest.raises(OutOfRange) as refused:
                await take(log.subscribe(EVERYTHING, 1, NEVER), 1)
            assert refused.value.metadata["oldest_cursor"] == str(pruned + 1)
            from_oldest = log.subscribe(EVERYTHING, 0, NEVER)
            assert keys(await take(from_oldest, len(retained))) == keys(retained)
            await from_oldest.aclose()

    run(body)


@pytest.mark.parametrize("param", REPLICATED)
def test_two_replicas_serve_identical_streams_and_wake_on_each_others_appends(
    param: Any, tmp_path: Path
) -> None:
    """Both replicas relay the same outbox (each event reaches both); each replica's caught-up subscribers
    get every event, whichever replica stored it, without waiting for a heartbeat."""

    async def body() -> None:
        async with opened(param, tmp_path) as logs:
            a, b = await logs.open(), await logs.open()
            where = StreamFilter("run-1", "agent-1")
            on_a, on_b = a.subscribe(where, 0, NEVER), b.subscribe(where, 0, NEVER)
            await a.append("ms", [ev("ms", 1)])
            assert keys(await take(on_a, 1)) == keys(await take(on_b, 1)) == [("ms", 1)]
            # Now both are caught up. Replicas relay the outbox in turns and both relay some events twice.
            for n in range(2, 12):
                first, second = (a, b) if n % 2 else (b, a)
                assert await first.append("ms", [ev("ms", n)]) == 1
                if n % 3 == 0:
                    assert await second.append("ms", [ev("ms", n)]) == 0
            got_a, got_b = await take(on_a, 10), await take(on_b, 10)
            assert keys(got_a) == keys(got_b) == [("ms", n) for n in range(2, 12)]
            assert [s.cursor for s in got_a] == [s.cursor for s in got_b]
            assert keys(await read_all(a)) == keys(await read_all(b)) == [("ms", n) for n in range(1, 12)]
            await on_a.aclose()
            await on_b.aclose()

    run(body)


@needs_nats
def test_jetstream_retains_by_bytes_and_age_as_configured(tmp_path: Path) -> None:
    async def body() -> None:
        kept = Retention(1_000_000, max_bytes=4096, max_age_seconds=3600)
        logs = Logs(("sqlite", "jetstream"), tmp_path, kept)
        try:
            log = await logs.open()
            for n in range(1, 101):  # about 100 bytes each on the stream: well past 4 KiB
                await log.append("ms", [ev("ms", n, agent_id="x" * 40)])
            retained = await read_all(log)
            assert 0 < len(retained) < 100
            assert keys(retained) == [("ms", n) for n in range(101 - len(retained), 101)]
            _, pruned = await log.bounds()
            with pytest.raises(OutOfRange) as refused:
                await take(log.subscribe(EVERYTHING, 1, NEVER), 1)
            assert refused.value.metadata["oldest_cursor"] == str(pruned + 1)
            assert isinstance(log, JetStreamEventLog)
            config = (await log._js.stream_info(log.stream)).config
            assert (config.max_age, config.max_bytes) == (3600, 4096)
        finally:
            await logs.close()

    run(body)
