"""Telemetry's event log: one interface, two implementations.

- `SqlEventLog` (the embedded default): the `tel_events` table in Telemetry's own database (SQLite or
  PostgreSQL), written by TelemetryRepository. Several replicas may share one PostgreSQL database: each
  one's subscribers are woken by the others' inserts (LISTEN/NOTIFY on tel_events) and its recent-events
  cache is filled from the table in cursor order.
- `JetStreamEventLog` (storage/telemetry/jetstream.py): a NATS JetStream stream, selected by a `nats://`
  URL (`--event-log`, GGMODULES_TELEMETRY_EVENT_LOG). The cursor is the stream sequence.
`open_event_log` (storage/telemetry/event_logs.py) picks one by URL.

Both store each (origin, origin_seq) once, whichever relay or replica appends it, and serve Subscribe (R33)
the same way: events after a cursor in cursor order, a heartbeat with a resumable cursor when idle,
OUT_OF_RANGE (`oldest_cursor`) for a position older than what is retained. tests/telemetry/
test_event_log_contract.py runs one suite over both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import structlog
from sqlalchemy import text

from ggmodules.common.v1 import event_pb2
from ggmodules.core.telemetry.streams import StreamFilter, check_retained, start_position
from ggmodules.storage.commits import CommitListener, listen_for_commits
from ggmodules.storage.contention import database_unreachable, first_line
from ggmodules.storage.telemetry.recent import StoredEvent, StreamRead
from ggmodules.storage.telemetry.repository import TelemetryRepository

_log = structlog.get_logger("ggmodules.telemetry.eventlog")
# Blocks packed in one step of the packing a write sets off; the packing goes on, step after step, until
# fewer than BLOCK rows are left, and a stopping Telemetry waits for one step at most.
PACK_STEP = 4
# Events handed to a subscriber at once, at most.
BATCH = 500


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """An idle stream's heartbeat: every matching event up to `cursor` was sent, so a subscriber may resume
    after it."""

    cursor: int


StreamItem = list[StoredEvent] | Heartbeat


class EventLog(Protocol):
    """Where Telemetry stores every origin's events and from where subscribers read them."""

    # "sql" or "jetstream": logged at start, shown by `ggmodules up`.
    kind: str
    # How an origin that publishes its own events to this log knows it (JetStreamLog.identity); None when
    # no origin can (the SQL log is Telemetry's own table).
    identity: str | None

    async def start(self) -> None:
        """Connects (and on JetStream makes or updates the stream); called inside the server's loop."""

    async def append(self, origin: str, events: Sequence[event_pb2.Event]) -> int:
        """Stores each of `origin`'s events (in origin_seq order) not stored yet; returns how many were new.
        Once it returns, the log durably holds them and `highest_origin_seq(origin)` covers them."""

    async def highest_origin_seq(self, origin: str) -> int:
        """Where a relay of `origin` resumes: the highest origin_seq the log holds (or held) for it."""

    async def published_by_origin(self, origin: str, origin_seq: int) -> None:
        """`origin` published its events up to `origin_seq` to this log itself (runtime/origin_relay.py):
        `highest_origin_seq(origin)` covers them from now on. Only for a log with an `identity`."""

    def turn_publisher(self) -> Callable[[event_pb2.Event], int] | None:
        """For ReportTurn: a blocking call (run on a worker thread) that stores one of Telemetry's own
        events and returns its cursor; None when the event goes into tel_events with the turn's
        transaction."""

    async def read(self, where: StreamFilter, after: int, limit: int) -> StreamRead:
        """At most `limit` matching events after `after`, in cursor order (the console's reads)."""

    async def bounds(self) -> tuple[int, int]:
        """(the newest cursor, the highest cursor pruned)."""

    def subscribe(self, where: StreamFilter, after_cursor: int, idle: float) -> AsyncIterator[StreamItem]:
        """The matching events after `after_cursor` (0: the oldest retained), then new ones as they are
        stored; a Heartbeat after `idle` seconds without an event. Raises OutOfRange (R33) for a position
        older than what is retained, at the start or later."""

    async def reachable(self) -> bool:
        """Whether the log answers now (health)."""

    async def close(self) -> None: ...


