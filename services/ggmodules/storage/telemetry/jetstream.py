"""Telemetry's event log on NATS JetStream (nats-py): selected by `--event-log nats://host:port`.

One stream (default name `GGMODULES_TELEMETRY`, subjects `<prefix>.>`, default prefix `ggmodules.telemetry`)
holds every event, on subject `<prefix>.<run>.<agent>` (each id one subject token, `token()`), payload the
serialized Event. The cursor of an event is its stream sequence. The URL's query may name another stream and
prefix (`nats://127.0.0.1:4222?stream=NAME&prefix=a.b`), so tests and installations can keep logs apart;
several hosts may be given comma-separated (`nats://a:4222,b:4222`).

- Appends carry `Nats-Msg-Id: <origin>:<run_id>:<origin_seq>`: JetStream drops a duplicate within its
  duplicate window, so any number of relays (replicas) may publish the same outbox. The run id is in it
  because an origin's numbers are unique only within one origin database: a ModuleStore started afresh (or
  a second installation on the same stream) numbers from 1 again, and without the run id its first events
  would be dropped as repeats of the old ones for the window's length (runs never share an id). Past the
  window, the resume point (`tel_meta`) and a look at the stream after a start (storage/jetstream_resume.py)
  keep a relay from publishing an event twice. Events of one origin are published in order, each
  acknowledged before the next, so a failure never leaves a later event stored before an earlier one.
- Retention is the stream's: max messages (`Retention.events`), max age (`seconds`), max bytes (`bytes`),
  the oldest discarded first. `pruned_through` is the stream's first sequence minus one.
- Subscribe: a caught-up subscription reads the newest events from memory, held once per process by one
  consumer over the whole stream (jetstream_tail.py). One further behind reads through an ordered push
  consumer of its own, filtered to its subjects, from its cursor until it has caught up with what is held.
  While behind, a gap in sequences is checked against the stream's first sequence, so a position overtaken
  by retention is refused OUT_OF_RANGE, not skipped. An idle stream's heartbeat cursor is how far it has
  looked through the stream (what is held; or its consumer's delivered stream sequence, once nothing is
  pending or undelivered here).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import nats
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, DiscardPolicy, StreamConfig
from nats.js.errors import NotFoundError

from ggmodules.common.v1 import event_pb2
from ggmodules.core.errors import Reason, Unavailable
from ggmodules.core.telemetry.streams import Retention, StreamFilter, check_retained, start_position
from ggmodules.storage.jetstream_names import JetStreamLog, token
from ggmodules.storage.jetstream_parts import Parts
from ggmodules.storage.jetstream_resume import Resume
from ggmodules.storage.telemetry.eventlog import BATCH, Heartbeat, StreamItem
from ggmodules.storage.telemetry.jetstream_tail import At, Tail
from ggmodules.storage.telemetry.recent import Decoded, StoredEvent, StreamRead
from ggmodules.storage.telemetry.repository import TelemetryRepository

PUBLISH_TIMEOUT = 10.0
CLOSE_SECONDS = 5.0
SAVE_EVERY_SECONDS = 0.25
# What a subscription may hold in memory ahead of its gRPC stream before JetStream's flow control stalls it.
PENDING_MSGS = 20_000


@contextmanager
def _reachable(servers: Sequence[str], doing: str) -> Iterator[None]:
    """NATS errors (server away, request timed out) become UNAVAILABLE for the caller: nothing was changed
    and a retry, or a resumed subscription, is safe."""
    try:
        yield
    except (nats.errors.Error, TimeoutError) as err:
        raise Unavailable(
            f"Telemetry's event log (NATS JetStream at {', '.join(servers)}) did not answer while {doing} "
            f"({type(err).__name__}); retry, or resume the subscription from its last cursor",
            reason=Reason.UNAVAILABLE,
            metadata={"event_log": "jetstream"},
        ) from None


class JetStreamEventLog:
    kind = "jetstream"

    def __init__(self, url: str, repo: TelemetryRepository, retention: Retention) -> None:
        target = JetStreamLog.of(url)
        self.servers = list(target.servers)
        self.stream, self.prefix = target.stream, target.prefix
        # An origin publishing its own events to this stream (runtime/origin_relay.py) knows it by this.
        self.identity: str | None = target.identity
        self._target = target
        self.repo = repo
        self.retention = retention
        self._nc: Any = None
        self._js: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # origin -> the highest origin_seq published (by this process, or read from tel_meta).
        self._highest: dict[str, int] = {}
        self._resume = Resume(target)
        # Positions published but not yet written to tel_meta, written by `_keep_positions` off the path
        # of the events (a write per batch would add a database commit to every event's way to subscribers).
        self._unsaved: dict[str, int] = {}
        self._saving = asyncio.Event()
        self._saver: asyncio.Task[None] | None = None
        # What the subscriptions received, decoded once for all of them (every subscription's consumer gets
        # its own copy of a message).
        self._decoded = Decoded()
        # The newest events, held once for every caught-up subscription (jetstream_tail.py).
        self._tail = Tail(retention, repo.recent.max_bytes)  # bounded as the SQL log's cache

    # ---- lifecycle --------------------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._nc = await self._target.connect()
        self._js = self._nc.jetstream()
        self._saver = asyncio.get_running_loop().create_task(self._keep_positions(), name="positions")
        config = StreamConfig(
            name=self.stream,
            subjects=[f"{self.prefix}.>"],
            max_msgs=self.retention.events,
            max_age=float(self.retention.max_age_seconds) if self.retention.max_age_seconds else None,
            max_bytes=self.retention.max_bytes or None,
            discard=DiscardPolicy.OLD,
            duplicate_window=self._target.duplicate_window or 0.0,  # 0: NATS's 2 minutes
        )
        try:
            await self._js.stream_info(self.stream)
        except NotFoundError:
            await self._js.add_stream(config)
        else:
            await self._js.update_stream(config)
        await self._tail.start(self.bounds, self._open_tail, self._decoded.get)

    async def _open_tail(self, first: int, received: Callable[[Any], Awaitable[None]]) -> Any:
        return await self._js.subscribe(
            f"{self.prefix}.>",
            stream=self.stream,
            cb=received,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            config=ConsumerConfig(opt_start_seq=first),
            pending_msgs_limit=PENDING_MSGS,
        )

    async def close(self) -> None:
        """Saves the positions not saved yet and disconnects, each within CLOSE_SECONDS."""
        if self._saver is not None:
            self._saver.cancel()
            await asyncio.gather(self._saver, return_exceptions=True)
        with suppress(Exception):
            await asyncio.wait_for(self._tail.stop(), CLOSE_SECONDS)
        with suppress(Exception):
            await asyncio.wait_for(self._save_positions(), CLOSE_SECONDS)
        if self._nc is not None:
            with suppress(Exception):
                await asyncio.wait_for(self._nc.close(), CLOSE_SECONDS)

    async def _keep_positions(self) -> None:
        while True:
            await self._saving.wait()
            self._saving.clear()
            try:
                await self._save_positions()
            except Exception:  # the database is away: keep them for the next round
                await asyncio.sleep(0.5)
                self._saving.set()
            else:  # what is published meanwhile goes with the next write: one a while, not one an event
                await asyncio.sleep(SAVE_EVERY_SECONDS)

    async def _save_positions(self) -> None:
        unsaved, self._unsaved = self._unsaved, {}
        try:
            for origin, seq in unsaved.items():
                await asyncio.to_thread(self.repo.raise_position, origin, seq)
        except BaseException:
            for origin, seq in unsaved.items():
                self._unsaved[origin] = max(seq, self._unsaved.get(origin, 0))
            raise

    async def reachable(self) -> bool:
        try:
            await asyncio.wait_for(self._js.stream_info(self.stream), 2)
            return True
        except Exception:
            return False

    # ---- writes -----------------------------------------------------------------------------------------

    def subject(self, run_id: str, agent_id: str) -> str:
        return self._target.subject(run_id, agent_id)

    async def _publish(self, event: event_pb2.Event) -> tuple[int, bool]:
        payload = event.SerializeToString()
        ack = await self._target.publish(self._nc, self._js, event, payload, PUBLISH_TIMEOUT)
        seq, duplicate = int(ack.seq), bool(ack.duplicate)
        if not duplicate:
            self._tail.published(StoredEvent(seq, event, len(payload)))
        return seq, duplicate

    async def append(self, origin: str, events: Sequence[event_pb2.Event]) -> int:
        if origin not in self._highest:
            await self.highest_origin_seq(origin)
        fresh = [ev for ev in events if ev.origin_seq > self._highest[origin]]
        if fresh:  # what a relay killed before saving its position published (storage/jetstream_resume.py)
            await self._resume.look(self._js, origin, fresh[0])
        new = 0
        for ev in fresh:
            published = await self._resume.publish(origin, ev, functools.partial(self._publish, ev))
            new += published is not None and not published[1]
            self._highest[origin] = ev.origin_seq
        if fresh:
            self._to_save(origin)
        return new

    async def published_by_origin(self, origin: str, origin_seq: int) -> None:
        """The origin published up to `origin_seq` to this stream itself (runtime/origin_relay.py): the
        resume point moves past them, and is saved with the others."""
        if origin not in self._highest:
            await self.highest_origin_seq(origin)
        if origin_seq > self._highest[origin]:
            self._highest[origin] = origin_seq
            self._to_save(origin)

    def _to_save(self, origin: str) -> None:
        """The origin's position moved: written to tel_meta by `_keep_positions`, off the events' path."""
        self._unsaved[origin] = self._highest[origin]
        self._saving.set()

    async def highest_origin_seq(self, origin: str) -> int:
        """The highest of what tel_meta says (any replica's relay) and what this process published."""
        stored = await asyncio.to_thread(self.repo.highest_origin_seq, origin)
        self._highest[origin] = max(stored, self._highest.get(origin, 0))
        return self._highest[origin]

    def turn_publisher(self) -> Callable[[event_pb2.Event], int] | None:
        loop = self._loop
        assert loop is not None, "start() first"

        def publish(event: event_pb2.Event) -> int:
            with _reachable(self.servers, "storing the turn"):
                future = asyncio.run_coroutine_threadsafe(self._publish(event), loop)
                seq, _ = future.result(PUBLISH_TIMEOUT + 1)
            return seq

        return publish

    # ---- reads ------------------------------------------------------------------------------------------

    def filter_subject(self, where: StreamFilter) -> str:
        if where.agent_id:
            return self.subject(where.run_id, where.agent_id)
        if where.run_id:
            return f"{self.prefix}.{token(where.run_id)}.*"
        return f"{self.prefix}.>"

    async def bounds(self) -> tuple[int, int]:
        with _reachable(self.servers, "reading the stream's bounds"):
            state = (await self._js.stream_info(self.stream)).state
        return int(state.last_seq), max(int(state.first_seq) - 1, 0)

    async def read(self, where: StreamFilter, after: int, limit: int) -> StreamRead:
        with _reachable(self.servers, "reading events"):
            return await self._read(where, after, limit)

    async def _read(self, where: StreamFilter, after: int, limit: int) -> StreamRead:
        head, pruned = await self.bounds()
        if after >= head:
            return StreamRead([], head, False, pruned)
        psub = await self._js.pull_subscribe(
            self.filter_subject(where),
            durable=None,
            stream=self.stream,
            config=ConsumerConfig(
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=after + 1,
                ack_policy=AckPolicy.NONE,
                inactive_threshold=30.0,
            ),
        )
        try:
            pending = int((await psub.consumer_info()).num_pending)
            events: list[StoredEvent] = []
            parts = Parts()
            more = False
            while pending and len(events) < limit:
                msgs = await psub.fetch(min(limit - len(events), pending), timeout=5)
                for msg in msgs:
                    seq = int(msg.metadata.sequence.stream)
                    if seq > head:
                        break
                    payload = parts.take(seq, msg.headers, msg.data)
                    if payload is not None:
                        events.append(StoredEvent(seq, event_pb2.Event.FromString(payload), len(payload)))
                    pending = int(msg.metadata.num_pending)
                if not msgs or int(msgs[-1].metadata.sequence.stream) > head:
                    break
            more = bool(pending) and len(events) == limit
            # Not past an event in parts that is not whole by `head` (read again from before its first part).
            return StreamRead(events, parts.resumable(head), more, pruned)
        finally:
            await psub.unsubscribe()

    async def subscribe(
        self, where: StreamFilter, after_cursor: int, idle: float
    ) -> AsyncIterator[StreamItem]:
        _, pruned = await self.bounds()
        at = At(start_position(after_cursor, pruned))
        with _reachable(self.servers, "following the stream"):
            async for item in self._serve(where, at, idle):
                yield item

    async def _serve(self, where: StreamFilter, at: At, idle: float) -> AsyncIterator[StreamItem]:
        """From the tail's memory while it holds the position (as the SQL log serves from its cache), else
        through a consumer of the subscription's own until it has caught up with the tail."""
        tail = self._tail
        last_sent = time.monotonic()
        while True:
            if not tail.holds(at.position):
                async for item in self._follow(where, at, idle):
                    yield item
                last_sent = time.monotonic()
                continue
            seen = tail.signal.version
            assert tail.recent is not None
            got = tail.recent.read(where, at.position, BATCH)
            if got is None:  # the tail let go of it meanwhile
                continue
            check_retained(at.position, got.pruned_through)
            if got.events:
                yield got.events
                last_sent = time.monotonic()
            if got.full:
                at.position = got.events[-1].cursor
                continue
            at.position = max(at.position, got.head)
            idle_left = idle - (time.monotonic() - last_sent)
            if idle_left <= 0:
                yield Heartbeat(at.position)
                last_sent, idle_left = time.monotonic(), idle
            await tail.signal.wait(seen, idle_left)

    async def _follow(self, where: StreamFilter, at: At, idle: float) -> AsyncIterator[StreamItem]:
        """Through a consumer of the subscription's own, from `at.position`, until it has caught up with
        what the tail holds (`at.position` follows what was sent)."""
        position = at.position
        sub = await self._js.subscribe(
            self.filter_subject(where),
            stream=self.stream,
            ordered_consumer=True,
            deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            config=ConsumerConfig(opt_start_seq=position + 1),
            pending_msgs_limit=PENDING_MSGS,
        )
        behind = True  # until a message says nothing matching is pending
        parts = Parts()  # `position` is the last message seen; `at.position` never inside an event in parts
        last_sent = time.monotonic()
        try:
            while True:
                idle_left = idle - (time.monotonic() - last_sent)
                try:
                    msg = await sub.next_msg(timeout=max(idle_left, 0.001))
                except nats.errors.TimeoutError:
                    position = await self._looked_through(sub, position)
                    at.position = parts.resumable(position)
                    yield Heartbeat(at.position)
                    last_sent = time.monotonic()
                    if self._tail.holds(at.position):
                        return
                    continue
                batch: list[StoredEvent] = []
                while True:
                    seq = int(msg.metadata.sequence.stream)
                    if behind and seq > position + 1:
                        _, pruned = await self.bounds()
                        if position < pruned and batch:
                            yield batch  # what came before the gap, then the refusal
                        check_retained(position, pruned)
                    behind = int(msg.metadata.num_pending) > 0
                    position = seq
                    payload = parts.take(seq, msg.headers, msg.data)
                    if payload is not None:
                        batch.append(self._decoded.get(seq, payload))
                    if len(batch) >= BATCH or sub.pending_msgs == 0:
                        break
                    msg = await sub.next_msg(timeout=None)
                if batch:
                    yield batch
                    last_sent = time.monotonic()
                at.position = parts.resumable(position)
                if not behind and self._tail.holds(at.position):
                    return
        finally:
            with suppress(nats.errors.Error):  # the connection is gone, and the consumer with it
                await sub.unsubscribe()

    async def _looked_through(self, sub: Any, position: int) -> int:
        """How far an idle subscription has seen the whole stream: the consumer's delivered stream sequence
        when nothing matching is pending and nothing delivered waits here (the info answer comes after every
        message sent before it, on the same connection). A consumer the server no longer has (it restarted,
        or lost this connection) ends the stream UNAVAILABLE: the subscriber resumes from its cursor."""
        info = await sub.consumer_info()
        if int(info.num_pending) == 0 and sub.pending_msgs == 0:
            return max(position, int(info.delivered.stream_seq))
        return position
