"""After a relay starts, what of an origin's events the JetStream log already holds past the position saved.

A relay (Telemetry's, storage/telemetry/jetstream.py; an origin's own, runtime/origin_relay.py) saves how far
it published only every fraction of a second, off the events' path. Killed in between, it starts again from
the saved position and publishes the events after it a second time. JetStream drops such a publish as a
duplicate (same Nats-Msg-Id) only within the stream's duplicate window, 2 minutes unless the URL sets
`duplicate_window`. A relay started again later than that would store those events twice, and every
subscriber would get them twice.

So before it publishes the first events after a start (or after a failed publish), a relay's `Resume`
looks. An event is published only after it was committed, so none of those the relay might already have
published is older than the first one's commit time (`since`, the event's `time`):
- while the duplicate window still reaches back to `since` (less a margin for the clocks of the origin and
  the NATS server), JetStream drops every repeat itself, and nothing is read;
- otherwise it reads the headers of what the stream stored from then on (a headers-only consumer: no payload
  crosses) and keeps the dedupe ids of the origin's events stored whole there. The relay passes over its
  events with those ids, until it publishes one that was not there (an origin publishes in order, so none
  after it was). Ids, not numbers: an origin whose database was made anew numbers from 1 again, in runs of
  its own, on the same stream. An event published only in part (storage/jetstream_parts.py) does not
  count: the relay publishes it again from its first part, and readers drop the unfinished one.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import structlog
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from ggmodules.common.v1 import event_pb2
from ggmodules.storage.jetstream_names import JetStreamLog, dedupe_id
from ggmodules.storage.jetstream_parts import DEDUPE_HEADER, PART_HEADER

# How far the clocks of an origin (its events' commit times) and of the NATS server (the stream's) may differ.
CLOCK_SKEW_SECONDS = 5.0
# NATS's duplicate window when a stream was made without one.
DEFAULT_WINDOW_SECONDS = 120.0
FETCH = 1000
FETCH_TIMEOUT = 5.0
T = TypeVar("T")
_log = structlog.get_logger("ggmodules.jetstream.resume")


class Resume:
    """One relay's look at the stream, per origin: taken before its first publish after it started or after
    a publish failed (the failed one may have been stored, its acknowledgement lost)."""

    def __init__(self, log: JetStreamLog) -> None:
        self._log = log
        self._looked: set[str] = set()
        self._present: dict[str, set[str]] = {}  # origin -> ids of its events found in the stream

    async def look(self, js: Any, origin: str, first: event_pb2.Event) -> None:
        """Before publishing `first` and the events after it, unless looked already."""
        if origin not in self._looked:
            self._present[origin] = await published_since(js, self._log, origin, commit_time(first))
            self._looked.add(origin)

    async def publish(
        self, origin: str, event: event_pb2.Event, publish: Callable[[], Awaitable[T]]
    ) -> T | None:
        """`publish()`'s result, or None without calling it when the stream was found holding `event`."""
        present = self._present.get(origin)
        if present and dedupe_id(event) in present:
            return None
        self._looked.discard(origin)  # until it is acknowledged
        result = await publish()
        self._looked.add(origin)
        self._present.pop(origin, None)  # published in order: none after it was there
        return result


async def published_since(js: Any, log: JetStreamLog, origin: str, since: float) -> set[str]:
    """The dedupe ids of `origin`'s events the stream holds whole among the messages it stored since `since`
    (Unix time, less CLOCK_SKEW_SECONDS); none read when the stream's duplicate window still covers
    everything published since then (only the stream's info is asked)."""
    info = await js.stream_info(log.stream)
    window = float(info.config.duplicate_window or DEFAULT_WINDOW_SECONDS)
    if time.time() - since + CLOCK_SKEW_SECONDS < window:
        return set()
    last = int(info.state.last_seq)
    if not last:
        return set()
    start = datetime.fromtimestamp(max(since - CLOCK_SKEW_SECONDS, 0.0), tz=UTC)
    psub = await js.pull_subscribe(
        f"{log.prefix}.>",
        durable=None,
        stream=log.stream,
        config=ConsumerConfig(
            deliver_policy=DeliverPolicy.BY_START_TIME,
            opt_start_time=start,
            headers_only=True,
            ack_policy=AckPolicy.NONE,
            inactive_threshold=30.0,
        ),
    )
    found: set[str] = set()
    started, read = time.monotonic(), 0
    try:
        pending = int((await psub.consumer_info()).num_pending)
        while pending:
            msgs = await psub.fetch(min(FETCH, pending), timeout=FETCH_TIMEOUT)
            for msg in msgs:
                read += 1
                ident = whole_event_of(origin, msg.headers)
                if ident:
                    found.add(ident)
                pending = int(msg.metadata.num_pending)
                if int(msg.metadata.sequence.stream) >= last:  # what was stored when asked is enough
                    pending = 0
                    break
            if not msgs:
                break
    finally:
        await psub.unsubscribe()
    _log.info("read the stream for what a relay published before it started", origin=origin,
              messages=read, found=len(found), seconds=round(time.monotonic() - started, 3))  # fmt: skip
    return found


def whole_event_of(origin: str, headers: Mapping[str, str] | None) -> str:
    """The dedupe id of the event a message completes (a whole event, or an event's last part), when it is
    `origin`'s; else "". The id is `<origin>:<run_id>:<origin_seq>` (jetstream_names.dedupe_id), with `#k`
    for part k."""
    if not headers:
        return ""
    ident = headers.get(DEDUPE_HEADER, "")
    part = headers.get(PART_HEADER)
    if part is not None:
        k, _, n = part.partition("/")
        if k != n:
            return ""
        ident = ident.rsplit("#", 1)[0]
    return ident if ident.partition(":")[0] == origin else ""


def commit_time(event: event_pb2.Event) -> float:
    """An event's `time` (when its origin committed it) as Unix time; 0.0 when unset (read from the start)."""
    return float(event.time.seconds) + float(event.time.nanos) / 1e9
