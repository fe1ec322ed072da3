"""Message- and header-size limits, and the options of every channel opened to a service of the suite.

One limit for the whole suite: a service accepts and sends messages up to `MAX_MESSAGE_BYTES`, and every
channel opened to it (a service's channel to another, Telemetry following an outbox, the SDK, the console)
sends and receives up to the same size. A channel left at grpc's 4 MiB receive default would refuse, with
RESOURCE_EXHAUSTED, an answer the service was right to send. The limit is large enough for any message the
domain accepts (a single text is at most 256 KiB), so the domain's own limits answer first.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from pathlib import Path
from typing import Any

import grpc

from ggmodules.common.v1 import common_pb2

MAX_MESSAGE_BYTES = 16 * 1024 * 1024
# A call's headers (or an answer's trailers) together. grpc has two limits: past its soft one (8 KiB by
# default) it refuses a call at random, more often the nearer the call is to the hard one (16 KiB), past
# which it refuses them all. Measured on a server left at the defaults, 40 calls each: 9 KiB headers 3
# refused, 12 KiB 25, 15 KiB 39. Both set to one figure make the limit a line: every call up to it is
# served, every call past it refused RESOURCE_EXHAUSTED, by grpc, before any of the suite's code runs. The
# suite's own headers fit with room to spare (a credential it issues is about 250 bytes for a full-length
# run id), and a refusal's trailers stay under 12 KiB (runtime/errors.py).
MAX_METADATA_BYTES = 16 * 1024

MESSAGE_LIMITS: tuple[tuple[str, int], ...] = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_metadata_size", MAX_METADATA_BYTES),
    ("grpc.absolute_max_metadata_size", MAX_METADATA_BYTES),
)

# A replica that stops answering without closing its connections (a frozen process, a host that lost power,
# a network partition) would otherwise keep every call sent to it waiting until its deadline, and keep being
# chosen: its connection still looks open. Every channel of the suite pings each connection KEEPALIVE_MS
# after it last heard from it and closes it when no answer comes within KEEPALIVE_TIMEOUT_MS: the calls on
# it fail UNAVAILABLE, which the service config retries, on another replica (round_robin leaves out one
# that is not connected). `ping_timeout_ms` too: a ping grpc sends of its own (to size flow-control
# windows) was otherwise given a minute, and no keepalive ping went out while it waited. Idle channels ping
# too, so a dead replica is found before a call is sent to it. 4 s + 2 s leaves a call of the suite's
# default 10 s deadline time for its retry. Measured with one of two ModuleStore replicas stopped
# (SIGSTOP): without this, every other call waited out its deadline (DEADLINE_EXCEEDED after 8.3 s) for as
# long as the replica stayed stopped; with it, a call in flight failed over after about 2 s and every later
# call went to the live replica. The servers admit pings this often (SERVER_KEEPALIVE_OPTIONS).
KEEPALIVE_MS = 4_000
KEEPALIVE_TIMEOUT_MS = 2_000
KEEPALIVE_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_time_ms", KEEPALIVE_MS),
    ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.http2.ping_timeout_ms", KEEPALIVE_TIMEOUT_MS),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),  # unlimited: an idle channel keeps checking
)
# A server's side of it: clients' pings are admitted every second, with or without calls (grpc's default
# refuses more than one every 5 minutes and closes the connection of a client that pings more often), and
# the server pings its clients in turn, so a stream to a client that vanished ends.
SERVER_KEEPALIVE_OPTIONS: tuple[tuple[str, int], ...] = (
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", 1_000),
    ("grpc.keepalive_time_ms", 30_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.http2.ping_timeout_ms", 10_000),
)

# gRPC retry pushback (gRFC A6): a trailer by which a server tells the caller's channel when to retry a call,
# or (a negative value) not to. A service that already retried a dependency it could not reach sends it
# (runtime/errors.py), so retries do not multiply hop by hop.
PUSHBACK = "grpc-retry-pushback-ms"

# Retries and default deadlines as data, one gRPC service config for every client of the suite (the services'
# calls to each other, the Python SDK, the TypeScript client): UNAVAILABLE and ABORTED (contention; nothing
# was applied) are retried by gRPC itself for every unary method, all of which are reads or carry a
# request id; the streams (Subscribe, WatchOutbox) are resumed from a cursor by their callers instead.
SERVICE_CONFIG_PATH = Path(common_pb2.__file__).resolve().parents[2] / "service_config.json"


def load_service_config(path: Path = SERVICE_CONFIG_PATH) -> dict[str, Any]:
    """The suite's gRPC service config (`protos/ggmodules/service_config.json`), as a dict to extend."""
    config: dict[str, Any] = json.loads(path.read_text())
    return config


