"""Waiting for what another process or thread brings about when it offers nothing to wait on (a position
acknowledged every 0.25 s, a metric counted after the status was sent, a checkpoint thread's pass): one poll
with a deadline, so no test hand-writes its own."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(check: Callable[[], T], what: str, timeout: float = 30.0, every: float = 0.02) -> T:
    """`check()`'s first truthy result, asked every `every` seconds; AssertionError naming `what` and the
    last result once `timeout` seconds passed without one."""
    end = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() >= end:
            raise AssertionError(f"{what}: not within {timeout:g} s (last: {got!r})")
        time.sleep(every)
