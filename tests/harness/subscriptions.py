"""Telemetry subscriptions read item by item with a deadline (never a sleep)."""

from __future__ import annotations

import queue
import threading
import time
from typing import Any

import grpc

from ggmodules.common.v1 import event_pb2
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel

DEADLINE = 15.0
# For a run of events taken together (`events`, `until`): one deadline for all of them.
SPAN = 30.0
# The longest any one subscription is read, however its items are taken (a loop over heartbeats included):
# past it a take fails, well before the pytest timeout.
BUDGET = 60.0


class StreamEnded(Exception):
    def __init__(self, error: grpc.RpcError | None) -> None:
        super().__init__(repr(error))
        self.error = error


class Subscription:
    """A Subscribe stream drained by a thread into a queue; the test takes items with a deadline, and no
    take goes past the subscription's budget (BUDGET seconds after it started)."""

    def __init__(self, call: Any, budget: float = BUDGET) -> None:
        self._call = call
        self._budget = budget
        self._expires = time.monotonic() + budget
        self._items: queue.Queue[tel.SubscribeResponse | StreamEnded] = queue.Queue()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            for item in self._call:
                self._items.put(item)
            self._items.put(StreamEnded(None))
        except grpc.RpcError as err:
            self._items.put(StreamEnded(err))

    def next(self, deadline: float = DEADLINE) -> tel.SubscribeResponse:
        """The next item, heartbeats included, within `deadline` seconds."""
        return self._take(time.monotonic() + deadline, deadline)

    def _take(self, until: float, deadline: float) -> tel.SubscribeResponse:
        try:
            item = self._items.get(timeout=max(0.0, min(until, self._expires) - time.monotonic()))
        except queue.Empty:
            if time.monotonic() >= self._expires:
                raise AssertionError(f"subscription read for its whole {self._budget}s budget") from None
            raise AssertionError(f"no stream item within {deadline}s") from None
        if isinstance(item, StreamEnded):
            raise item
        return item

    def next_event(self, deadline: float = DEADLINE) -> tuple[int, event_pb2.Event]:
        """The next event (cursor, envelope), passing over heartbeats. The deadline is absolute: heartbeats
        do not extend it, so a missing event fails here instead of at the pytest timeout."""
        return self._next_event(time.monotonic() + deadline, deadline)

    def _next_event(self, until: float, deadline: float) -> tuple[int, event_pb2.Event]:
        while True:
            item = self._take(until, deadline)
            if item.WhichOneof("item") == "event":
                return item.event.cursor, item.event.event

    def events(self, n: int, deadline: float = SPAN) -> list[tuple[int, event_pb2.Event]]:
        """The next `n` events, all within `deadline` seconds."""
        until = time.monotonic() + deadline
        return [self._next_event(until, deadline) for _ in range(n)]

    def until(self, done: Any, deadline: float = SPAN) -> list[tuple[int, event_pb2.Event]]:
        """Events up to and including the first for which `done(event)` holds, all within `deadline`
        seconds."""
        end = time.monotonic() + deadline
        got = []
        while True:
            cursor, ev = self._next_event(end, deadline)
            got.append((cursor, ev))
            if done(ev):
                return got

    def error(self, deadline: float = DEADLINE) -> grpc.RpcError:
        """The error that ends the stream within `deadline` seconds (items before it are passed over)."""
        end = time.monotonic() + deadline
        while True:
            try:
                self._take(end, deadline)
            except StreamEnded as ended:
                assert ended.error is not None, "the stream ended without an error"
                return ended.error

    def close(self) -> None:
        self._call.cancel()


def shape(events: list[tuple[int, event_pb2.Event]]) -> list[tuple[str, str, str]]:
    """(agent, body, store) per event: what the exact-sequence assertions compare."""
    return [(ev.agent_id, str(ev.WhichOneof("body")), ev.store_id) for _, ev in events]


def is_write_of(text: str) -> Any:
    """Matches the write event that appended a message with `text` (a test's end-of-actions marker)."""

    def match(ev: event_pb2.Event) -> bool:
        return ev.WhichOneof("body") == "write" and any(
            m.content == text for m in ev.write.delta.history.messages
        )

    return match
