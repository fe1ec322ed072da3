"""Traces and metrics, both off by default: one flag each (`--trace`, `--metrics-port`).

Traces (OpenTelemetry). `--trace console` writes finished spans as JSON to stderr, `--trace otlp` sends
them to an OTLP/gRPC collector (`OTEL_EXPORTER_OTLP_ENDPOINT`, default localhost:4317; the `otlp` extra).
Every RPC a service serves is a server span (opentelemetry-instrumentation-grpc's grpc.aio interceptor);
every call one service makes to another (`runtime.channels.service_channel`) is a client span whose context
travels in the call's metadata (W3C `traceparent`), so a transfer is one trace: Transfer's span for the
RPC, its calls to Registry and ModuleStore, and theirs. Health checks, reflection and the outbox plumbing
(Telemetry following WatchOutbox, a stream per connection rather than per request) are not traced.

Metrics (Prometheus). `--metrics-port N` serves `/metrics` over HTTP on the service's host (0: any free
port, logged and printed as `metrics <service> <host:port>` after the `ready` line). Every service:
`ggmodules_rpc_requests_total` (by method and status code: the RPC rate), `ggmodules_rpc_errors_total` (by
method, code and ErrorReason), `ggmodules_rpc_duration_seconds` (unary latency histogram),
`ggmodules_subscribers` (open server streams by method: Subscribe on Telemetry, WatchOutbox followers on the
others, write Sessions on ModuleStore); gauges a service adds read at scrape time: Telemetry's
`ggmodules_outbox_lag_events` per origin, Transfer's `ggmodules_transfer_journal_pending`. Each service has
its own registry, so several services in one process (the tests) keep their series apart.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.instrumentation.grpc import aio_client_interceptors, aio_server_interceptor, filters
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.registry import Collector

TRACE_EXPORTERS = ("console", "otlp")
_STATUS_DETAILS_KEY = "grpc-status-details-bin"
_UNTRACED = filters.negate(
    filters.any_of(
        filters.health_check(),
        filters.service_prefix("grpc.reflection"),
        filters.service_prefix("ggmodules.internal.v1.OutboxService"),
    )
)
_UNMEASURED = ("/grpc.health", "/grpc.reflection")

# The process's tracer provider for the channels it opens to other services (None: tracing off). One per
# process: a service runs in its own process; tests running several in one share the provider they install.
_client_provider: TracerProvider | None = None


@dataclass(frozen=True)
class Observe:
    """What one server reports: spans to `tracer_provider`, metrics on `metrics_port` (None: neither)."""

    tracer_provider: TracerProvider | None = None
    metrics_port: int | None = None


def tracer_provider(service: str, exporter: str) -> TracerProvider:
    """A provider naming the service (`service.name` ggmodules-<service>) and exporting as asked."""
    if exporter not in TRACE_EXPORTERS:
        raise ValueError(f"--trace {exporter!r}: use one of {', '.join(TRACE_EXPORTERS)} (or leave it unset)")
    provider = TracerProvider(resource=Resource.create({"service.name": f"ggmodules-{service}"}))
    provider.add_span_processor(BatchSpanProcessor(_exporter(exporter)))
    return provider


def _exporter(name: str) -> SpanExporter:
    if name == "console":
        return ConsoleSpanExporter(out=sys.stderr)
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (  # type: ignore[import-not-found,unused-ignore]
            OTLPSpanExporter,
        )
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise ValueError("--trace otlp needs the otlp extra: pip install -e '.[otlp]'") from exc
    exporter: SpanExporter = OTLPSpanExporter()
    return exporter


def install_client_tracing(provider: TracerProvider | None) -> None:
    """Sibling channels opened from now on carry trace context and make client spans (None: stop)."""
    global _client_provider
    _client_provider = provider


def client_interceptors() -> list[grpc.aio.ClientInterceptor]:
    """The interceptors for a channel to another service: none while tracing is off."""
    if _client_provider is None:
        return []
    return list(aio_client_interceptors(tracer_provider=_client_provider, filter_=_UNTRACED))  # type: ignore[no-untyped-call]


def server_interceptors(observe: Observe | None, metrics: Metrics | None) -> list[grpc.aio.ServerInterceptor]:
    """Outermost first: the span covers everything the call does, the metrics see the final status."""
    found: list[grpc.aio.ServerInterceptor] = []
    if observe is not None and observe.tracer_provider is not None:
        tracing = aio_server_interceptor(  # type: ignore[no-untyped-call]
            tracer_provider=observe.tracer_provider, filter_=_UNTRACED
        )
        found.append(tracing)
    if metrics is not None:
        found.append(MetricsInterceptor(metrics))
    return found


class Metrics:
    """One service's series, in its own registry, served over HTTP once `serve` is called."""

    def __init__(self, service: str, collectors: Iterable[Collector] = ()) -> None:
        self.service = service
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "ggmodules_rpc_requests", "RPCs served, by method and gRPC status code (rate: the RPC rate)",
            ["service", "method", "code"], registry=self.registry,
        )
        self.errors = Counter(
            "ggmodules_rpc_errors", "RPCs refused, by method, gRPC status code and ErrorReason "
            "(reason '' when the status carried none)",
            ["service", "method", "code", "reason"], registry=self.registry,
        )
        self.duration = Histogram(
            "ggmodules_rpc_duration_seconds", "Time to answer a unary RPC, refusals included",
            ["service", "method"], registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.streams = Gauge(
            "ggmodules_subscribers", "Server streams open now, by method (Subscribe: telemetry "
            "subscribers; WatchOutbox: outbox followers; Session: write sessions)",
            ["service", "method"], registry=self.registry,
        )
        for collector in collectors:
            self.registry.register(collector)
        self._http: Any = None
        self.address = ""

    def serve(self, host: str, port: int) -> str:
        """Starts the HTTP endpoint (a daemon thread of prometheus_client's); its `host:port`."""
        self._http, _thread = start_http_server(port, addr=host, registry=self.registry)
        self.address = f"{host}:{self._http.server_port}"
        return self.address

    def close(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None

    def observe(self, method: str, code: grpc.StatusCode, reason: str, seconds: float | None) -> None:
        self.requests.labels(self.service, method, code.name).inc()
        if code is not grpc.StatusCode.OK:
            self.errors.labels(self.service, method, code.name, reason).inc()
        if seconds is not None:
            self.duration.labels(self.service, method).observe(seconds)


class MetricsInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Counts each call by its final status and ErrorReason, read back from what the call answered."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        method = details.method
        if handler is None or method.startswith(_UNMEASURED):
            return handler
        metrics = self._metrics

        if handler.unary_unary is not None:
            inner = handler.unary_unary

            async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                started = time.perf_counter()
                try:
                    return await inner(request, context)
                finally:
                    code, reason = _outcome(context)
                    metrics.observe(method, code, reason, time.perf_counter() - started)

            return grpc.unary_unary_rpc_method_handler(
                unary,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )

        if handler.unary_stream is not None:
            inner_stream = handler.unary_stream

            async def stream(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                gauge = metrics.streams.labels(metrics.service, method)
                gauge.inc()
                try:
                    async for item in inner_stream(request, context):
                        yield item
                finally:
                    gauge.dec()
                    code, reason = _outcome(context)
                    metrics.observe(method, code, reason, None)

            return grpc.unary_stream_rpc_method_handler(
                stream,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )

        if handler.stream_stream is not None:
            inner_bidi = handler.stream_stream

            async def bidi(requests: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                gauge = metrics.streams.labels(metrics.service, method)
                gauge.inc()
                try:
                    async for item in inner_bidi(requests, context):
                        yield item
                finally:
                    gauge.dec()
                    code, reason = _outcome(context)
                    metrics.observe(method, code, reason, None)

            return grpc.stream_stream_rpc_method_handler(
                bidi,
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return handler


def _outcome(context: grpc.aio.ServicerContext) -> tuple[grpc.StatusCode, str]:
    """The call's status code (OK unless it was aborted or cancelled) and its ErrorInfo reason, if any."""
    code = context.code()
    if code is None:
        code = grpc.StatusCode.CANCELLED if context.cancelled() else grpc.StatusCode.OK
    elif isinstance(code, int):
        code = next((c for c in grpc.StatusCode if c.value[0] == code), grpc.StatusCode.UNKNOWN)
    reason = ""
    for key, value in context.trailing_metadata() or ():
        if key == _STATUS_DETAILS_KEY:
            status = status_pb2.Status.FromString(value)
            for detail in status.details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    reason = info.reason
    return code, reason
