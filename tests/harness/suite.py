"""`Suite`: the services a test talks to, in-process against one backend, each on its own database.

ModuleStore and Registry always; Transfer beside them unless `transfer=False`; Telemetry following them,
started with the suite (`telemetry=True`), else the first time a test asks for it (`suite.telemetry`), or as
its own OS process (`start_telemetry_process`, for kill -9). Telemetry's options: `retention` (events kept,
or a `Retention`),
`recent_bytes` (its recent-events cache), `event_log` (its event log's URL: SQL on its database by default,
nats://… for JetStream; with `origin_publishes=True` ModuleStore publishes its own events there). The root
conftest's `suite` fixture is the session's; a test module that needs other options makes its own with a
fixture of a few lines (`with Suite(backend, directory, **options) as s`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc

from ggmodules.common.v1 import event_pb2
from ggmodules.core.telemetry.streams import Retention
from ggmodules.modulestore.v1 import modulestore_pb2 as ms_pb
from ggmodules.modulestore.v1 import modulestore_service_pb2 as ms
from ggmodules.runtime.config import ServiceConfig
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as tel_grpc
from tests.harness.backends import drop_database, new_database_url
from tests.harness.channels import open_channel, stubs
from tests.harness.credentials import AUTO, service_config
from tests.harness.services import InProcessService, InProcessTelemetry, LoopThread, ServiceProcess
from tests.harness.subscriptions import Subscription


class Suite:
    """ModuleStore, Registry (and Transfer) started in-process against one backend; Telemetry following them
    (see the module's note for the options)."""

    def __init__(
        self,
        backend: str,
        directory: Path,
        *,
        transfer: bool = True,
        telemetry: bool = False,
        retention: Retention | int | None = None,
        recent_bytes: int | None = None,
        event_log: str = "",
        origin_publishes: bool = False,
    ) -> None:
        self.backend = backend
        self.directory = directory
        self.retention = retention
        self.recent_bytes = recent_bytes
        self.event_log = event_log
        self._telemetry: InProcessTelemetry | ServiceProcess | None = None
        self._channels: list[grpc.Channel] = []
        self._shared: dict[str, grpc.Channel] = {}
        self.subscriptions: list[Subscription] = []
        self.loop = LoopThread()
        names = ("modulestore", "registry", "transfer") if transfer else ("modulestore", "registry")
        self.urls = {name: new_database_url(backend, name, directory) for name in names}
        base = service_config("modulestore")
        # `origin_publishes`: ModuleStore is given the (JetStream) event log too and publishes its own events
        # there (runtime/origin_relay.py), instead of Telemetry relaying them.
        self.modulestore = InProcessService(
            self.loop,
            replace(
                base,
                service="modulestore",
                database_url=self.urls["modulestore"],
                event_log=event_log if origin_publishes else "",
            ),
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
        self.transfer: Any = None
        if transfer:
            self.transfer = InProcessService(
                self.loop,
                replace(
                    base,
                    service="transfer",
                    database_url=self.urls["transfer"],
                    registry_address=self.registry.address,
                    modulestore_address=self.modulestore.address,
                ),
            )
        if telemetry:
            self.start_telemetry()

    # -- Telemetry

    @property
    def telemetry_config(self) -> ServiceConfig:
        """Telemetry's config: following this suite's ModuleStore and Registry, on its own database."""
        if "telemetry" not in self.urls:
            self.urls["telemetry"] = new_database_url(self.backend, "telemetry", self.directory)
        return service_config(
            "telemetry",
            database_url=self.urls["telemetry"],
            modulestore_address=self.modulestore.address,
            registry_address=self.registry.address,
            event_log=self.event_log,
        )

    @property
    def telemetry(self) -> Any:
        """Telemetry following this suite's ModuleStore and Registry (it catches up on what they already
        hold when it starts): the one started, else one started now in-process with the suite's options."""
        if self._telemetry is None:
            self.start_telemetry()
        return self._telemetry

    def start_telemetry(
        self, retention: Retention | int | None = None, recent_bytes: int | None = None, **fields: Any
    ) -> InProcessTelemetry:
        """Telemetry in-process, now: the suite's options unless given here; `fields` change its config
        (e.g. a `modulestore_address` where nothing answers)."""
        chosen = retention if retention is not None else self.retention
        kept = Retention(chosen) if isinstance(chosen, int) and chosen else chosen or None
        started = InProcessTelemetry(
            self.loop,
            replace(self.telemetry_config, **fields),
            kept,
            recent_bytes if recent_bytes is not None else self.recent_bytes,
        )
        self._telemetry = started
        return started

    def start_telemetry_process(self) -> ServiceProcess:
        """Telemetry as its own OS process (for kill -9), with the suite's retention."""
        c = self.telemetry_config
        events = self.retention if isinstance(self.retention, int) else None
        env = {"GGMODULES_TELEMETRY_RETENTION_EVENTS": str(events)} if events else {}
        started = ServiceProcess(
            "telemetry",
            "--database-url", c.database_url,
            "--modulestore-address", c.modulestore_address,
            "--registry-address", c.registry_address,
            "--log-level", "warning",
            *(("--event-log", self.event_log) if self.event_log else ()),
            env=env,
        )  # fmt: skip
        self._telemetry = started
        return started

    # -- channels and stubs

    def channel(self, address: str, credential: str = AUTO) -> grpc.Channel:
        """A channel to one of the suite's services, closed with the suite (see `open_channel`)."""
        ch = open_channel(address, credential)
        self._channels.append(ch)
        return ch

    def _shared_channel(self, address: str) -> grpc.Channel:
        if address not in self._shared:
            self._shared[address] = open_channel(address)
        return self._shared[address]

    @property
    def ms(self) -> Any:
        """ModuleStore's public and internal RPCs (AUTO credentials)."""
        return stubs(self._shared_channel(self.modulestore.address), "modulestore")

    @property
    def reg(self) -> Any:
        return stubs(self._shared_channel(self.registry.address), "registry")

    @property
    def tr(self) -> Any:
        return stubs(self._shared_channel(self.transfer.address), "transfer")

    @property
    def tel(self) -> tel_grpc.TelemetryServiceStub:
        return tel_grpc.TelemetryServiceStub(self._shared_channel(self.telemetry.address))

    def subscribe(
        self, run_id: str = "", agent_id: str = "", after: int = 0, heartbeat_ms: int = 0
    ) -> Subscription:
        """A Telemetry subscription read item by item with a deadline, cancelled with the suite."""
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

    # -- closing

    def close(self) -> None:
        for sub in self.subscriptions:
            sub.close()
        for ch in [*self._channels, *self._shared.values()]:
            ch.close()
        if isinstance(self._telemetry, InProcessTelemetry):
            self._telemetry.stop()
        elif isinstance(self._telemetry, ServiceProcess) and self._telemetry.proc.poll() is None:
            self._telemetry.kill()
        if self.transfer is not None:
            self.transfer.stop()
        self.registry.stop()
        self.modulestore.stop()
        self.loop.close()
        for url in self.urls.values():
            drop_database(url)

    def __enter__(self) -> Suite:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
