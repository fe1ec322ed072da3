"""The newest stored events, kept in memory so a caught-up subscriber is served without a database read.

Ingestion adds each batch after it commits; every subscriber that has caught up reads the new events from
here, so a write reaches a hundred subscribers without a hundred reads. A subscriber further behind than
what is held reads the database as before.

What is held is bounded twice: at most `CAPACITY` events and at most `max_bytes` of them (serialized), the
oldest let go first, so a run of large events cannot make the cache hold hundreds of megabytes. (An event
already sent to a subscriber also holds its encoded answer, about its size again.)

`Decoded` serves the JetStream log, where each subscription has a consumer of its own: the events they
receive are decoded (and encoded for gRPC) once per process, not once per subscription.
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from ggmodules.common.v1 import event_pb2
from ggmodules.core.telemetry.streams import StreamFilter

CAPACITY = 10_000
DEFAULT_RECENT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class StoredEvent:
    cursor: int
    event: event_pb2.Event
    # Its serialized size in bytes, as stored.
    size: int
    # What a Subscribe stream sends for it, encoded by the first subscriber that sends it and the same
    # bytes for every other (server/telemetry/subscriptions.py `stream_event_bytes`): a write reaching a
    # hundred subscribers is encoded once.
    wire: bytes | None = field(default=None, compare=False, repr=False)

    def keep_wire(self, data: bytes) -> bytes:
        object.__setattr__(self, "wire", data)
        return data


@dataclass(frozen=True, slots=True)
class StreamRead:
    """One read of a stream: matching events after a position, and where the log stood."""

    events: list[StoredEvent]
    # The newest cursor of the whole log when the read began; every matching event up to it is in
    # `events` unless `full`.
    head: int
    full: bool
    # Read after the events: a position below it may have lost events to pruning.
    pruned_through: int


class RecentEvents:
    """Complete above `floor`: every stored event with a cursor above it is held, in cursor order."""

    def __init__(self, head: int, pruned_through: int, capacity: int, max_bytes: int) -> None:
        self._events: deque[StoredEvent] = deque()
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()
        self._floor = head
        self._head = head
        self._pruned_through = pruned_through

    def committed(self, stored: Sequence[StoredEvent], pruned_through: int) -> None:
        """Called after a write commits, with what it stored (in cursor order) and the pruning point."""
        with self._lock:
            for item in stored:
                if item.cursor <= self._head:
                    continue  # already held (a refresh raced this process's own write)
                self._events.append(item)
                self._bytes += item.size
                self._head = item.cursor
            while self._events and (len(self._events) > self._capacity or self._bytes > self._max_bytes):
                oldest = self._events.popleft()
                self._bytes -= oldest.size
                self._floor = oldest.cursor
            self._pruned_through = max(self._pruned_through, pruned_through)

    def holds(self, after: int) -> bool:
        """Whether every stored event after `after` is held (or was never stored)."""
        with self._lock:
            return after >= self._floor

    @property
    def head(self) -> int:
        """The newest cursor held (everything up to it that was stored is here or below the floor)."""
        with self._lock:
            return self._head

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def held(self) -> tuple[int, int]:
        """(events, bytes) held now."""
        with self._lock:
            return len(self._events), self._bytes

    def read(self, where: StreamFilter, after: int, limit: int) -> StreamRead | None:
        """The matching events after `after`, or None when they are not all held (read the database)."""
        with self._lock:
            if after < self._floor:
                return None
            matched: list[StoredEvent] = []
            for item in reversed(self._events):
                if item.cursor <= after:
                    break
                if _matches(where, item.event):
                    matched.append(item)
            matched.reverse()
            return StreamRead(matched[:limit], self._head, len(matched) > limit, self._pruned_through)


def _matches(where: StreamFilter, event: event_pb2.Event) -> bool:
    return (not where.run_id or event.run_id == where.run_id) and (
        not where.agent_id or event.agent_id == where.agent_id
    )


class Decoded:
    """The newest events received, by cursor, decoded once for every subscription that receives them (a
    cursor whose bytes differ, as after the stream was made anew, is decoded again)."""

    def __init__(self, capacity: int = 4096) -> None:
        self._held: OrderedDict[int, tuple[bytes, StoredEvent]] = OrderedDict()
        self._capacity = capacity

    def get(self, cursor: int, payload: bytes) -> StoredEvent:
        held = self._held.get(cursor)
        if held is not None and held[0] == payload:
            return held[1]
        stored = StoredEvent(cursor, event_pb2.Event.FromString(payload), len(payload))
        self._held[cursor] = (payload, stored)
        if len(self._held) > self._capacity:
            self._held.popitem(last=False)
        return stored
