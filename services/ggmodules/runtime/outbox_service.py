"""OutboxService.WatchOutbox (ggmodules.internal.v1, on a service credential only) for any service with a
telemetry outbox (ModuleStore, Registry).

The stream sends every event after the watcher's `after_origin_seq`, in origin_seq order, in batches of at
most `BATCH` events and `MAX_BATCH_BYTES` (storage/outbox.py; one event larger than that goes alone), then
waits on the service's commit signal for new ones, and sends a heartbeat (an empty batch with the head)
when idle. On PostgreSQL the signal also hears the commits of the service's other replicas (LISTEN/NOTIFY on
the outbox table, storage/commits.py CommitListener), so a watcher on one replica gets another replica's
events at once, not at its next heartbeat.

Commit order versus key order: on SQLite one writer at a time means origin_seq values commit in order. On
PostgreSQL they can commit out of order, so the stream sends only as far as the outbox is final
(storage/outbox_frontier.py): nothing is skipped and nothing waits on a clock. While numbers past the
frontier are outstanding, the stream looks again every `HELD_RECHECK_SECONDS`: the transaction holding
them may be another process's, whose end no commit signal of this one announces.

On PostgreSQL a page is one round trip (the frontier, the page and the pruning point pipelined,
storage/outbox_pipelined.py). ModuleStore's outbox numbers its stream seqs when read
(storage/outbox_sequencing.py): it is read through Outbox.read, in a transaction of the service's writing;
on PostgreSQL in two round trips on a connection kept out of the pool (storage/outbox_numbering.py). A
caught-up watcher's page is numbered in memory by one statement on no transaction (on PostgreSQL with the
frontier's, in one round trip), sent, and its numbers stored after the send (storage/outbox_ahead.py): no
transaction between a commit and its events' way out. On PostgreSQL the commit that woke it read for it,
in the round trip of its COMMIT (storage/outbox_commit_read.py).

AckOutbox records a follower's durable position (storage/outbox_pruning.py); the service's Housekeeper
(runtime/housekeeping.py) prunes below every known follower's position less a margin. A watcher positioned
below what was pruned is refused OUT_OF_RANGE (OUTBOX_PRUNED), checked after each page is read.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import grpc
from sqlalchemy.engine import Connection, Engine

from ggmodules.common.v1 import event_pb2
from ggmodules.common.v1 import outbox_service_pb2 as pb
from ggmodules.core.heartbeats import heartbeat_seconds
from ggmodules.core.modules import pages
from ggmodules.internal.v1 import outbox_service_pb2 as internal_pb
from ggmodules.internal.v1 import outbox_service_pb2_grpc as pb_grpc
from ggmodules.storage.commits import CommitSignal
from ggmodules.storage.contention import DEFAULT, retrying
from ggmodules.storage.kept import KeptConnection
from ggmodules.storage.outbox import Outbox, OutboxFeed, OutboxPage
from ggmodules.storage.outbox_ahead import Ahead
from ggmodules.storage.outbox_commit_read import CommitReads
from ggmodules.storage.outbox_numbering import NumberingFeed
from ggmodules.storage.outbox_pipelined import PipelinedFeed
from ggmodules.storage.outbox_pruning import OutboxPositions

SERVICE_NAME = internal_pb.DESCRIPTOR.services_by_name["OutboxService"].full_name
BATCH = 500
HELD_RECHECK_SECONDS = 0.02

# Runs `read(conn)` on a connection of the service's database and returns what it returned.
Reading = Callable[[Callable[[Connection], OutboxPage]], OutboxPage]
# Runs a synchronous call for the event loop: inline, or on a worker thread.
Run = Callable[..., Awaitable[Any]]
# Runs `write(conn)` in one committed transaction of the service's database.
Writing = Callable[[Callable[[Connection], Any]], Any]
# SQLite, an outbox numbered when read: a caught-up watcher's page numbered in memory (after, limit), or None;
# and what stores its numbers once it was sent (storage/outbox_ahead.py).
ReadAhead = Callable[[int, int], tuple[OutboxPage, Ahead] | None]
Keep = Callable[[Ahead], None]
# The follower name Telemetry's relays, and an origin relaying itself, acknowledge under: one log, one
# position, whoever relays into it.
RELAY_FOLLOWER = "telemetry"
# The call metadata in which a follower names the event log it stores into (JetStreamLog.identity).
EVENT_LOG_HEADER = "ggmodules-event-log"


class Relayed(Protocol):
    """What WatchOutbox needs of an origin relay (runtime/origin_relay.py)."""

    identity: str

    def positions(self, heartbeat: float) -> AsyncIterator[pb.WatchOutboxResponse]: ...


def _named_log(context: grpc.aio.ServicerContext) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == EVENT_LOG_HEADER:
            return str(value)
    return ""


class OutboxServicer(pb_grpc.OutboxServiceServicer):
    def __init__(
        self,
        outbox: Outbox,
        reading: Reading,
        committed: CommitSignal,
        run: Run,
        positions: OutboxPositions,
        writing: Writing,
        *,
        kept: KeptConnection | None = None,
        ahead: tuple[ReadAhead, Keep] | None = None,
        commit_reads: CommitReads | None = None,
    ) -> None:
        """`kept`: a connection kept out of the pool (autocommit) for the reads of an outbox numbered when
        read, on PostgreSQL (storage/outbox_numbering.py); `commit_reads`: there, the readings this process's
        commits send for its caught-up watchers (storage/outbox_commit_read.py). `ahead`: on SQLite, how a
        caught-up watcher of such an outbox reads its page numbered in memory and stores the numbers after
        sending it."""
        self._outbox = outbox
        self._reading = reading
        self._committed = committed
        self._run = run
        self._positions = positions
        self._writing = writing
        self._kept = kept
        self._ahead = ahead
        self._commit_reads = commit_reads
        # An origin publishing its own events to an event log (runtime/origin_relay.py), set once built.
        self.relay: Relayed | None = None

    def register(self, server: grpc.aio.Server) -> None:
        pb_grpc.add_OutboxServiceServicer_to_server(self, server)

    async def WatchOutbox(
        self, request: pb.WatchOutboxRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.WatchOutboxResponse]:
        heartbeat = heartbeat_seconds(request.heartbeat_ms)
        after = pages.after("after_origin_seq", request.after_origin_seq)
        relay = self.relay
        if relay is not None and _named_log(context) == relay.identity:
            # The follower stores into the log this origin publishes to itself: it is told how far that
            # is, not sent the events (runtime/origin_relay.py).
            async for position in relay.positions(heartbeat):
                yield position
            return
        async for events, head in self.feed(after, heartbeat):
            yield pb.WatchOutboxResponse(events=events, head_origin_seq=head)

    async def feed(
        self, after: int, heartbeat: float
    ) -> AsyncGenerator[tuple[list[event_pb2.Event], int], None]:
        """The outbox's events after `after`, batch by batch as they commit, each with the outbox's head;
        an empty batch when `heartbeat` seconds passed with nothing to send. WatchOutbox's stream, and what
        an origin relay publishes (runtime/origin_relay.py)."""
        feed = OutboxFeed(self._outbox)
        pipelined = PipelinedFeed(self._outbox, self._positions)
        # ModuleStore's outbox numbers its stream seqs when read (storage/outbox_sequencing.py): the
        # pipelined read would pass over that, so it is read through Outbox.read, or on PostgreSQL in
        # two round trips (storage/outbox_numbering.py).
        numbered_when_read = self._outbox.sequenced
        numbering = (
            NumberingFeed(self._outbox, self._positions, self._kept, self._commit_reads)
            if numbered_when_read and self._kept is not None
            else None
        )
        last_sent = time.monotonic()
        while True:
            seen = self._committed.version
            ahead = kept = None
            if numbering is not None:  # caught up: numbered in memory, the numbers stored after the send
                got = numbering.from_commit(after, BATCH)  # read by the commit that woke it, if any
                page, kept = got if got is not None else await self._run(numbering.read_ahead, after, BATCH)
            elif numbered_when_read and self._ahead is not None and (got := self._ahead[0](after, BATCH)):
                # SQLite, caught up: numbered in memory, sent, then the numbers stored (no transaction
                # between a commit and its events' way to the follower)
                page, ahead = got
            elif numbered_when_read:  # Outbox.read numbers and reads, in a transaction
                page = await self._run(
                    self._writing, lambda conn, after=after: self._read(feed, None, conn, after)
                )
            else:
                page = await self._run(
                    self._reading, lambda conn, after=after: self._read(feed, pipelined, conn, after)
                )
            if page.events:
                yield page.events, page.head
                if ahead is not None and self._ahead is not None:
                    self._ahead[1](ahead)
                if kept is not None and numbering is not None:
                    await self._run(numbering.keep, kept)
                after, last_sent = page.events[-1].origin_seq, time.monotonic()
                if page.more:
                    continue
            idle_left = heartbeat - (time.monotonic() - last_sent)
            if idle_left <= 0:
                yield [], max(page.head, after)
                last_sent, idle_left = time.monotonic(), heartbeat
            with numbering.waiting() if numbering is not None else contextlib.nullcontext():
                await self._committed.wait(
                    seen, min(idle_left, HELD_RECHECK_SECONDS) if page.held else idle_left
                )

    def _read(
        self, feed: OutboxFeed, pipelined: PipelinedFeed | None, conn: Connection, after: int
    ) -> OutboxPage:
        if pipelined is not None and conn.dialect.name == "postgresql":  # frontier, page, pruning at once
            return pipelined.read(conn, after, BATCH)
        page = feed.read(conn, after, BATCH)
        return self._positions.check(conn, after, page)  # after the rows: a prune between the two is seen

    async def AckOutbox(
        self, request: pb.AckOutboxRequest, context: grpc.aio.ServicerContext
    ) -> pb.AckOutboxResponse:
        follower, seq = request.follower, request.durable_origin_seq
        await self._run(self._writing, lambda conn: self._positions.ack(conn, follower, seq))
        return pb.AckOutboxResponse()


def engine_reading(engine: Engine) -> Reading:
    """Reads on a connection of `engine`'s pool (no unit of work, so no commit is signalled)."""

    def reading(read: Callable[[Connection], OutboxPage]) -> OutboxPage:
        with engine.connect() as conn:
            return read(conn)

    return reading


def engine_writing(engine: Engine) -> Writing:
    """Runs a write in its own transaction of `engine`'s pool, again when it loses to a concurrent one."""

    def writing(write: Callable[[Connection], Any]) -> Any:
        def attempt() -> Any:
            with engine.begin() as conn:
                return write(conn)

        return retrying(attempt, DEFAULT)

    return writing
