"""The retry budget of one call, shared by the sync and asyncio transports (which only sleep)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import grpc

from ggmodules.sdk.config import RetryPolicy

# Failures after which nothing was applied: the service could not be reached, or refused under contention.
RETRIED = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED})
# No retry starts later than this after the call began, whatever its timeout (None included): the services
# forget a request id after their request-log retention (GGMODULES_REQUEST_LOG_RETENTION_SECONDS, one day
# by default, never meant to be below this), and a retry after that would be applied as a new request.
MAX_RETRY_SPAN_SECONDS = 600.0


class Attempts:
    """Counts attempts, decides whether a failure is retried, and keeps the call's overall deadline."""

    def __init__(
        self,
        policy: RetryPolicy,
        timeout: float | None,
        *,
        retryable: bool,
        clock: Callable[[], float] = time.monotonic,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self._policy = policy
        self._retryable = retryable
        self._clock = clock
        self._rand = rand
        self._deadline = None if timeout is None else clock() + timeout
        self._last_retry = clock() + MAX_RETRY_SPAN_SECONDS
        self.count = 0

    def timeout(self) -> float | None:
        """The deadline left for the next attempt; counts it as made."""
        self.count += 1
        if self._deadline is None:
            return None
        return max(self._deadline - self._clock(), 0.0)

    def retry_after(self, code: grpc.StatusCode) -> float | None:
        """Seconds to wait before the next attempt, or None when this failure is final."""
        if code not in RETRIED or not self._retryable:
            return None
        if self.count >= self._policy.max_attempts:
            return None
        delay = self._policy.delay(self.count, self._rand())
        if self._deadline is not None and self._clock() + delay >= self._deadline:
            return None
        if self._clock() + delay >= self._last_retry:
            return None
        return delay
