"""Subscribe (R33): a filtered stream read from the event log at the subscriber's own pace.

Each subscription reads at its own pace (storage/telemetry/eventlog.py: the SQL log from its recent-events
cache or the database, JetStream through a consumer of its own), so a slow subscriber holds up neither the
writers nor the other subscribers. A subscriber whose position falls behind retention is refused
OUT_OF_RANGE (CURSOR_EXPIRED with `oldest_cursor`), never silently skipped.

The stream's answers go out already encoded: an event's bytes are made once, by the first subscription that
sends it, and every other subscription the event reaches sends the same bytes (the call interceptor passes
bytes through as they are).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from ggmodules.core.heartbeats import heartbeat_seconds
from ggmodules.core.telemetry.streams import StreamFilter
from ggmodules.storage.telemetry.eventlog import EventLog, Heartbeat
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb
from ggmodules.wire.telemetry import heartbeat, stream_event_bytes


async def subscribe(log: EventLog, request: pb.SubscribeRequest) -> AsyncIterator[bytes]:
    """The serialized SubscribeResponse messages of one subscription."""
    where = StreamFilter.of(request.run_id, request.agent_id)
    idle = heartbeat_seconds(request.heartbeat_ms)
    async for item in log.subscribe(where, request.after_cursor, idle):
        if isinstance(item, Heartbeat):
            yield heartbeat(item.cursor).SerializeToString()
        else:
            for stored in item:
                yield stream_event_bytes(stored)
