"""Two replicas of every service as separate processes over one PostgreSQL database, and the clients that
spread over them: the rig of the replica tests (issue 9).

The event log is a parameter: "sql" (Telemetry's embedded table, the default) or a NATS JetStream URL,
passed as `--event-log` to Telemetry (each module's own stream: tests/harness/event_logs.py).
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from ggmodules.common.v1 import event_pb2
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.runtime.channels import BALANCING_OPTIONS, channel_target
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc as tel_grpc
from ggmodules.transfer.v1 import transfer_service_pb2_grpc as tr_grpc
from tests.harness import ServiceProcess, drop_database, new_database_url, open_channel, status_of, stubs
from tests.harness.crowd import ABORTED_RETRIES, Tally
from tests.tools.crashing import LAUNCHER

# Short enough that a dead replica's transfer is taken over quickly; renewed every third of it.
LEASE_SECONDS = "2"
LEASE_SCAN_SECONDS = "0.5"
# A client naming several replicas sends a call answered UNAVAILABLE (its replica died under it) again, with
# the same request id, as the SDK does; the channel's round_robin sends it to a live replica.
UNAVAILABLE_RETRIES = 20


class Alternating:
    """One service's stubs on each replica: every call goes to the next replica in turn."""

    def __init__(self, *stubs: Any) -> None:
        self._stubs = stubs
        self._turn = itertools.count()
        self._lock = threading.Lock()

    def __getattr__(self, method: str) -> Any:
        with self._lock:
            n = next(self._turn)
        return getattr(self._stubs[n % len(self._stubs)], method)


@dataclass
class Replicas:
    """One service's replicas (processes), in start order."""

    service: str
    processes: list[ServiceProcess] = field(default_factory=list)

    @property
    def addresses(self) -> str:
        """Every live replica, comma-separated: how a client names all of them."""
        return ",".join(p.address for p in self.processes if p.proc.poll() is None)


