"""Followers: one task per origin, following its WatchOutbox from the highest origin_seq stored for it.

Events arrive at least once and are stored once (unique origin and origin_seq). When the origin cannot be
reached, or its stream goes silent for longer than a few heartbeats, the follower reconnects with a bounded
backoff; the origin keeps working meanwhile and its outbox drains when the link returns.
"""

from __future__ import annotations

import asyncio

import grpc
import structlog

from ggmodules.common.v1 import outbox_service_pb2 as pb
from ggmodules.internal.v1 import outbox_service_pb2_grpc as pb_grpc
from ggmodules.runtime.channels import service_channel
from ggmodules.runtime.security import INSECURE, Security
from ggmodules.storage.telemetry import TelemetryRepository

HEARTBEAT_MS = 1000
# A stream with nothing, not even a heartbeat, for this long is taken to be dead.
SILENCE_SECONDS = 5 * HEARTBEAT_MS / 1000
BACKOFF_MIN, BACKOFF_MAX = 0.05, 2.0


class Follower:
    def __init__(
        self,
        origin: str,
        address: str,
        repo: TelemetryRepository,
        log: structlog.typing.FilteringBoundLogger,
        security: Security = INSECURE,
    ) -> None:
        self.origin = origin
        self._security = security
        self.address = address
        self._repo = repo
        self._log = log.bind(origin=origin, address=address)
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"follow-{self.origin}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        delay = BACKOFF_MIN
        async with service_channel(self.address, self._security.channel_credentials) as channel:
            stub = pb_grpc.OutboxServiceStub(channel)
            while True:
                try:
                    if await self._follow(stub):
                        delay = BACKOFF_MIN
                except grpc.aio.AioRpcError as err:
                    self._log.info("origin unreachable", code=err.code().name, retry_in=delay)
                except TimeoutError:
                    self._log.info("origin silent; reconnecting", retry_in=delay)
                except Exception:
                    self._log.exception("following failed", retry_in=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)

    async def _follow(self, stub: pb_grpc.OutboxServiceStub) -> bool:
        """Follows until the stream ends or fails; True if anything arrived."""
        after = await asyncio.to_thread(self._repo.highest_origin_seq, self.origin)
        request = pb.WatchOutboxRequest(after_origin_seq=after, heartbeat_ms=HEARTBEAT_MS)
        call = stub.WatchOutbox(request, metadata=self._security.call_metadata())
        arrived = False
        try:
            while True:
                response = await asyncio.wait_for(call.read(), SILENCE_SECONDS)
                if response is grpc.aio.EOF:
                    return arrived
                arrived = True
                if response.events:
                    await asyncio.to_thread(self._repo.ingest, self.origin, list(response.events))
        finally:
            call.cancel()
