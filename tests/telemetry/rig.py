"""Telemetry's test rig: ModuleStore and Registry in-process, Telemetry in-process or as its own OS process,
and subscriptions read item by item with a deadline (never a sleep)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc

from ggmodules.common.v1 import event_pb2
from ggmodules.core.telemetry.streams import Retention
from ggmodules.modulestore.v1 import modulestore_pb2 as ms_pb
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc as ms_grpc
from ggmodules.registry.v1 import registry_service_pb2_grpc as reg_grpc
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as tel_grpc
from tests.harness import (
    InProcessService,
    InProcessTelemetry,
    LoopThread,
    ServiceProcess,
    drop_database,
    new_database_url,
    open_channel,
    service_config,
    stubs,
)

DEADLINE = 15.0
# For a run of events taken together (`events`, `until`): one deadline for all of them.
SPAN = 30.0
# The longest any one subscription is read, however its items are taken (a loop over heartbeats included):
# past it a take fails, well before the pytest timeout.
BUDGET = 60.0


class Rig:
    """ModuleStore, Registry and Telemetry over one backend, each on its own database."""

    def __init__(
        self,
        backend: str,
        directory: Path,
        *,
        retention: int | None = None,
        telemetry: bool = True,
        recent_bytes: int | None = None,
    ) -> None:
        self.backend = backend
        self.loop = LoopThread()
        self.urls = {
            name: new_database_url(backend, name, directory)
            for name in ("modulestore", "registry", "telemetry")
        }
        base = service_config("modulestore")
        self.modulestore = InProcessService(
            self.loop, replace(base, service="modulestore", database_url=self.urls["modulestore"])
        )
        self.registry = InProcessService(
            self.loop,
            replace(
                base,
                service="registry",
                database_url=self.urls["registry"],
                modulestore_address=self.modulestore.address,
            ),
        )
        self.telemetry_config = replace(
            base,
            service="telemetry",
            database_url=self.urls["telemetry"],
            modulestore_address=self.modulestore.address,
            registry_address=self.registry.address,
        )
        self.retention = retention
        self.recent_bytes = recent_bytes
        self._channels: dict[str, grpc.Channel] = {}
        self.telemetry: InProcessTelemetry | ServiceProcess | None = None
        if telemetry:
            self.start_telemetry()
        self.subscriptions: list[Subscription] = []

    def start_telemetry(self) -> InProcessTelemetry:
        """Telemetry in-process, started late (the rig was made with `telemetry=False`)."""
        retention = Retention(self.retention) if self.retention else None
        self.telemetry = InProcessTelemetry(self.loop, self.telemetry_config, retention, self.recent_bytes)
        return self.telemetry

    # -- Telemetry as an OS process (for kill -9)

    def start_telemetry_process(self) -> ServiceProcess:
        c = self.telemetry_config
        env = {"GGMODULES_TELEMETRY_RETENTION_EVENTS": str(self.retention)} if self.retention else {}
        self.telemetry = ServiceProcess(
            "telemetry",
            "--database-url", c.database_url,
            "--modulestore-address", c.modulestore_address,
            "--registry-address", c.registry_address,
            "--log-level", "warning",
            env=env,
        )  # fmt: skip
        return self.telemetry

    # -- stubs

    def channel(self, address: str) -> grpc.Channel:
        if address not in self._channels:
            self._channels[address] = open_channel(address)
        return self._channels[address]

    @property
    def ms(self) -> ms_grpc.ModuleStoreServiceStub:
        return stubs(self.channel(self.modulestore.address), "modulestore")

    @property
    def reg(self) -> reg_grpc.RegistryServiceStub:
        return stubs(self.channel(self.registry.address), "registry")

    @property
    def tel(self) -> tel_grpc.TelemetryServiceStub:
        assert self.telemetry is not None
        return tel_grpc.TelemetryServiceStub(self.channel(self.telemetry.address))

    def subscribe(
        self, run_id: str = "", agent_id: str = "", after: int = 0, heartbeat_ms: int = 0
    ) -> Subscription:
        request = tel.SubscribeRequest(
            run_id=run_id, agent_id=agent_id, after_cursor=after, heartbeat_ms=heartbeat_ms
        )
        sub = Subscription(self.tel.Subscribe(request))
        self.subscriptions.append(sub)
        return sub

    # -- the writes the tests make

    def write(self, run_id: str, agent_id: str, store_id: str, **op: Any) -> ms.WriteResponse:
        response: ms.WriteResponse = self.ms.Write(
            ms.WriteRequest(run_id=run_id, agent_id=agent_id, store_id=store_id, **op)
        )
        return response

    def say(self, run_id: str, agent_id: str, store_id: str, text: str) -> ms.WriteResponse:
        message = ms_pb.MessageInput(role="user", content=text)
        return self.write(run_id, agent_id, store_id, append_messages=ms.AppendMessages(messages=[message]))

    def outbox(self, run_id: str) -> list[event_pb2.Event]:
        """ModuleStore's own record of the run's events, in origin_seq order."""
        out: list[event_pb2.Event] = []
        while True:
            after = out[-1].origin_seq if out else 0
            page = self.ms.ReadOutbox(
                ms.ReadOutboxRequest(run_id=run_id, after_origin_seq=after, page_size=1000)
            )
            if not page.events:
                return out
            out += page.events

    def close(self) -> None:
        for sub in self.subscriptions:
            sub.close()
        for ch in self._channels.values():
            ch.close()
        if isinstance(self.telemetry, InProcessTelemetry):
            self.telemetry.stop()
        elif isinstance(self.telemetry, ServiceProcess) and self.telemetry.proc.poll() is None:
            self.telemetry.kill()
        self.registry.stop()
        self.modulestore.stop()
        self.loop.close()
        for url in self.urls.values():
            drop_database(url)


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


def closing(rig: Rig) -> Iterator[Rig]:
    try:
        yield rig
    finally:
        rig.close()
