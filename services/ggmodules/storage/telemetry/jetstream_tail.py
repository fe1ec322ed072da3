"""The newest events of the JetStream log, held once per Telemetry process for every caught-up subscription.

One ordered push consumer over the whole stream (the tail), started at the stream's head when the log starts,
fills a RecentEvents (recent.py) in stream order; this process's own publishes go in as soon as JetStream
acknowledges them, when they follow on from what is held (`published`), so a subscriber of this replica does
not wait for the message to come back from the server. A subscription whose position the tail holds reads
from memory, woken by `signal` (as on the SQL log): a write reaching a hundred subscribers is one message
from the server, not a hundred consumers' copies. One further behind reads through a consumer of its own
(jetstream.py) until it has caught up with what is held.

What is held is complete above its floor: events go in only in sequence order with nothing between. A
sequence gap seen by the tail (events discarded by retention before it got them) starts the held events
anew after the gap; subscriptions below the new floor go back to a consumer of their own, which checks the
gap against the stream's first sequence. `pruned_through` for the held events follows the stream: derived
from the count bound at once, and read from the stream every CHECK_SECONDS for bytes and age; a tail whose
consumer was lost is opened again (`_keep_up`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ggmodules.core.telemetry.streams import Retention
from ggmodules.storage.commits import CommitSignal
from ggmodules.storage.jetstream_parts import Parts
from ggmodules.storage.telemetry.recent import CAPACITY, DEFAULT_RECENT_BYTES, RecentEvents, StoredEvent

CHECK_SECONDS = 1.0

Bounds = Callable[[], Awaitable[tuple[int, int]]]
# Opens the tail's consumer at a stream sequence (the first to deliver), with the callback for its messages.
Received = Callable[[Any], Awaitable[None]]
Subscribe = Callable[[int, Received], Awaitable[Any]]


@dataclass(slots=True)
class At:
    """A subscription's position: every matching event up to it was sent."""

    position: int


class Tail:
    def __init__(self, retention: Retention, max_bytes: int = DEFAULT_RECENT_BYTES) -> None:
        self._retention = retention
        self._capacity = min(CAPACITY, retention.events) if retention.events else CAPACITY
        self._max_bytes = max_bytes
        self.signal = CommitSignal()
        self.recent: RecentEvents | None = None
        self._pruned = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._sub: Any = None
        # The newest stream sequence taken in (a part of an event not yet whole is not held, yet taken),
        # and the events in parts in progress (storage/jetstream_parts.py).
        self._seen = 0
        self._parts = Parts()

    async def start(
        self, bounds: Bounds, subscribe: Subscribe, decode: Callable[[int, bytes], StoredEvent]
    ) -> None:
        """Holds what is stored from now on: `subscribe(first, callback)` opens the tail's consumer at the
        stream sequence `first`, handing each message to `callback`."""
        head, pruned = await bounds()
        self._pruned = pruned
        self.recent = RecentEvents(head, pruned, self._capacity, self._max_bytes)

        async def received(msg: Any) -> None:
            self._received(int(msg.metadata.sequence.stream), msg.headers, msg.data, decode)

        self._sub = await subscribe(head + 1, received)
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._keep_up(bounds, subscribe, received), name="jetstream-tail")]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()

    def holds(self, position: int) -> bool:
        """Whether every event after `position` that the stream holds is held here too."""
        return self.recent is not None and self.recent.holds(position)

    def published(self, stored: StoredEvent) -> None:
        """This process's own publish, acknowledged: held at once when it follows on from what was taken in
        (an event in parts never does: its cursor is its last part's)."""
        if self.recent is not None and stored.cursor == max(self.recent.head, self._seen) + 1:
            self._add(self.recent, stored)

    def _add(self, recent: RecentEvents, stored: StoredEvent) -> None:
        if self._retention.events:
            self._pruned = max(self._pruned, stored.cursor - self._retention.events)
        recent.committed([stored], self._pruned)
        self.signal.notify()

    def _received(
        self,
        cursor: int,
        headers: Mapping[str, str] | None,
        data: bytes,
        decode: Callable[[int, bytes], StoredEvent],
    ) -> None:
        recent = self.recent
        assert recent is not None
        seen = max(recent.head, self._seen)
        if cursor <= seen:
            return  # held already (this process published it)
        if cursor != seen + 1:  # a gap: what lay between is gone from the stream
            self._pruned = max(self._pruned, cursor - 1)
            recent = self.recent = RecentEvents(cursor - 1, self._pruned, self._capacity, self._max_bytes)
            self._parts = Parts()
        self._seen = cursor
        payload = self._parts.take(cursor, headers, data)  # an event in parts is held at its last
        if payload is not None:
            self._add(recent, decode(cursor, payload))

    async def _keep_up(self, bounds: Bounds, subscribe: Subscribe, received: Received) -> None:
        """Every CHECK_SECONDS: the stream's pruning point, and whether the tail still follows. A tail held
        behind the stream's head over two checks in a row (its consumer was lost: the server restarted or
        dropped it) is opened again after what it holds, so caught-up subscribers never wait on a dead one."""
        stalled_at, stalls = -1, 0
        while True:
            await asyncio.sleep(CHECK_SECONDS)
            recent = self.recent
            try:
                head, pruned = await bounds()
            except Exception:  # the server is away: the next check
                continue
            if recent is None:
                continue
            if pruned > self._pruned:
                self._pruned = pruned
                recent.committed([], pruned)
            held = recent.head
            stalls = stalls + 1 if head > held and held == stalled_at else 0
            stalled_at = held
            if stalls >= 2:
                stalls = 0
                with contextlib.suppress(Exception):
                    await self._sub.unsubscribe()
                self._seen, self._parts = held, Parts()  # an event in parts after `held` is read again
                with contextlib.suppress(Exception):
                    self._sub = await subscribe(held + 1, received)
