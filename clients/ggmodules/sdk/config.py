"""Client configuration: a frozen dataclass, read once and passed in."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ggmodules.runtime.channels import BALANCING_OPTIONS, MESSAGE_LIMITS

DEFAULT_REGISTRY = "127.0.0.1:50051"
DEFAULT_MODULESTORE = "127.0.0.1:50052"
DEFAULT_TRANSFER = "127.0.0.1:50053"


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded exponential backoff. Only UNAVAILABLE and ABORTED (contention: nothing was applied) are
    retried, and only for reads and for mutations carrying a request id (the SDK gives every mutation one,
    reused on each attempt)."""

    max_attempts: int = 4
    initial_backoff: float = 0.1
    max_backoff: float = 2.0
    multiplier: float = 2.0
    # Fraction of each delay taken off at random, so callers that failed together retry apart.
    jitter: float = 0.2

    def delay(self, failures: int, rand: float) -> float:
        """Seconds to wait after the `failures`-th failed attempt; `rand` in [0, 1)."""
        base = min(self.max_backoff, self.initial_backoff * self.multiplier ** (failures - 1))
        return base * (1 - self.jitter * rand)


NO_RETRY = RetryPolicy(max_attempts=1)


@dataclass(frozen=True)
class ClientConfig:
    """Each address is one `host:port`, several comma-separated (replicas of the service), or a gRPC target
    such as `dns:///name:port`; calls are spread over the replicas that answer (round_robin)."""

    registry: str = DEFAULT_REGISTRY
    modulestore: str = DEFAULT_MODULESTORE
    transfer: str = DEFAULT_TRANSFER
    # Default deadline of every call in seconds, retries included; None waits forever.
    timeout: float | None = 10.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # Sent with every call, besides the `x-request-id` header the SDK adds.
    metadata: tuple[tuple[str, str], ...] = ()
    # The services' own message-size limits, so a big window reads back whole; round_robin over replicas.
    channel_options: tuple[tuple[str, Any], ...] = (*MESSAGE_LIMITS, *BALANCING_OPTIONS)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> ClientConfig:
        """`GGMODULES_REGISTRY_ADDRESS`, `GGMODULES_MODULESTORE_ADDRESS`, `GGMODULES_TRANSFER_ADDRESS`,
        `GGMODULES_TIMEOUT` (seconds)."""
        env = os.environ if env is None else env
        timeout = env.get("GGMODULES_TIMEOUT")
        return cls(
            registry=env.get("GGMODULES_REGISTRY_ADDRESS", DEFAULT_REGISTRY),
            modulestore=env.get("GGMODULES_MODULESTORE_ADDRESS", DEFAULT_MODULESTORE),
            transfer=env.get("GGMODULES_TRANSFER_ADDRESS", DEFAULT_TRANSFER),
            timeout=float(timeout) if timeout else cls.timeout,
        )
