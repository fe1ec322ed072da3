"""Traces and metrics (`--trace`, `--metrics-port`; runtime/observability.py), off unless asked for.

The trace test runs the four services in this process (the harness's loop thread) so that one in-memory
exporter sees every span they make; the spans still cross real gRPC connections on loopback, and the trace
context travels in each sibling call's metadata exactly as between processes. The flags are tested on a
service in its own OS process.
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from prometheus_client.parser import text_string_to_metric_families

from ggmodules.registry.v1 import registry_service_pb2 as reg
from ggmodules.registry.v1 import registry_service_pb2_grpc
from ggmodules.runtime.observability import Observe, install_client_tracing
from ggmodules.sdk import Client, Edge, Fsm, Memories, Profile, RunNotFoundError
from ggmodules.telemetry.v1 import telemetry_service_pb2 as tel
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc
from tests.harness import (
    InProcessService,
    InProcessTelemetry,
    LoopThread,
    ServiceProcess,
    eventually,
    new_database_url,
    open_channel,
    service_config,
)

SERVICES = {
    "ggmodules.transfer.v1.TransferService": "transfer",
    "ggmodules.registry.v1.RegistryService": "registry",
    "ggmodules.modulestore.v1.ModuleStoreService": "modulestore",
    # The services' calls to each other (a transfer's steps) are on the internal surface.
    "ggmodules.internal.v1.RegistryInternalService": "registry",
    "ggmodules.internal.v1.ModuleStoreInternalService": "modulestore",
}


@dataclass
class Observed:
    modulestore: InProcessService
    registry: InProcessService
    transfer: InProcessService
    telemetry: InProcessTelemetry
    spans: InMemorySpanExporter

    def client(self) -> Client:
        return Client(self.registry.address, self.modulestore.address, self.transfer.address)


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    directory = Path(tmp_path_factory.mktemp("observed"))
    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "ggmodules-test"}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    install_client_tracing(provider)
    observe = Observe(tracer_provider=provider, metrics_port=0)
    loop = LoopThread()
    base = service_config("modulestore")

    def url(name: str) -> str:
        return new_database_url("sqlite", name, directory)

    ms = InProcessService(loop, replace(base, database_url=url("modulestore")), observe)
    registry = InProcessService(
        loop,
        replace(base, service="registry", database_url=url("registry"), modulestore_address=ms.address),
        observe,
    )
    transfer = InProcessService(
        loop,
        replace(
            base, service="transfer", database_url=url("transfer"), registry_address=registry.address,
            modulestore_address=ms.address,
        ),
        observe,
    )
    telemetry = InProcessTelemetry(
        loop,
        replace(
            base, service="telemetry", database_url=url("telemetry"), registry_address=registry.address,
            modulestore_address=ms.address,
        ),
        observe=observe,
    )
    try:
        yield Observed(ms, registry, transfer, telemetry, spans)
    finally:
        install_client_tracing(None)
        for s in (telemetry, transfer, registry, ms):
            s.stop()
        loop.close()
        provider.shutdown()


def _fsm_run(gg: Client) -> str:
    """The README's two-stage FSM run; the run id."""
    profiles = [
        Profile("planner", memories=Memories(), tasks=True), Profile("coder", tasks=True, archive=True)
    ]
    edges = [Edge("plan", "code", carry=["history", "tasks"])]
    fsm = Fsm("plan", {"plan": "planner", "code": "coder"}, edges)
    run = gg.create_run("traced", profiles, fsm=fsm)
    planner = gg.open_instance(run.id, "planner")
    planner.history.append("user", "Build a CLI", start_turn=True)
    planner.tasks.create("write the parser")
    moved = planner.transition("code")
    assert moved.successor.id == "coder-0"
    return run.id


def _service(span: ReadableSpan) -> str:
    return SERVICES.get(str((span.attributes or {}).get("rpc.service", "")), "")