def start_together(specs: Sequence[tuple[str, tuple[str, ...], dict[str, str]]]) -> list[ServiceProcess]:
    """Starts every process at once (so they also migrate the empty database together); in spec order."""
    started: list[ServiceProcess | BaseException | None] = [None] * len(specs)

    def start(i: int) -> None:
        service, args, env = specs[i]
        try:
            started[i] = ServiceProcess(service, *args, env=env)
        except BaseException as err:  # reported below, after every start has ended
            started[i] = err

    threads = [threading.Thread(target=start, args=(i,)) for i in range(len(specs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [s for s in started if not isinstance(s, ServiceProcess)]
    if failed:
        for s in started:
            if isinstance(s, ServiceProcess):
                s.kill()
        raise AssertionError(f"{len(failed)} of {len(specs)} replicas did not start: {failed[0]!r}")
    return [s for s in started if isinstance(s, ServiceProcess)]


class Cluster:
    """Two replicas of ModuleStore, Registry, Transfer and Telemetry on one PostgreSQL database; each
    names both replicas of the services it calls."""

    def __init__(self, directory: Path, event_log: str, origin_publishes: bool = False) -> None:
        """`origin_publishes`: ModuleStore's replicas are given the (JetStream) event log too and publish
        their own events there (runtime/origin_relay.py)."""
        self.url = new_database_url("postgres", "h9rep_replicas", directory)
        self.event_log = event_log
        self.channels: list[grpc.Channel] = []
        # Every call logged (info): what a failing run leaves to read (the test names the log files).
        # Pools of 3 (6 under load) rather than 10 (20): with the default pools two clusters at once (make
        # test's two workers) held 91 connections at their peak, and with the rest of the suite beside them
        # PostgreSQL's max_connections (100) refused new ones ("too many clients already").
        pools = ("--pool-size", "3", "--pool-max-overflow", "3")
        common = ("--database-url", self.url, "--log-level", "info", *pools)
        # A start that fails part-way stops what it had started and drops the database: a test that could
        # not get its cluster leaves no process holding PostgreSQL connections for the rest of the suite.
        self.started: list[ServiceProcess] = []
        try:
            publishes = ("--event-log", event_log) if origin_publishes else ()
            self.modulestore = Replicas(
                "modulestore", self._start([("modulestore", (*common, *publishes), {})] * 2)
            )
            ms = ("--modulestore-address", self.modulestore.addresses)
            self.registry = Replicas("registry", self._start([("registry", (*common, *ms), {})] * 2))
            siblings = (*ms, "--registry-address", self.registry.addresses)
            lease = ("--lease-seconds", LEASE_SECONDS, "--lease-scan-seconds", LEASE_SCAN_SECONDS)
            log = ("--event-log", event_log) if event_log != "sql" else ()
            started = self._start(
                [("transfer", (*common, *siblings, *lease), {})] * 2
                + [("telemetry", (*common, *siblings, *log), {})] * 2
            )
        except BaseException:
            for p in self.started:
                p.kill()
            drop_database(self.url)
            raise
        self.transfer = Replicas("transfer", started[:2])
        self.telemetry = Replicas("telemetry", started[2:])

    def _start(self, specs: Sequence[tuple[str, tuple[str, ...], dict[str, str]]]) -> list[ServiceProcess]:
        started = start_together(specs)
        self.started += started
        return started

    def every(self) -> list[Replicas]:
        return [self.modulestore, self.registry, self.transfer, self.telemetry]

    def start_transfer(self, *extra: str, env: dict[str, str] | None = None) -> ServiceProcess:
        """One more Transfer replica on the same journal."""
        return ServiceProcess(
            "transfer", "--database-url", self.url, "--log-level", "warning", "--modulestore-address",
            self.modulestore.addresses, "--registry-address", self.registry.addresses, "--lease-seconds",
            LEASE_SECONDS, "--lease-scan-seconds", LEASE_SCAN_SECONDS, *extra, env=env, launcher=LAUNCHER,
        )

    def channel(self, address: str) -> grpc.Channel:
        """A channel to one replica, or to several (comma-separated) spread by round_robin."""
        ch = open_channel(channel_target(address), options=BALANCING_OPTIONS)
        self.channels.append(ch)
        return ch

    def stubs(self, replica: int) -> tuple[Any, Any, Any, Any]:
        """Registry, ModuleStore, Transfer and Telemetry stubs on replica `replica` of each."""
        return (
            stubs(self.channel(self.registry.processes[replica].address), "registry"),  # public and internal
            stubs(self.channel(self.modulestore.processes[replica].address), "modulestore"),
            tr_grpc.TransferServiceStub(self.channel(self.transfer.processes[replica].address)),
            tel_grpc.TelemetryServiceStub(self.channel(self.telemetry.processes[replica].address)),
        )

    def alternating(self) -> tuple[Alternating, Alternating, Alternating]:
        """Registry, ModuleStore and Transfer stubs whose calls alternate between the two replicas."""
        first, second = self.stubs(0), self.stubs(1)
        registry, modulestore, transfer = (Alternating(first[i], second[i]) for i in range(3))
        return registry, modulestore, transfer

    def spread(self) -> tuple[Any, Any, Any]:
        """Registry, ModuleStore and Transfer stubs each over every replica (comma-separated addresses)."""
        return (
            stubs(self.channel(self.registry.addresses), "registry"),
            stubs(self.channel(self.modulestore.addresses), "modulestore"),
            tr_grpc.TransferServiceStub(self.channel(self.transfer.addresses)),
        )

    def close(self) -> None:
        for ch in self.channels:
            ch.close()
        for replicas in reversed(self.every()):
            for p in replicas.processes:
                if p.proc.poll() is None:
                    p.kill()
        drop_database(self.url)


def ask_failing_over(tally: Tally, method: Callable[..., Any], request: Any) -> Any | None:
    """As harness.crowd.ask, and an UNAVAILABLE answer (the replica died mid-call) is sent again with the
    same request id: the channel's other replica takes it."""
    path = getattr(method, "_method", b"")  # bytes on a plain channel, str through an interceptor
    name = (path.decode() if isinstance(path, bytes) else path).rsplit("/", 1)[-1] or type(request).__name__
    unavailable = 0
    for _ in range(ABORTED_RETRIES + UNAVAILABLE_RETRIES):
        try:
            answer = method(request, timeout=45)
        except grpc.RpcError as err:
            code, reason = status_of(err)
            tally.code(code.name)
            if code is grpc.StatusCode.ABORTED:
                continue
            if code is grpc.StatusCode.UNAVAILABLE and unavailable < UNAVAILABLE_RETRIES:
                unavailable += 1
                time.sleep(0.1 * min(unavailable, 5))  # a client's backoff, as the SDK's
                continue
            tally.failed(name, code.name, reason, err.details() or "")  # type: ignore[attr-defined]
            return None
        tally.code("OK")
        return answer
    tally.failed(name, "ABORTED", "", "still refused after every retry")
    return None


def new_request_id(n: int) -> str:
    return f"c{n}-{uuid.uuid4().hex}"


def outbox(modulestore: Any, run_id: str) -> list[event_pb2.Event]:
    """Every event of the run in ModuleStore's outbox, in origin order."""
    events: list[event_pb2.Event] = []
    after = 0
    while True:
        request = svc.ReadOutboxRequest(after_origin_seq=after, page_size=1000, run_id=run_id)
        page = modulestore.ReadOutbox(request)
        if not page.events:
            return events
        events.extend(page.events)
        after = page.events[-1].origin_seq


def read_stream(
    telemetry: Any, expected: set[tuple[str, int]], deadline: float, *, run_id: str = "", agent_id: str = "",
    after: int = 0,
) -> list[tuple[int, event_pb2.Event]]:
    """The stream's events (cursor, event) from `after` until every expected (origin, origin_seq) has
    arrived, or `deadline` seconds have passed (then what arrived: the caller's assertion names the gap)."""
    call = telemetry.Subscribe(
        tel.SubscribeRequest(run_id=run_id, agent_id=agent_id, after_cursor=after, heartbeat_ms=100),
        timeout=deadline,
    )
    got: list[tuple[int, event_pb2.Event]] = []
    missing = set(expected)
    try:
        for item in call:
            if item.WhichOneof("item") == "event":
                got.append((item.event.cursor, item.event.event))
                missing.discard((item.event.event.origin, item.event.event.origin_seq))
            if not missing:
                break
    except grpc.RpcError as err:
        if err.code() is not grpc.StatusCode.DEADLINE_EXCEEDED:
            raise
    finally:
        call.cancel()
    return got


def instances(registry: Any, run_id: str) -> list[reg.Instance]:
    found: list[Any] = []
    token = ""
    while True:
        request = reg.ListInstancesRequest(run_id=run_id, page_size=500, page_token=token)
        page = registry.ListInstances(request)
        found.extend(page.instances)
        token = page.next_page_token
        if not token:
            return found
