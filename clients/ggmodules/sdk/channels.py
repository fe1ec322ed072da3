"""What the sync and asyncio transports share: channels and stubs per service, and how a call begins.

Retries are data, not code: every channel carries the suite's gRPC service config
(`protos/ggmodules/service_config.json`), its `retryPolicy` taken from the client's `RetryPolicy`, so gRPC
resends a call answered UNAVAILABLE or ABORTED, the same bytes (the same request id) each time. The SDK
sets each call's deadline itself (`ClientConfig.timeout`), so the config's timeouts are dropped here: a
caller may ask for a longer deadline, or none. A mutation sent without a request id is not safe to resend;
it goes over a channel without a retry policy.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import grpc

from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc
from ggmodules.registry.v1 import registry_service_pb2_grpc
from ggmodules.runtime.channels import PUSHBACK, SERVICE_CONFIG, channel_target
from ggmodules.sdk.config import ClientConfig, RetryPolicy
from ggmodules.sdk.credentials import Wallet, bearer
from ggmodules.sdk.plans import Plan
from ggmodules.telemetry.v1 import telemetry_service_pb2_grpc
from ggmodules.transfer.v1 import transfer_service_pb2_grpc

Headers = tuple[tuple[str, str], ...]
Options = list[tuple[str, Any]]

STUBS: dict[str, Callable[[Any], Any]] = {
    "registry": registry_service_pb2_grpc.RegistryServiceStub,
    "modulestore": modulestore_service_pb2_grpc.ModuleStoreServiceStub,
    "transfer": transfer_service_pb2_grpc.TransferServiceStub,
    "telemetry": telemetry_service_pb2_grpc.TelemetryServiceStub,
}

# A stream resumed after an outage reconnects as soon as the service is back, not after grpc's default
# reconnect backoff of up to 2 minutes.
RECONNECT_OPTIONS: Options = [("grpc.initial_reconnect_backoff_ms", 200),
                              ("grpc.max_reconnect_backoff_ms", 2000)]


def sdk_service_config(retry: RetryPolicy | None) -> dict[str, Any]:
    """The suite's service config with `retry` as the unary methods' policy (none: no retries) and without
    timeouts (the SDK gives each call its deadline)."""
    config = copy.deepcopy(SERVICE_CONFIG)
    for method_config in config["methodConfig"]:
        method_config.pop("timeout", None)
        if "retryPolicy" in method_config:
            if retry is None or retry.max_attempts <= 1:
                del method_config["retryPolicy"]
            else:
                method_config["retryPolicy"] = retry.as_service_config()
    return config


class Stubs:
    """Every service's stub, over channels opened on first use by `open_channel(address, options)` (sync or
    asyncio), one per address and retry policy (an address naming several replicas, comma-separated or
    `dns:///name:port`, is one channel over all of them, round_robin); shared by every transport derived
    from one client."""

    def __init__(self, config: ClientConfig, open_channel: Callable[[str, Options], Any]) -> None:
        self._addresses = {service: getattr(config, service) for service in STUBS}
        self._base_options: Options = [*config.channel_options, *RECONNECT_OPTIONS]
        self._open = open_channel
        self.channels: dict[tuple[str, RetryPolicy | None], Any] = {}
        self._stubs: dict[tuple[str, RetryPolicy | None], Any] = {}

    def stub(self, service: str, retry: RetryPolicy | None) -> Any:
        key = (service, retry)
        stub = self._stubs.get(key)
        if stub is None:
            address = self._addresses[service]
            channel = self.channels.get((address, retry))
            if channel is None:
                service_config = json.dumps(sdk_service_config(retry))
                options = [*self._base_options, ("grpc.service_config", service_config)]
                channel = self.channels[(address, retry)] = self._open(channel_target(address), options)
            stub = self._stubs[key] = STUBS[service](channel)
        return stub

    def method(self, plan: Plan[Any], retry: RetryPolicy) -> Any:
        return getattr(self.stub(plan.service, retry if plan.retryable else None), plan.method)


class TransportBase:
    def __init__(self, config: ClientConfig, wallet: Wallet | None = None) -> None:
        self._config = config
        # Shared by every transport derived from this one: agents opened through one are known to all.
        self.wallet = wallet or Wallet(config.operator_credential)

    @property
    def config(self) -> ClientConfig:
        return self._config

    def _headers(self, plan: Plan[Any]) -> Headers:
        """The metadata of a call, its credential included (every attempt gRPC makes sends the same)."""
        return plan.headers((*self._config.metadata, *bearer(self.wallet.pick(plan.method, plan.request))))

    def _stream_metadata(self, method: str, request: Any, metadata: Headers) -> Headers:
        """The metadata of a server stream: the client's, the credential `method` carries, the caller's."""
        return (*self._config.metadata, *bearer(self.wallet.pick(method, request)), *metadata)

    def _attempts(self, plan: Plan[Any], err: grpc.RpcError) -> int:
        """How many attempts the channel's retry policy allowed a call that failed with `err`:
        one when the service told the channel not to retry (a negative `grpc-retry-pushback-ms`: it had
        retried what it depends on itself)."""
        retry = self._config.retry
        if not (plan.retryable and retry.retries(err.code())) or pushed_back(err.trailing_metadata()):
            return 1
        return retry.max_attempts


def pushed_back(trailers: Any) -> bool:
    """Whether a call's trailers tell the client not to retry it (gRPC retry pushback, a negative value)."""
    return any(key == PUSHBACK and str(value).startswith("-") for key, value in trailers or ())
