"""Subscribe (R33): a filtered stream read from the log at the subscriber's own pace.

Each subscription reads at its own pace, woken by the repository's commit signal: from the newest events held
in memory once it has caught up, from the database while it is further behind. So a slow subscriber holds up
neither the writers nor the other subscribers. A subscriber whose position falls behind retention is
refused OUT_OF_RANGE (CURSOR_EXPIRED with `oldest_cursor`), never silently skipped.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from ggmodules.core.heartbeats import heartbeat_seconds
from ggmodules.core.telemetry.streams import StreamFilter, check_retained, start_position
from ggmodules.storage.telemetry import TelemetryRepository
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from ggmodules.wire.telemetry import heartbeat, stream_event

BATCH = 500


async def subscribe(
    repo: TelemetryRepository, request: pb.SubscribeRequest
) -> AsyncIterator[pb.SubscribeResponse]:
    where = StreamFilter.of(request.run_id, request.agent_id)
    idle = heartbeat_seconds(request.heartbeat_ms)
    _, pruned = await asyncio.to_thread(repo.head)
    position = start_position(request.after_cursor, pruned)
    last_sent = time.monotonic()
    while True:
        seen = repo.committed.version
        got = repo.recent.read(where, position, BATCH)
        if got is None:  # further behind than memory holds: read the log
            got = await asyncio.to_thread(repo.read, where, position, BATCH)
        check_retained(position, got.pruned_through)
        for stored in got.events:
            yield stream_event(stored)
        if got.events:
            last_sent = time.monotonic()
        if got.full:
            position = got.events[-1].cursor
            continue
        # Every matching event up to the head was in this read: later reads start there, so an idle filtered
        # stream is not mistaken for one that fell behind retention.
        position = max(position, got.head)
        idle_left = idle - (time.monotonic() - last_sent)
        if idle_left <= 0:
            yield heartbeat(got.head)
            last_sent, idle_left = time.monotonic(), idle
        await repo.committed.wait(seen, idle_left)