class SqlEventLog:
    """The `tel_events` table, through TelemetryRepository."""

    kind = "sql"
    identity: str | None = None  # Telemetry's own table: no origin publishes to it

    def __init__(self, repo: TelemetryRepository) -> None:
        self.repo = repo
        self._listener: CommitListener | None = None
        self._packing: asyncio.Task[None] | None = None
        self._closing = False
        # On SQLite an append is a short local transaction (WAL, no fsync at commit) and runs on the event
        # loop, as ModuleStore's writes do there: two thread hand-overs would cost more than the write. On
        # PostgreSQL it waits on the server, so it runs on a worker thread.
        self._inline = repo.engine.dialect.name == "sqlite"

    async def start(self) -> None:
        # Another replica's inserts (same PostgreSQL database) refresh this one's cache and wake its
        # subscribers at once. This one's own writes already did both as they committed.
        self._listener = listen_for_commits(self.repo.engine, "tel_events", self.repo.refresh, skip_own=True)

    @property
    def listener(self) -> CommitListener | None:
        return self._listener

    async def append(self, origin: str, events: Sequence[event_pb2.Event]) -> int:
        if self._inline:
            stored = self.repo.ingest(origin, list(events))
        else:
            stored = await asyncio.to_thread(self.repo.ingest, origin, list(events))
        if self._packing is None and self.repo.pack_due():
            # Older events are packed into compressed blocks on a worker thread, after this write reached
            # its subscribers (storage/telemetry/event_blocks.py).
            self._packing = asyncio.get_running_loop().create_task(self._pack(), name="pack-events")
        return stored

    async def _pack(self) -> None:
        try:
            # One append can leave many blocks' worth of rows (a write to a store many agents hold brings a
            # snapshot for each holder): they are all packed now, not one step per later write, which a
            # Telemetry gone quiet never makes. Measured before, under a crowd of writers on shared stores:
            # 3,719 events of 13.7 kB left in rows (37 MB) a minute in, and still there once writes stopped.
            # A step can pack nothing when the rows changed under it (another replica packed them first, a
            # row committed late with an older cursor, retention pruned them): it reads them again. Three
            # such steps in a row end it, and the next write sets it off again.
            empty = 0
            while empty < 3:
                empty = 0 if await asyncio.to_thread(self.repo.pack, PACK_STEP) else empty + 1
                if self._closing or not self.repo.pack_due():  # closing: the step under way was the last
                    return
        except Exception as exc:
            if database_unreachable(exc):
                _log.warning("packing events: database unavailable; trying again after the next write",
                             error=first_line(exc))
            else:
                _log.exception("packing events failed; trying again after the next write")
        finally:
            self._packing = None

    async def highest_origin_seq(self, origin: str) -> int:
        return await asyncio.to_thread(self.repo.highest_origin_seq, origin)

    async def published_by_origin(self, origin: str, origin_seq: int) -> None:
        raise TypeError("no origin publishes to the SQL event log: it has no identity to name in WatchOutbox")

    def turn_publisher(self) -> Callable[[event_pb2.Event], int] | None:
        return None

    async def read(self, where: StreamFilter, after: int, limit: int) -> StreamRead:
        return await asyncio.to_thread(self.repo.read, where, after, limit)

    async def bounds(self) -> tuple[int, int]:
        return await asyncio.to_thread(self.repo.head)

    async def subscribe(
        self, where: StreamFilter, after_cursor: int, idle: float
    ) -> AsyncIterator[StreamItem]:
        """Each subscription reads at its own pace, woken by the repository's commit signal: from the newest
        events held in memory once it has caught up, from the database while it is further behind."""
        repo = self.repo
        _, pruned = await asyncio.to_thread(repo.head)
        position = start_position(after_cursor, pruned)
        last_sent = time.monotonic()
        while True:
            seen = repo.committed.version
            got = repo.recent.read(where, position, BATCH)
            if got is None:  # further behind than memory holds: read the log
                got = await asyncio.to_thread(repo.read, where, position, BATCH)
            check_retained(position, got.pruned_through)
            if got.events:
                yield got.events
                last_sent = time.monotonic()
            if got.full:
                position = got.events[-1].cursor
                continue
            # Every matching event up to the head was in this read: later reads start there, so an idle
            # filtered stream is not mistaken for one that fell behind retention.
            position = max(position, got.head)
            idle_left = idle - (time.monotonic() - last_sent)
            if idle_left <= 0:
                yield Heartbeat(got.head)
                last_sent, idle_left = time.monotonic(), idle
            await repo.committed.wait(seen, idle_left)

    async def reachable(self) -> bool:
        def ping() -> bool:
            try:
                with self.repo.engine.connect() as conn:
                    conn.execute(text("SELECT 1"))
                return True
            except Exception:
                return False

        return await asyncio.to_thread(ping)

    async def packed(self) -> None:
        """Waits for the packing in progress, if any, to leave fewer than BLOCK rows."""
        if self._packing is not None:
            await asyncio.gather(self._packing, return_exceptions=True)

    async def close(self) -> None:
        self._closing = True
        await self.packed()
        if self._listener is not None:
            self._listener.stop()
