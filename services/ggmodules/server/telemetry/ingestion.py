"""Followers: one task per origin, following its WatchOutbox from the highest origin_seq stored for it.

Events arrive at least once and are stored once (unique origin and origin_seq). When the origin cannot be
reached, or its stream goes silent for longer than a few heartbeats, the follower reconnects with a bounded
backoff; the origin keeps working meanwhile and its outbox drains when the link returns.

After a batch is durably stored the follower acknowledges it (AckOutbox, as "telemetry"), at most every
`ACK_SECONDS` and on an idle heartbeat, so the origin may prune what Telemetry holds (issue 14). An origin
that pruned past where Telemetry stands (its database was replaced) refuses OUT_OF_RANGE (OUTBOX_PRUNED):
the follower logs the gap as an error and resumes at the oldest event the origin still holds.
"""

from __future__ import annotations

import asyncio
import time

import grpc
import structlog
from google.rpc import error_details_pb2  # type: ignore[import-untyped, unused-ignore]
from grpc_status import rpc_status

from ggmodules.common.v1 import outbox_service_pb2 as pb
from ggmodules.common.v1 import outbox_service_pb2_grpc as pb_grpc
from ggmodules.runtime.channels import service_channel
from ggmodules.storage.telemetry import TelemetryRepository

HEARTBEAT_MS = 1000
# A stream with nothing, not even a heartbeat, for this long is taken to be dead.
SILENCE_SECONDS = 5 * HEARTBEAT_MS / 1000
BACKOFF_MIN, BACKOFF_MAX = 0.05, 2.0
FOLLOWER = "telemetry"
ACK_SECONDS = 1.0


class Follower:
    def __init__(
        self,
        origin: str,
        address: str,
        repo: TelemetryRepository,
        log: structlog.typing.FilteringBoundLogger,
    ) -> None:
        self.origin = origin
        self.address = address
        self._repo = repo
        self._log = log.bind(origin=origin, address=address)
        self._task: asyncio.Task[None] | None = None
        # For the outbox-lag gauge: the origin's newest origin_seq last heard of, and the highest stored.
        self.head_origin_seq = 0
        self.stored_origin_seq = 0
        self._acked, self._acked_at = -1, 0.0
        self._resume_at = 0  # past a gap the origin reported (see the module doc)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"follow-{self.origin}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        delay = BACKOFF_MIN
        async with service_channel(self.address) as channel:
            stub = pb_grpc.OutboxServiceStub(channel)
            while True:
                try:
                    if await self._follow(stub):
                        delay = BACKOFF_MIN
                except grpc.aio.AioRpcError as err:
                    if not self._past_gap(err):
                        self._log.info("origin unreachable", code=err.code().name, retry_in=delay)
                except TimeoutError:
                    self._log.info("origin silent; reconnecting", retry_in=delay)
                except Exception:
                    self._log.exception("following failed", retry_in=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)

    async def _follow(self, stub: pb_grpc.OutboxServiceStub) -> bool:
        """Follows until the stream ends or fails; True if anything arrived."""
        stored = await asyncio.to_thread(self._repo.highest_origin_seq, self.origin)
        self.stored_origin_seq = stored
        after = max(stored, self._resume_at)
        call = stub.WatchOutbox(pb.WatchOutboxRequest(after_origin_seq=after, heartbeat_ms=HEARTBEAT_MS))
        arrived = False
        try:
            await self._ack(stub, stored, force=True)
            while True:
                response = await asyncio.wait_for(call.read(), SILENCE_SECONDS)
                if response is grpc.aio.EOF:
                    return arrived
                arrived = True
                self.head_origin_seq = max(self.head_origin_seq, response.head_origin_seq)
                if response.events:
                    await asyncio.to_thread(self._repo.ingest, self.origin, list(response.events))
                    after = response.events[-1].origin_seq  # durably stored, with everything before it
                    self.stored_origin_seq = after
                await self._ack(stub, after, force=not response.events)
        finally:
            call.cancel()

    async def _ack(self, stub: pb_grpc.OutboxServiceStub, durable: int, *, force: bool) -> None:
        """Tells the origin everything up to `durable` is stored; at most every ACK_SECONDS unless forced
        (a heartbeat, a new connection), and never the same position twice in a row."""
        if durable <= self._acked or (not force and time.monotonic() - self._acked_at < ACK_SECONDS):
            return
        try:
            ack = pb.AckOutboxRequest(follower=FOLLOWER, durable_origin_seq=durable)
            await stub.AckOutbox(ack, timeout=10)
        except grpc.aio.AioRpcError as err:  # the origin only prunes less; following goes on
            self._log.warning("acknowledgement refused", code=err.code().name, detail=err.details())
            return
        self._acked, self._acked_at = durable, time.monotonic()

    def _past_gap(self, err: grpc.aio.AioRpcError) -> bool:
        """An origin that pruned past Telemetry's position: log the gap and resume after it."""
        if err.code() != grpc.StatusCode.OUT_OF_RANGE:
            return False
        oldest = _metadata(err).get("oldest_origin_seq", "")
        if not oldest.isdigit():
            return False
        self._resume_at = int(oldest) - 1
        self._log.error(
            "origin pruned events Telemetry never stored; resuming after the gap",
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
