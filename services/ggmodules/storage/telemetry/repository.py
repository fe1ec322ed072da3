"""The Telemetry repository: the log every origin's events are stored in once, read by subscribers.

Writes (ingestion, ReportTurn, pruning) run one at a time (a lock in the process, and on PostgreSQL an
advisory transaction lock), so cursors commit in the order they were issued: a reader that sees cursor n
has seen every cursor below it. `committed` is notified after each write commits. A write the database
refuses under contention (e.g. SQLite busy) is run again (storage.contention).

Several replicas may share one PostgreSQL database: the count and each origin's position are read from the
database (`tel_meta`) under the lock; an origin's events at or below the highest origin_seq stored for it
are passed over before inserting (which is what stores each event once, whichever replica's relay brings
it: tel_events has no unique key on it, issue 14; and it wastes no cursor); and the recent-events cache is
filled from the log itself in cursor order (`refresh`), woken by the other replicas' commits (NOTIFY
tel_events, storage/commits.py), not only by this process's own writes.

Reads never take the write lock: on SQLite they use their own engine whose connections run each SELECT in
autocommit mode (no BEGIN IMMEDIATE), so a subscriber never holds up a writer or another subscriber.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import Connection, Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.core.errors import DomainError
from ggmodules.core.telemetry.streams import Retention, StreamFilter
from ggmodules.core.telemetry.turns import KnownAgent
from ggmodules.storage.commits import CommitSignal
from ggmodules.storage.contention import DEFAULT, Retries, once_more_if_lost, retrying
from ggmodules.storage.idempotency import RequestLog
from ggmodules.storage.kept import KeptConnection
from ggmodules.storage.migrations import migrate
from ggmodules.storage.outbox import Outbox
from ggmodules.storage.outbox_pruning import prune_all_but_newest
from ggmodules.storage.pinned import pinned_transaction
from ggmodules.storage.telemetry import agents, event_blocks, event_rows, meta, pg_ingest
from ggmodules.storage.telemetry.recent import (
    CAPACITY,
    DEFAULT_RECENT_BYTES,
    RecentEvents,
    StoredEvent,
    StreamRead,
)
from ggmodules.storage.telemetry.retention_bounds import RetentionBounds
from ggmodules.storage.telemetry.tables import (
    TelEventRow,
    TelOutboxRow,
    TelRequestRow,
    TelStreamHeadRow,
)
from ggmodules.storage.vacuum import Vacuum

ORIGIN = "telemetry"
# tel_meta's keys (meta.py): how far the log is pruned; how many events tel_events holds now, and their
# payload bytes, kept beside them so every replica counts alike.
PRUNED_THROUGH, STORED, STORED_BYTES = meta.PRUNED_THROUGH, meta.STORED, meta.STORED_BYTES

_events = TelEventRow.__table__  # type: ignore[attr-defined]


class TelemetryRepository:
    def __init__(
        self,
        engine: Engine,
        retention: Retention,
        recent_bytes: int = DEFAULT_RECENT_BYTES,
        retries: Retries = DEFAULT,
    ) -> None:
        migrate(engine, "telemetry")
        self.engine = engine
        self.retries = retries
        self.retention = retention
        self.committed = CommitSignal()
        self._reader = event_rows.reader_engine(engine)
        self._lock = threading.Lock()
        self._outbox = Outbox(ORIGIN, TelOutboxRow, TelStreamHeadRow)
        # Telemetry's own outbox only numbers its turn events, logged in the same transaction (housekeeping).
        self.prune_own_outbox = functools.partial(prune_all_but_newest, self._outbox._rows)
        self._requests = RequestLog(TelRequestRow)
        # PostgreSQL may be shared by several replicas: the count, the bytes and each origin's position are
        # then read under the write lock at each write. A SQLite file is one process's, which keeps them in
        # memory.
        self._shared = engine.dialect.name == "postgresql"
        self._stored, self._stored_bytes = (0, 0) if self._shared else self._count()
        self._counted = False  # PostgreSQL: a write found the counts in tel_meta (pg_ingest.fits)
        # SQLite: every write of the log (under `_lock`, one at a time) runs on one connection kept open, as
        # ModuleStore's do: no pool checkout on an event's way to its subscribers.
        self._pinned = None if self._shared else engine.connect()
        # PostgreSQL: the same, kept out of the pool (no pre-ping round trip a write), let go when broken.
        self._kept = KeptConnection(engine) if self._shared else None
        self._bounds = RetentionBounds(retention)
        self._highest: dict[str, int] = {}  # origin -> highest origin_seq stored (SQLite only relies on it)
        self._refreshing = threading.Lock()
        self._stale = False  # a refresh failed: the cache may be behind what is committed (`refresh`)
        # What the write in progress stored and pruned through, handed to `recent` once it commits.
        self._pending: list[StoredEvent] = []
        self._inserted: list[StoredEvent] = []  # what an ingest's first round trip inserted (PostgreSQL)
        self._pending_pruned = 0
        # Rows written since the last packing looked (at least), and events ever inserted: see `pack`.
        self._unpacked, self._inserted_total, self._counting = event_blocks.BLOCK, 0, threading.Lock()
        # PostgreSQL: the rows packed away (and blocks pruned) are VACUUMed (storage/vacuum.py).
        self._vacuum = Vacuum.of(self._reader, ("tel_events", "tel_event_blocks"))
        self._read_meta: dict[str, int] = {}  # tel_meta keys read with the counts (shared only)
        self._raises: dict[str, int] = {}  # tel_meta keys to raise with the counts
        head, pruned_through = self.head()
        self.recent = RecentEvents(head, pruned_through, min(CAPACITY, retention.events), recent_bytes)

    def _count(self) -> tuple[int, int]:
        """Events held and their payload bytes."""
        with self._reader.connect() as conn:
            return event_rows.held(conn)

    def _load_stored(
        self, conn: Connection, extra: list[str], events: Sequence[event_pb2.Event]
    ) -> tuple[int, int, list[StoredEvent]]:
        """The write lock taken; the events held and their payload bytes, from tel_meta (counted once, the
        first time, for a log made before them); the `extra` keys read with them go to `self._read_meta`.
        With `events` (an ingest's: `extra` is their origin's position), those above the position are
        inserted in the same round trip (storage/telemetry/pg_ingest.py) and returned; the counts are those
        before them."""
        position = extra[0] if events else ""
        rows, inserted = pg_ingest.locked_meta(conn, [STORED, STORED_BYTES, *extra], position, events)
        self._read_meta = {key: int(rows.get(key, 0)) for key in extra}
        self._counted = True  # now, or below: tel_meta rows are never deleted
        if STORED in rows and STORED_BYTES in rows:
            return int(rows[STORED]), int(rows[STORED_BYTES]), inserted
        count, size = event_rows.held(conn)  # the events just inserted among them
        count, size = count - len(inserted), size - sum(s.size for s in inserted)
        meta.write(conn, sets={STORED: count, STORED_BYTES: size})
        return count, size, inserted

    # ---- writes -------------------------------------------------------------------------------------

    @contextmanager
    def _writing(self, origin: str = "", events: Sequence[event_pb2.Event] = ()) -> Iterator[Connection]:
        """One write under the lock. With `origin`, its position (tel_meta `origin/<origin>`) is read with the
        counts into `self._read_meta`, and a raise of it put in `self._raises` is written with them: one
        read and one write of tel_meta per ingest. On PostgreSQL `events` (of `origin`) above its position
        are inserted with that read, in its round trip, and are in `self._inserted` (`_load_stored`)."""
        with self._lock:
            self._pending, self._pending_pruned, self._raises, self._inserted = [], 0, {}, []
            stored, stored_bytes = self._stored, self._stored_bytes
            try:
                with self._transaction() as conn:
                    if self._shared:
                        extra = [f"origin/{origin}"] if origin else []
                        stored, stored_bytes, inserted = self._load_stored(conn, extra, events)
                        self._stored, self._stored_bytes = stored, stored_bytes
                        self._inserted = self._stored_now(inserted)
                    yield conn
                    self._prune(conn)
                    counts = {STORED: self._stored, STORED_BYTES: self._stored_bytes}
                    moved = self._shared and (self._stored, self._stored_bytes) != (stored, stored_bytes)
                    # PostgreSQL: with the COMMIT in one round trip (the block's own COMMIT sends nothing).
                    write = meta.write_and_commit if self._shared else meta.write
                    write(conn, counts if moved else {}, self._raises)
            except DomainError:
                self._stored, self._stored_bytes = stored, stored_bytes  # a refusal: nothing committed
                raise
            except BaseException:
                if not self._shared:
                    self._stored, self._stored_bytes = self._count()  # the rolled-back counts are void
                raise
            self._publish_recent(sorted(self._pending, key=lambda s: s.cursor), self._pending_pruned)
            self.committed.notify()

    @contextmanager
    def _transaction(self) -> Iterator[Connection]:
        if self._pinned is None:
            assert self._kept is not None
            with self._kept.connection() as conn, conn.begin():
                yield conn
            return
        # Begun on the DBAPI connection itself, as ModuleStore's are (modulestore/transaction.py).
        pinned, raw = self._pinned, self._pinned.connection.dbapi_connection
        assert raw is not None
        with pinned_transaction(pinned, raw):
            yield pinned

    def _publish_recent(self, stored: list[StoredEvent], pruned_through: int) -> None:
        """Hands what this process committed to the recent-events cache when it follows on from the cache's
        head with nothing between (the write lock makes cursors commit in order, so then nobody else's
        commit lies between); otherwise the cache is filled from the log (`refresh`)."""
        with self._refreshing:
            if not self._stale and (not stored or stored[0].cursor == self.recent.head + 1):
                self.recent.committed(stored, pruned_through)
                return
        self.refresh()

    def refresh(self) -> None:
        """Brings the recent-events cache up to the log's head (what any replica stored since), then wakes
        subscribers. A read on a lost connection is made once more; then the next ingest refreshes again."""
        with self._refreshing:
            self._stale = True
            after = self.recent.head
            while True:
                got = once_more_if_lost(functools.partial(self.read, StreamFilter(), after, CAPACITY))
                self.recent.committed(got.events, got.pruned_through)
                if not got.full:
                    break
                after = got.events[-1].cursor
            self._stale = False
        self.committed.notify()

    def ingest(self, origin: str, events: Sequence[event_pb2.Event]) -> int:
        """Stores each event of `origin` not stored yet; returns how many were new. An origin's events arrive
        in origin_seq order, so those at or below the highest stored for it are stored already (or pruned):
        they are passed over before the INSERT, which would otherwise draw (and waste) a cursor each."""
        if not events:
            return 0

        def attempt() -> int:
            key = f"origin/{origin}"
            if self._counted and pg_ingest.fits(events, self._bounds, self._stored, self._stored_bytes):
                return self._ingest_at_once(origin, events)
            with self._writing(origin, events if self._shared else ()) as conn:
                if self._shared:  # inserted with the position's read (storage/telemetry/pg_ingest.py)
                    highest, inserted = self._read_meta[key], len(self._inserted)
                else:
                    known = self._highest.get(origin)
                    highest = meta.value(conn, key) if known is None else known
                    fresh = [ev for ev in events if ev.origin_seq > highest]
                    inserted = len(self._insert(conn, fresh)) if fresh else 0
                agents.know(conn, [ev for ev in events if ev.WhichOneof("body") == "roster"])
                now = max(highest, *(ev.origin_seq for ev in events))
                self._raises[key] = now  # written with the counts, when the write ends
            self._highest[origin] = now  # committed
            return inserted

        return retrying(attempt, self.retries)

    def _ingest_at_once(self, origin: str, events: Sequence[event_pb2.Event]) -> int:
        """The ingest in one round trip; then, when the counts read with it show a retention bound crossed
        (another replica's writes came between), the pruning in a write of its own, before returning."""
        assert self._kept is not None
        with self._lock:
            self._pending, self._pending_pruned = [], 0
            with self._kept.connection() as conn, conn.begin():
                counts, stored = pg_ingest.ingest_at_once(conn, f"origin/{origin}", events)
            self._stored, self._stored_bytes = counts[STORED], counts[STORED_BYTES]
            self._stored_now(stored)
            self._highest[origin] = max(self._highest.get(origin, 0), *(ev.origin_seq for ev in events))
            self._publish_recent(stored, 0)
            self.committed.notify()
            due = self._bounds.due(self._stored, self._stored_bytes)
        if due:  # after the COMMIT, on a connection the same outage may have ended (as in `refresh`)
            once_more_if_lost(lambda: retrying(self._prune_now, self.retries))
        return len(stored)

    def _prune_now(self) -> None:  # a write of its own, which prunes as it ends
        with self._writing():
            pass

    def highest_origin_seq(self, origin: str) -> int:
        """Where following `origin` resumes: the highest origin_seq ever stored (pruned or not)."""
        with self._reader.connect() as conn:
            return meta.value(conn, f"origin/{origin}")

    def agent(self, run_id: str, agent_id: str) -> KnownAgent | None:
        """The agent as Telemetry knows it (its roster ingested, or confirmed by an earlier report)."""
        with self._reader.connect() as conn:
            return agents.known(conn, run_id, agent_id)

    def report(
        self,
        event: event_pb2.Event,
        key: tuple[str, str, str] | None,
        answer: Any,
        admit: Callable[[KnownAgent | None], KnownAgent],
        publish: Callable[[event_pb2.Event], int] | None = None,
    ) -> bytes:
        """Appends Telemetry's own turn `event` (once per request id) and returns the serialized answer that
        `answer(cursor)` builds; a retried request id returns the first answer. Otherwise `admit` is given
        the agent as stored (None if unknown) and returns the agent to record the turn against, or
        refuses; it runs under the write lock, so two reports of one agent are checked one after the
        other. With an external event log, `publish(event)` stores the event there (inside the transaction,
        before it commits) and returns its cursor; otherwise it goes into tel_events."""
        return retrying(lambda: self._report(event, key, answer, admit, publish), self.retries)

    def _report(
        self,
        event: event_pb2.Event,
        key: tuple[str, str, str] | None,
        answer: Any,
        admit: Callable[[KnownAgent | None], KnownAgent],
        publish: Callable[[event_pb2.Event], int] | None,
    ) -> bytes:
        with self._writing() as conn:
            if key is not None and (prior := self._requests.claim(conn, *key)) is not None:
                return prior
            agent = admit(agents.known(conn, event.run_id, event.agent_id))
            self._outbox.append(conn, event)
            meta.write(conn, raises={f"origin/{ORIGIN}": event.origin_seq})
            if publish is not None:
                cursor = publish(event)
            else:
                (stored,) = self._insert(conn, [event])
                cursor = stored.cursor
            agents.record_turn(conn, agent, event.turn.turn, cursor)
            response: bytes = answer(cursor)
            if key is not None:
                self._requests.answer(conn, key[0], key[1], response)
            return response

    def _insert(self, conn: Connection, events: Sequence[event_pb2.Event]) -> list[StoredEvent]:
        return self._stored_now(event_rows.insert(conn, events))

    def _stored_now(self, stored: list[StoredEvent]) -> list[StoredEvent]:
        """Counts `stored`, inserted by the write in progress."""
        with self._counting:
            self._unpacked += len(stored)
            self._inserted_total += len(stored)
        self._pending += stored
        self._stored += len(stored)
        self._stored_bytes += sum(s.size for s in stored)
        return stored

    def raise_position(self, origin: str, origin_seq: int) -> None:
        """Records that every event of `origin` up to `origin_seq` is stored (in an external event log)."""

        def attempt() -> None:
            with self.engine.begin() as conn:
                meta.write(conn, raises={f"origin/{origin}": origin_seq})

        retrying(attempt, self.retries)

    def _prune(self, conn: Connection) -> None:
        """Prunes the oldest events past any retention bound: count, bytes, age (see settings.py)."""
        through = self._bounds.through(conn, self._stored, self._stored_bytes)
        if not through:
            return
        pruned, size = event_rows.prune(conn, through)
        self._pending_pruned = int(through)
        self._stored -= pruned
        self._stored_bytes -= size

    # ---- reads --------------------------------------------------------------------------------------

    def read(self, where: StreamFilter, after: int, limit: int) -> StreamRead:
        with self._reader.connect() as conn:
            events, head = event_rows.read(conn, where, after, limit)
            pruned = meta.value(conn, PRUNED_THROUGH)
        return StreamRead(events, head, len(events) == limit, pruned)

    def head(self) -> tuple[int, int]:
        """The newest cursor and `pruned_through`."""
        with self._reader.connect() as conn:
            return event_rows.head(conn), meta.value(conn, PRUNED_THROUGH)

    # ---- packing ------------------------------------------------------------------------------------

    def pack_due(self) -> bool:
        """Whether BLOCK events may have gathered in rows since the last packing (then call `pack`)."""
        return self._unpacked >= event_blocks.BLOCK

    def pack(self, blocks: int | None = None) -> int:
        """Packs the oldest rows, BLOCK at a time, into compressed blocks (storage/telemetry/event_blocks.py)
        while BLOCK or more are rows (at most `blocks` of them); returns how many events it packed. The
        compression runs outside the write lock; the lock is held only to swap the rows for their block,
        which changes no cursor, event or count (subscribers and retention see the same log)."""
        packed = 0
        while blocks is None or packed < blocks * event_blocks.BLOCK:
            before = self._inserted_total
            with self._reader.connect() as conn:
                rows = event_blocks.oldest_rows(conn, event_blocks.BLOCK)
            with self._counting:  # plus what writes inserted meanwhile (twice at worst: a packing too early)
                self._unpacked = len(rows) + (self._inserted_total - before)
            if len(rows) < event_blocks.BLOCK:
                return packed
            data = event_blocks.encode(rows)

            def attempt(rows: list[event_blocks.PackedEvent] = rows, data: bytes = data) -> bool:
                with self._lock, self._transaction() as conn:
                    if self._shared:
                        pg_ingest.locked_meta(conn, [])
                    return event_blocks.store_block(conn, rows, data)

            try:
                if not retrying(attempt, self.retries):
                    return packed
            except event_blocks.Moved:  # pruned while it was compressed: the next packing starts anew
                return packed
            packed += len(rows)
            if self._vacuum is not None:
                self._vacuum.deleted(len(rows))
        return packed

    def close(self) -> None:
        if self._pinned is not None:
            self._pinned.close()
        if self._kept is not None:
            self._kept.close()
        if self._reader is not self.engine:
            self._reader.dispose()
        self.engine.dispose()
