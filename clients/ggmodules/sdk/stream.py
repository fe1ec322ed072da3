"""Following a Telemetry stream, and walking every page of a List call, for the sync and asyncio clients.

A subscription is an iterator of `StreamEvent`s (`.cursor`, `.event`) that keeps the cursor of the last
event it handed out and, when the stream breaks (Telemetry restarted, the connection lost), subscribes
again after that cursor, so an event is never skipped nor repeated. gRPC's service-config retries cannot
do this (a stream that has delivered anything is never retried, and a retry would start from the first
request's cursor), hence this loop: it reconnects with exponential backoff and gives up, raising
`ServiceUnavailableError`, only once the service has been unreachable for `give_up_after` seconds. A
cursor older than what Telemetry retains ends the iteration with `CursorExpiredError` (OUT_OF_RANGE; its
`oldest_cursor` says where to resume). Any other refusal is raised typed at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc

from ggmodules.sdk.errors import ServiceUnavailableError
from ggmodules.sdk.plans import REQUEST_ID_HEADER, Plan, new_request_id
from ggmodules.sdk.results import Page
from ggmodules.telemetry.v1 import telemetry_pb2
from ggmodules.telemetry.v1 import telemetry_service_pb2 as pb

T = TypeVar("T")
Item = telemetry_pb2.StreamEvent | telemetry_pb2.Heartbeat
# A broken stream, as opposed to a refusal: the service went away or the connection dropped.
RESUMED = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED})


@dataclass(frozen=True)
class Reconnect:
    """How a subscription reconnects: backoff between attempts, and how long an outage it waits out
    (None: for ever)."""

    initial_backoff: float = 0.1
    max_backoff: float = 2.0
    give_up_after: float | None = 60.0


RECONNECT = Reconnect()


class _Following:
    """What the sync and asyncio subscriptions share: the request, the cursor, the outage clock."""

    def __init__(self, request: pb.SubscribeRequest, heartbeats: bool, reconnect: Reconnect) -> None:
        self._request = request
        self._heartbeats = heartbeats
        self._reconnect = reconnect
        self.cursor = request.after_cursor
        self.reconnects = 0
        self._closed = False
        self._down_since: float | None = None
        self._backoff = reconnect.initial_backoff

    def _next_request(self) -> tuple[pb.SubscribeRequest, tuple[tuple[str, str], ...]]:
        request = pb.SubscribeRequest()
        request.CopyFrom(self._request)
        request.after_cursor = self.cursor
        return request, ((REQUEST_ID_HEADER, new_request_id()),)

    def _item(self, response: pb.SubscribeResponse) -> Item | None:
        self._down_since, self._backoff = None, self._reconnect.initial_backoff
        if response.HasField("event"):
            self.cursor = response.event.cursor
            return response.event
        return response.heartbeat if self._heartbeats else None

    def _broken(self, err: grpc.RpcError | None) -> float:
        """Seconds to wait before subscribing again after the stream broke (`err`, or None when it ended)."""
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
        limit = self._reconnect.give_up_after
        if limit is not None and now - self._down_since >= limit:
            code = err.code() if err is not None else grpc.StatusCode.UNAVAILABLE
            raise ServiceUnavailableError(
                grpc.StatusCode.UNAVAILABLE, "",
                f"Telemetry unreachable for {limit:g}s ({code.name}); resume after cursor {self.cursor}",
                self.reconnects + 1)
        delay, self._backoff = self._backoff, min(self._backoff * 2, self._reconnect.max_backoff)
        self.reconnects += 1
        return delay


class Subscription(_Following):
    """A sync iterator of a Telemetry stream's events (heartbeats too when asked), resumed across
    reconnects. `close()` (or leaving a `with` block) ends it; `cursor` is the last event's cursor."""

    def __init__(self, open_stream: Callable[[pb.SubscribeRequest, tuple[tuple[str, str], ...]], Any],
                 raise_typed: Callable[[grpc.RpcError], None], request: pb.SubscribeRequest, *,
                 heartbeats: bool = False, reconnect: Reconnect = RECONNECT) -> None:
        super().__init__(request, heartbeats, reconnect)
        self._open = open_stream
        self._raise_typed = raise_typed
        self._call: Any = None

    def __iter__(self) -> Iterator[Item]:
        return self

    def __next__(self) -> Item:
        while True:
            if self._closed:
                raise StopIteration
            if self._call is None:
                self._call = self._open(*self._next_request())
            try:
                response = next(self._call)
            except StopIteration:
                self._call, err = None, None
            except grpc.RpcError as rpc_err:
                self._call, err = None, rpc_err
                if self._closed:
                    raise StopIteration from None
                if rpc_err.code() not in RESUMED:
                    self._raise_typed(rpc_err)
            else:
                item = self._item(response)
                if item is not None:
                    return item
                continue
            time.sleep(self._broken(err))

    def close(self) -> None:
        self._closed = True
        if self._call is not None:
            self._call.cancel()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncSubscription(_Following):
    """The asyncio twin of `Subscription`: `async for item in gg.subscribe(...)`."""

    def __init__(self, open_stream: Callable[[pb.SubscribeRequest, tuple[tuple[str, str], ...]], Any],
                 raise_typed: Callable[[Any, grpc.aio.AioRpcError], Any], request: pb.SubscribeRequest, *,
                 heartbeats: bool = False, reconnect: Reconnect = RECONNECT) -> None:
        super().__init__(request, heartbeats, reconnect)
        self._open = open_stream
        self._raise_typed = raise_typed
        self._call: Any = None

    def __aiter__(self) -> AsyncIterator[Item]:
        return self

    async def __anext__(self) -> Item:
        while True:
            if self._closed:
                raise StopAsyncIteration
            if self._call is None:
                self._call = self._open(*self._next_request())
            call, err = self._call, None
            try:
                response = await call.read()
            except grpc.aio.AioRpcError as rpc_err:
                self._call, err = None, rpc_err
                if self._closed:
                    raise StopAsyncIteration from None
                if rpc_err.code() not in RESUMED:
                    await self._raise_typed(call, rpc_err)
            else:
                if response is grpc.aio.EOF:
                    self._call = None
                else:
                    item = self._item(response)
                    if item is not None:
                        return item
                    continue
            await asyncio.sleep(self._broken(err))

    async def close(self) -> None:
        self._closed = True
        if self._call is not None:
            self._call.cancel()

    async def __aenter__(self) -> AsyncSubscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def every_item(run: Callable[[Plan[Page[T]]], Page[T]], page: Callable[[str], Plan[Page[T]]]) -> Iterator[T]:
    """Every item of a List call, page after page (`page(token)` plans one page)."""
    token = ""
    while True:
        items = run(page(token))
        yield from items
        token = items.next_page_token
        if not token:
            return


async def every_item_async(run: Callable[[Plan[Page[T]]], Any],
                           page: Callable[[str], Plan[Page[T]]]) -> AsyncIterator[T]:
    """The asyncio twin of `every_item`."""
    token = ""
    while True:
        items: Page[T] = await run(page(token))
        for item in items:
            yield item
        token = items.next_page_token
        if not token:
            return