def test_a_transfer_is_one_trace_with_spans_from_three_services(observed: Observed) -> None:
    observed.spans.clear()
    with observed.client() as gg:
        _fsm_run(gg)
    finished = observed.spans.get_finished_spans()
    [transition] = [s for s in finished if s.name == "/ggmodules.transfer.v1.TransferService/Transition"]
    assert transition.kind is SpanKind.SERVER
    assert transition.parent is None, "the SDK sends no trace context, so Transfer's span is the root"
    trace_id = transition.context.trace_id
    in_trace = [s for s in finished if s.context.trace_id == trace_id]

    served = {_service(s) for s in in_trace if s.kind is SpanKind.SERVER}
    assert served == {"transfer", "registry", "modulestore"}
    # The Registry's and ModuleStore's steps of the transfer, each under a client span of Transfer's.
    by_id = {s.context.span_id: s for s in in_trace}
    steps = {s.name.rsplit("/", 1)[-1] for s in in_trace if s.kind is SpanKind.SERVER and s is not transition}
    assert {"PlanSuccessor", "Handover", "CompleteSuccessor"} <= steps, steps
    for span in in_trace:
        if span is transition:
            continue
        assert span.parent is not None and span.parent.span_id in by_id, f"{span.name} left the trace"
        if span.kind is SpanKind.SERVER:
            caller = by_id[span.parent.span_id]
            assert caller.kind is SpanKind.CLIENT and caller.name == span.name
    # Nothing of the transfer went into another trace: the handover's only server span is in this one.
    handovers = [s for s in finished if s.name.endswith("/Handover") and s.kind is SpanKind.SERVER]
    assert [s.context.trace_id for s in handovers] == [trace_id]
    # Each call the SDK made outside the transfer is a trace of its own, on the service it called.
    create = next(s for s in finished if s.name.endswith("/CreateRun") and s.kind is SpanKind.SERVER)
    assert create.context.trace_id != trace_id


