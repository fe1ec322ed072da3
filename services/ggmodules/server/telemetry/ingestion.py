"""Followers (relays): one task per origin, following its WatchOutbox from the highest origin_seq the event
log holds for it, and appending what arrives to the log.

Events arrive at least once and are stored once (per (origin, origin_seq): on the SQL log, by passing over
what the origin's stored position covers, under the log's write lock; a `Nats-Msg-Id` on JetStream), so any
number of relays, one per Telemetry replica, may follow one origin.
After each batch is durably in the log the follower tells the origin so (OutboxService.AckOutbox, follower
"telemetry"), which lets the origin prune its outbox below that. When the origin cannot be reached, or its
stream goes silent for longer than a few heartbeats, the follower reconnects with a bounded backoff; the
origin keeps working meanwhile and its outbox drains when the link returns.
On JetStream the follower names its log in the call (`ggmodules-event-log`): an origin that publishes its
own events to the same log (runtime/origin_relay.py) then tells it how far that is (`relayed_origin_seq`)
instead of sending the events, and the follower moves its position past them without publishing them.
An origin that pruned past where this relay stood refuses OUT_OF_RANGE (OUTBOX_PRUNED). With several
replicas that is mostly no gap at all: another replica's relay stored those events in the same log and
acknowledged them, and the origin pruned them, between this relay's read of the log's position and its
WatchOutbox reaching the origin (seen in a rolling restart: 833 events refused, every one of them in the log).
So the log's position is read again: if it covers what was pruned, the relay follows on from there; if not
(the origin's database was replaced, or the log's), the gap is real: logged as an error, and following
resumes at the oldest event the origin holds.
"""

from __future__ import annotations

import asyncio

import grpc
import structlog
from google.rpc import error_details_pb2  # type: ignore[import-untyped, unused-ignore]
from grpc_status import rpc_status

from ggmodules.common.v1 import outbox_service_pb2 as pb
from ggmodules.internal.v1 import outbox_service_pb2_grpc as pb_grpc
from ggmodules.runtime.channels import service_channel
from ggmodules.runtime.outbox_service import EVENT_LOG_HEADER, RELAY_FOLLOWER
from ggmodules.runtime.security import INSECURE, Security
from ggmodules.storage.contention import database_unreachable, first_line
from ggmodules.storage.telemetry.eventlog import EventLog

HEARTBEAT_MS = 1000
# A stream with nothing, not even a heartbeat, for this long is taken to be dead.
SILENCE_SECONDS = 5 * HEARTBEAT_MS / 1000
BACKOFF_MIN, BACKOFF_MAX = 0.05, 2.0
# AckOutbox is sent at most this often: the origin only prunes by it, and an ack per batch would cost the
# origin a transaction for every event (on SQLite on its event loop, in the way of the next write).
ACK_EVERY_SECONDS = 0.25
# The name Telemetry's relays report their position under (AckOutbox); one log, one position, however many
# replicas relay into it (an origin relaying itself uses it too).
FOLLOWER_NAME = RELAY_FOLLOWER