SERVICE_CONFIG: dict[str, Any] = load_service_config()


def service_config_option(config: dict[str, Any] | None = None) -> tuple[str, str]:
    """The channel option carrying a service config (the suite's unless given)."""
    return ("grpc.service_config", json.dumps(SERVICE_CONFIG if config is None else config))


# A service's channel to another: the limits, and reconnecting quickly once the other is back rather than
# after grpc's default backoff of up to 2 minutes, on its own subchannels (not the process-wide pool), so
# a channel made afresh connects at once.
SERVICE_CHANNEL_OPTIONS: tuple[tuple[str, int | str], ...] = (
    *MESSAGE_LIMITS,
    *KEEPALIVE_OPTIONS,
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2000),
    ("grpc.use_local_subchannel_pool", 1),
    service_config_option(),
)


def service_channel(address: str, tls: grpc.ChannelCredentials | None = None) -> grpc.aio.Channel:
    """An asyncio channel from one service to another (open it inside the loop that will use it), to every
    replica its address names (`channel_target`); over TLS when the service's security gives channel
    credentials; it carries the caller's trace context when tracing is on (runtime/observability.py)."""
    # Imported here: the SDK imports this module for MESSAGE_LIMITS and needs none of OpenTelemetry.
    from ggmodules.runtime.observability import client_interceptors

    target, options = channel_target(address), list(SERVICE_CHANNEL_OPTIONS)
    interceptors = client_interceptors() or None
    if tls is not None:
        return grpc.aio.secure_channel(target, tls, options=options, interceptors=interceptors)
    return grpc.aio.insecure_channel(target, options=options, interceptors=interceptors)


# Several replicas behind one address. An address is `host:port`, several of them comma-separated
# (`10.0.0.1:50052,10.0.0.2:50052`), or any gRPC target such as `dns:///modulestore:50052` (every record
# of the name). Calls are spread over every replica that answers (round_robin, chosen through the gRPC
# service config) and go only to those that do, so a replica that dies is left out of the next call.
# The policy is part of the suite's service config (service_config.json, with the retries), so a channel
# carries one `grpc.service_config` option: BALANCING_OPTIONS is that option.
ROUND_ROBIN_SERVICE_CONFIG: dict[str, Any] = {"loadBalancingConfig": SERVICE_CONFIG["loadBalancingConfig"]}
BALANCING_OPTIONS: tuple[tuple[str, str], ...] = (service_config_option(),)


def channel_target(address: str) -> str:
    """The gRPC target of an address: unchanged when it is one `host:port` or a target with a scheme
    (`dns:///…`, `ipv4:…`, `unix:…`); several comma-separated `host:port`s become one `ipv4:`/`ipv6:`
    target (names resolved once, here: use `dns:///name:port` for names whose records change)."""
    parts = [p.strip() for p in address.split(",") if p.strip()]
    if len(parts) <= 1:
        return parts[0] if parts else address
    resolved = [_resolve(part) for part in parts]
    families = {family for family, _ in resolved}
    if families == {socket.AF_INET}:
        return "ipv4:" + ",".join(hostport for _, hostport in resolved)
    if families == {socket.AF_INET6}:
        return "ipv6:" + ",".join(hostport for _, hostport in resolved)
    raise ValueError(f"the addresses {address!r} mix IPv4 and IPv6; give one family or a dns:/// name")


def _resolve(part: str) -> tuple[int, str]:
    host, sep, port = part.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"address {part!r} is not host:port")
    host = host.strip("[]")
    try:
        return socket.AF_INET, f"{ipaddress.IPv4Address(host)}:{port}"
    except ValueError:
        pass
    try:
        return socket.AF_INET6, f"[{ipaddress.IPv6Address(host)}]:{port}"
    except ValueError:
        pass
    infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    v4 = [info for info in infos if info[0] == socket.AF_INET]
    family, _, _, _, sockaddr = (v4 or infos)[0]
    ip = sockaddr[0]
    return family, (f"{ip}:{port}" if family == socket.AF_INET else f"[{ip}]:{port}")