def _scrape(address: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as answer:
        assert answer.status == 200
        text = answer.read().decode()
    series: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return series


def _scrape_counted(address: str, name: str, **labels: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """`_scrape` once `name` has a series with `labels`. A refused call is counted a moment after its caller
    has the refusal: grpc.aio's `context.abort` sends the status before the handler's `finally`, where the
    metrics interceptor counts the call, runs on the server's loop."""

    def counted() -> dict[str, list[tuple[dict[str, str], float]]] | None:
        series = _scrape(address)
        found = any(all(got.get(k) == w for k, w in labels.items()) for got, _ in series.get(name, []))
        return series if found else None

    return eventually(counted, f"{name} {labels} served", 10.0)


def _value(series: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    found = [v for got, v in series.get(name, []) if all(got.get(k) == w for k, w in labels.items())]
    assert len(found) == 1, f"{name} {labels}: {found} in {sorted(series)}"
    return found[0]


def test_each_service_serves_rate_errors_latency_and_its_gauges(observed: Observed) -> None:
    with observed.client() as gg:
        run_id = _fsm_run(gg)
        with pytest.raises(RunNotFoundError):
            gg.get_run("run-that-never-was")
    assert observed.registry.running.metrics is not None
    get_run = "/ggmodules.registry.v1.RegistryService/GetRun"
    registry = _scrape_counted(observed.registry.running.metrics.address, "ggmodules_rpc_errors_total",
                               method=get_run, code="NOT_FOUND")
    create_run = "/ggmodules.registry.v1.RegistryService/CreateRun"
    assert _value(registry, "ggmodules_rpc_requests_total", method=create_run, code="OK") >= 1
    assert _value(registry, "ggmodules_rpc_errors_total", method=get_run, code="NOT_FOUND",
                  reason="RUN_NOT_FOUND") == 1
    assert _value(registry, "ggmodules_rpc_duration_seconds_count", method=create_run) >= 1
    assert _value(registry, "ggmodules_rpc_duration_seconds_bucket", method=create_run, le="+Inf") >= 1

    assert observed.transfer.running.metrics is not None
    transfer = _scrape(observed.transfer.running.metrics.address)
    transition = "/ggmodules.transfer.v1.TransferService/Transition"
    assert _value(transfer, "ggmodules_rpc_requests_total", method=transition, code="OK") >= 1
    assert _value(transfer, "ggmodules_transfer_journal_pending") == 0

    assert observed.modulestore.running.metrics is not None
    modulestore = _scrape(observed.modulestore.running.metrics.address)
    handover = "/ggmodules.internal.v1.ModuleStoreInternalService/Handover"
    assert _value(modulestore, "ggmodules_rpc_requests_total", method=handover, code="OK") >= 1
    # Telemetry follows ModuleStore's outbox: one open WatchOutbox stream.
    assert _value(modulestore, "ggmodules_subscribers",
                  method="/ggmodules.internal.v1.OutboxService/WatchOutbox") == 1

    telemetry_address = observed.telemetry.running.metrics
    assert telemetry_address is not None
    with open_channel(observed.telemetry.address) as channel:
        stub = telemetry_service_pb2_grpc.TelemetryServiceStub(channel)
        stream = stub.Subscribe(tel.SubscribeRequest(run_id=run_id, heartbeat_ms=50))
        next(stream)  # the server is streaming to us: the subscriber is counted
        subscribe = "/ggmodules.telemetry.v1.TelemetryService/Subscribe"
        telemetry = _scrape(telemetry_address.address)
        assert _value(telemetry, "ggmodules_subscribers", method=subscribe) == 1
        stream.cancel()
    for origin in ("modulestore", "registry"):
        assert _value(telemetry, "ggmodules_outbox_lag_events", origin=origin) >= 0


def test_the_flags_turn_traces_and_metrics_on_in_a_service_process(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'registry.db'}"
    plain = ServiceProcess("registry", "--database-url", db)
    try:
        with open_channel(plain.address) as channel:
            registry_service_pb2_grpc.RegistryServiceStub(channel).ListRuns(reg.ListRunsRequest())
    finally:
        assert plain.terminate() == 0
    assert plain.proc.stdout is not None
    assert plain.proc.stdout.read() == "", "no metrics line: metrics are off by default"
    assert '"name": "/ggmodules' not in plain.log_text(), "traces are off by default"

    service = ServiceProcess("registry", "--database-url", db, "--trace", "console", "--metrics-port", "0")
    try:
        assert service.proc.stdout is not None
        line = service.proc.stdout.readline()
        assert line.startswith("metrics registry 127.0.0.1:"), line
        with open_channel(service.address) as channel:
            stub = registry_service_pb2_grpc.RegistryServiceStub(channel)
            stub.ListRuns(reg.ListRunsRequest())
        series = _scrape(line.split()[2])
        assert _value(series, "ggmodules_rpc_requests_total",
                      method="/ggmodules.registry.v1.RegistryService/ListRuns", code="OK") == 1
    finally:
        assert service.terminate() == 0
    # The console exporter wrote the span (flushed on SIGTERM), naming the service.
    log = service.log_text()
    assert '"name": "/ggmodules.registry.v1.RegistryService/ListRuns"' in log
    assert '"service.name": "ggmodules-registry"' in log


def test_an_open_write_session_is_counted_and_its_end_recorded(observed: Observed) -> None:
    session = "/ggmodules.modulestore.v1.ModuleStoreService/Session"
    assert observed.modulestore.running.metrics is not None
    address = observed.modulestore.running.metrics.address
    with observed.client() as gg:
        run = gg.create_run("metrics-session", [Profile("planner")])
        agent = gg.open_instance(run.id, "planner")
        with agent.session() as s:
            s.history.append("user", "counted")  # answered: the stream is open on the server
            assert _value(_scrape(address), "ggmodules_subscribers", method=session) == 1
    assert _value(_scrape(address), "ggmodules_rpc_requests_total", method=session, code="OK") >= 1