class Follower:
    def __init__(
        self,
        origin: str,
        address: str,
        event_log: EventLog,
        log: structlog.typing.FilteringBoundLogger,
        security: Security = INSECURE,
    ) -> None:
        self.origin = origin
        self._security = security
        self.address = address
        self._event_log = event_log
        self._acks = True  # False once the origin answered UNIMPLEMENTED (an older origin)
        self._log = log.bind(origin=origin, address=address)
        self._task: asyncio.Task[None] | None = None
        # The newest durable position not yet reported, and what wakes the task that reports it (off the
        # path of the events: an AckOutbox per batch would hold up the next batch by a round trip).
        self._durable = 0
        self._to_ack = asyncio.Event()
        # For the outbox-lag gauge: the origin's newest origin_seq last heard of, and the highest stored.
        self.head_origin_seq = 0
        self.stored_origin_seq = 0
        self._resume_at = 0  # past a gap the origin reported (see the module doc)
        self._stored_any = False  # whether the current connection stored anything yet

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"follow-{self.origin}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        async with service_channel(self.address, self._security.channel_credentials) as channel:
            stub = pb_grpc.OutboxServiceStub(channel)
            acks = asyncio.get_running_loop().create_task(self._acks_loop(stub), name=f"ack-{self.origin}")
            try:
                await self._follow_forever(stub)
            finally:
                acks.cancel()
                await asyncio.gather(acks, return_exceptions=True)

    async def _follow_forever(self, stub: pb_grpc.OutboxServiceStub) -> None:
        delay = BACKOFF_MIN
        while True:
            self._stored_any = False
            try:
                if await self._follow(stub):
                    delay = BACKOFF_MIN
            except grpc.aio.AioRpcError as err:
                if not await self._past_gap(err):
                    self._log.info("origin unreachable", code=err.code().name, retry_in=delay)
            except TimeoutError:
                self._log.info("origin silent; reconnecting", retry_in=delay)
            except Exception as exc:
                # A link that stored events before it failed was working: it starts again after the
                # shortest pause, so a database that drops connections now and then (a failover, an
                # operator's pg_terminate_backend) holds events back 50 ms each time, not a pause doubled at
                # every loss. Measured with Telemetry's sessions ended 12 times in 8 s: the pause had grown
                # to 2 s, and events waited that long.
                if self._stored_any:
                    delay = BACKOFF_MIN
                if database_unreachable(exc):  # the log's database, not a defect: it is tried again
                    error = first_line(exc)
                    self._log.warning("event log's database unavailable", error=error, retry_in=delay)
                else:
                    self._log.exception("following failed", retry_in=delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_MAX)

    async def _follow(self, stub: pb_grpc.OutboxServiceStub) -> bool:
        """Follows until the stream ends or fails; True if anything arrived."""
        stored = await self._event_log.highest_origin_seq(self.origin)
        self.stored_origin_seq = stored
        after = max(stored, self._resume_at)
        metadata = self._security.call_metadata()
        if self._event_log.identity is not None:  # an origin publishing to the same log says so
            metadata += ((EVENT_LOG_HEADER, self._event_log.identity),)
        call = stub.WatchOutbox(pb.WatchOutboxRequest(after_origin_seq=after, heartbeat_ms=HEARTBEAT_MS),
                                metadata=metadata)
        arrived = False
        try:
            if stored > self._durable:  # a new connection: say where the log stands (after a restart too)
                self._durable = stored
                self._to_ack.set()
            while True:
                async with asyncio.timeout(SILENCE_SECONDS):  # no task of its own per message (wait_for)
                    response = await call.read()
                if response is grpc.aio.EOF:
                    return arrived
                arrived = True
                self.head_origin_seq = max(self.head_origin_seq, response.head_origin_seq)
                stored = 0
                if response.events:
                    await self._event_log.append(self.origin, list(response.events))
                    stored = response.events[-1].origin_seq
                elif response.relayed_origin_seq > self.stored_origin_seq:
                    # The origin published these to this very log itself (runtime/origin_relay.py).
                    await self._event_log.published_by_origin(self.origin, response.relayed_origin_seq)
                    stored = response.relayed_origin_seq
                if stored:
                    self._stored_any = True
                    self._durable = stored
                    self._to_ack.set()
                    self.stored_origin_seq = stored
        finally:
            call.cancel()

    async def _acks_loop(self, stub: pb_grpc.OutboxServiceStub) -> None:
        """Reports the newest durable position whenever it moved, at most every ACK_EVERY_SECONDS (what moves
        meanwhile goes with the next report); a failure is only logged (the next position is reported
        again)."""
        while self._acks:
            await self._to_ack.wait()
            self._to_ack.clear()
            durable = self._durable
            request = pb.AckOutboxRequest(follower=FOLLOWER_NAME, durable_origin_seq=durable)
            try:
                await stub.AckOutbox(
                    request, timeout=SILENCE_SECONDS, metadata=self._security.call_metadata()
                )
            except grpc.aio.AioRpcError as err:
                if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                    self._acks = False
                self._log.info("AckOutbox failed", code=err.code().name, durable_origin_seq=durable)
            await asyncio.sleep(ACK_EVERY_SECONDS)

    async def _past_gap(self, err: grpc.aio.AioRpcError) -> bool:
        """An origin that pruned past where this relay asked to resume: True when that is handled (the next
        connection resumes from the log's position, or after a real gap, logged), False for any other
        refusal."""
        if err.code() != grpc.StatusCode.OUT_OF_RANGE:
            return False
        oldest = _metadata(err).get("oldest_origin_seq", "")
        if not oldest.isdigit():
            return False
        pruned_through = int(oldest) - 1
        stored = await self._event_log.highest_origin_seq(self.origin)
        if stored >= pruned_through:  # another relay stored them: nothing is missing (the module doc)
            self._log.info(
                "origin pruned events another relay had stored; following on from the log",
                stored_origin_seq=stored, pruned_through=pruned_through,
            )
            return True
        self._resume_at = pruned_through
        self._log.error(
            "origin pruned events Telemetry never stored; resuming after the gap",
            stored_origin_seq=stored,
            resume_after=self._resume_at,
            detail=err.details(),
        )
        return True


def _metadata(err: grpc.aio.AioRpcError) -> dict[str, str]:
    status = rpc_status.from_call(err)
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return dict(info.metadata)
    return {}
