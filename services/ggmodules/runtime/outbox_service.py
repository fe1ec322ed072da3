"""OutboxService.WatchOutbox for any service with a telemetry outbox (ModuleStore, Registry).

The stream sends every event after the watcher's `after_origin_seq` in batches, then waits on the service's
commit signal for new ones, and sends a heartbeat (an empty batch with the head) when idle.

Commit order versus key order: on SQLite one writer at a time means origin_seq values commit in order. On
PostgreSQL a sequence value is taken when the row is inserted, so seq 7 can commit before seq 6 (or seq 6 can
be rolled back and never appear). The watcher therefore only sends the contiguous run after its position and
holds at a hole until the hole fills; a hole still open after `GAP_GRACE_SECONDS` is taken to be a rolled-back
insert and passed over (transactions here last milliseconds).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
from sqlalchemy.engine import Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.common.v1 import outbox_service_pb2 as pb
from ggmodules.common.v1 import outbox_service_pb2_grpc as pb_grpc
from ggmodules.storage.commits import CommitSignal
from ggmodules.storage.outbox import Outbox

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["OutboxService"].full_name
BATCH = 500
DEFAULT_HEARTBEAT_MS = 1000
GAP_GRACE_SECONDS = 5.0

# (after_origin_seq, limit) -> (events in origin_seq order, head origin_seq)
ReadOutbox = Callable[[int, int], Awaitable[tuple[list[event_pb2.Event], int]]]


class OutboxServicer(pb_grpc.OutboxServiceServicer):
    def __init__(self, read: ReadOutbox, committed: CommitSignal, *, contiguous: bool) -> None:
        self._read = read
        self._committed = committed
        # False on SQLite, where no hole can be in flight.
        self._contiguous = contiguous

    def register(self, server: grpc.aio.Server) -> None:
        pb_grpc.add_OutboxServiceServicer_to_server(self, server)

    async def WatchOutbox(
        self, request: pb.WatchOutboxRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.WatchOutboxResponse]:
        after = max(request.after_origin_seq, 0)
        heartbeat = (request.heartbeat_ms if request.heartbeat_ms > 0 else DEFAULT_HEARTBEAT_MS) / 1000
        holes = Holes(GAP_GRACE_SECONDS)
        last_sent = time.monotonic()
        while True:
            seen = self._committed.version
            events, head = await self._read(after, BATCH)
            ready = holes.ready(after, events) if self._contiguous else events
            if ready:
                yield pb.WatchOutboxResponse(events=ready, head_origin_seq=head)
                after, last_sent = ready[-1].origin_seq, time.monotonic()
                if len(events) == BATCH:
                    continue
            held = len(ready) < len(events)
            idle_left = heartbeat - (time.monotonic() - last_sent)
            if idle_left <= 0:
                yield pb.WatchOutboxResponse(head_origin_seq=max(head, after))
                last_sent, idle_left = time.monotonic(), heartbeat
            await self._committed.wait(seen, min(holes.retry_in(), idle_left) if held else idle_left)


class Holes:
    """Which events after a position may be sent: holds at a hole in origin_seq until it fills or ages out."""

    def __init__(self, grace: float) -> None:
        self._grace = grace
        self._first_seen: dict[int, float] = {}

    def ready(self, after: int, events: list[event_pb2.Event]) -> list[event_pb2.Event]:
        now = time.monotonic()
        expected, out = after + 1, list[event_pb2.Event]()
        for ev in events:
            while ev.origin_seq > expected:
                since = self._first_seen.setdefault(expected, now)
                if now - since < self._grace:
                    return out
                expected += 1  # a rolled-back insert: never coming
            out.append(ev)
            expected = ev.origin_seq + 1
        self._first_seen = {seq: t for seq, t in self._first_seen.items() if seq >= expected}
        return out

    def retry_in(self) -> float:
        if not self._first_seen:
            return self._grace
        oldest = min(self._first_seen.values())
        return max(0.01, self._grace - (time.monotonic() - oldest))


def watch_outbox(
    read: Callable[[int, int], tuple[list[event_pb2.Event], int]],
    committed: CommitSignal,
    run: Callable[..., Awaitable[tuple[list[event_pb2.Event], int]]],
    *,
    contiguous: bool,
) -> OutboxServicer:
    """An OutboxService over a synchronous `read(after, limit)`, run by `run` (inline or on a thread)."""

    async def read_async(after: int, limit: int) -> tuple[list[event_pb2.Event], int]:
        return await run(read, after, limit)

    return OutboxServicer(read_async, committed, contiguous=contiguous)


def outbox_reader(engine: Engine, outbox: Outbox) -> Callable[[int, int], tuple[list[event_pb2.Event], int]]:
    """A plain read of `outbox` (no unit of work, so no commit is signalled)."""

    def read(after: int, limit: int) -> tuple[list[event_pb2.Event], int]:
        with engine.connect() as conn:
            return outbox.read(conn, after, limit)

    return read
