"""An origin publishing its own outbox to Telemetry's event log on NATS JetStream (issue 9: one hop shorter
between a write and its subscribers).

Started when ModuleStore is given the log's URL (`--event-log nats://...`, the same URL as Telemetry's).
Without it, Telemetry's relays (server/telemetry/ingestion.py) take the events over WatchOutbox and publish
them; with it, the origin does what such a relay does, from inside:
- it follows its own outbox (OutboxServicer.feed, the caught-up path of WatchOutbox) from the position
  relays last acknowledged, and publishes each event on the subject and with the dedupe id Telemetry's log
  uses (storage/jetstream_names.py), each acknowledged by JetStream before the next: a failure never leaves
  a later event stored before an earlier one, and a publish repeated by another relay (a replica, or a
  Telemetry relay) is dropped by JetStream as a duplicate;
- it acknowledges what is stored under the relays' follower name ("telemetry", AckOutbox's position), at
  most every ACK_EVERY_SECONDS, so the outbox prunes below it and a restart resumes there; what it
  published past that before a kill -9 is dropped by JetStream as duplicates, or, past the stream's
  duplicate window, found in the stream and passed over (storage/jetstream_resume.py);
- a Telemetry relay that names the same log (WatchOutbox's `ggmodules-event-log` metadata) is told how far
  the origin has published (`relayed_origin_seq`) instead of being sent the events, and moves its own
  position past them without publishing them again.
When the log cannot be reached the relay retries with a bounded backoff; the events wait in the outbox,
which is never pruned past what was acknowledged.

The stream itself is Telemetry's to make and to bound (storage/telemetry/jetstream.py): until it exists,
publishing fails and is retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

import structlog
from sqlalchemy.engine import Connection

from ggmodules.common.v1 import event_pb2
from ggmodules.common.v1 import outbox_service_pb2 as pb
from ggmodules.runtime.outbox_service import RELAY_FOLLOWER
from ggmodules.storage.commits import CommitSignal
from ggmodules.storage.jetstream_names import JetStreamLog
from ggmodules.storage.jetstream_resume import Resume

HEARTBEAT_SECONDS = 1.0
ACK_EVERY_SECONDS = 0.25
PUBLISH_TIMEOUT = 10.0
BACKOFF_MIN, BACKOFF_MAX = 0.05, 2.0
CLOSE_SECONDS = 5.0

# The outbox's events after a position, batch by batch (OutboxServicer.feed).
Feed = Callable[[int, float], AsyncGenerator[tuple[list[event_pb2.Event], int], None]]
# Runs `fn(conn)` in a committed transaction of the origin's database, off the event loop when it must be.
Writing = Callable[[Callable[[Connection], Any]], Awaitable[Any]]


class OriginRelay:
    def __init__(
        self,
        url: str,
        origin: str,
        feed: Feed,
        positions: Any,
        writing: Writing,
        log: structlog.typing.FilteringBoundLogger,
    ) -> None:
        """`positions`: the outbox's OutboxPositions (its followers' acknowledged positions)."""
        self.target = JetStreamLog.of(url)
        self._resume = Resume(self.target)
        self.identity = self.target.identity
        self._origin = origin
        self._feed = feed
        self._positions = positions
        self._writing = writing
        self._log = log.bind(relay=origin, stream=self.target.stream)
        self._nc: Any = None
        self._js: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        # The highest origin_seq known stored in the log, the outbox's newest, and what moves with them.
        self.published = 0
        self.head = 0
        self.moved = CommitSignal()
        self._acked = 0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._relay_forever(), name=f"relay-{self._origin}"),
            loop.create_task(self._acks_forever(), name=f"relay-acks-{self._origin}"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._ack(), CLOSE_SECONDS)
        if self._nc is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._nc.close(), CLOSE_SECONDS)

    # ---- publishing -------------------------------------------------------------------------------------

    async def _relay_forever(self) -> None:
        delay = BACKOFF_MIN
        while True:
            try:
                if self._js is None:
                    self._nc = await self.target.connect()
                    self._js = self._nc.jetstream()
                await self._relay()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the log or the database is away: the events wait in the outbox
                self._log.info("relaying to the event log failed", error=type(err).__name__, retry_in=delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX)

    async def _relay(self) -> None:
        acked = await self._writing(lambda conn: self._positions.followers(conn).get(RELAY_FOLLOWER, 0))
        after = max(self.published, int(acked))
        self.published = max(self.published, after)
        async with contextlib.aclosing(self._feed(after, HEARTBEAT_SECONDS)) as feed:
            async for events, head in feed:
                self.head = max(self.head, head)
                if events:  # what it published past `acked` before a kill -9 (storage/jetstream_resume.py)
                    await self._resume.look(self._js, self._origin, events[0])
                for event in events:
                    await self._resume.publish(self._origin, event, functools.partial(
                        self.target.publish, self._nc, self._js, event, event.SerializeToString(),
                        PUBLISH_TIMEOUT))  # fmt: skip
                    self.published = event.origin_seq
                self.moved.notify()

    # ---- acknowledging ----------------------------------------------------------------------------------

    async def _acks_forever(self) -> None:
        while True:
            seen = self.moved.version
            if self.published > self._acked:
                try:
                    await self._ack()
                except Exception as err:  # the next round acknowledges it
                    self._log.info("acknowledging the relayed position failed", error=type(err).__name__)
            await asyncio.sleep(ACK_EVERY_SECONDS)
            await self.moved.wait(seen, HEARTBEAT_SECONDS)

    async def _ack(self) -> None:
        published = self.published
        if published > self._acked:
            await self._writing(lambda conn: self._positions.ack(conn, RELAY_FOLLOWER, published))
            self._acked = published

    # ---- WatchOutbox for a relay of the same log --------------------------------------------------------

    async def positions(self, heartbeat: float) -> AsyncIterator[pb.WatchOutboxResponse]:
        """How far this origin has published: when it moved, at most every ACK_EVERY_SECONDS (the follower
        only acknowledges and saves it that often: a message per event would cost this origin's loop a send
        per write), and at least every `heartbeat` seconds."""
        told, last = -1, 0.0
        while True:
            seen = self.moved.version
            published = self.published
            if published != told or time.monotonic() - last >= heartbeat:
                yield pb.WatchOutboxResponse(
                    head_origin_seq=max(self.head, published), relayed_origin_seq=published
                )
                told, last = published, time.monotonic()
                await asyncio.sleep(ACK_EVERY_SECONDS)
                if self.moved.version != seen:
                    continue
            await self.moved.wait(seen, max(heartbeat - (time.monotonic() - last), 0.0))
