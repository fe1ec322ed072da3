"""Where a service's short database transactions run: inline on the event loop for a SQLite file (a local
transaction of well under a millisecond; no hand-off to a worker thread and back), in a worker thread for
PostgreSQL (a network round trip the loop must not wait on)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from sqlalchemy.engine import Engine

from ggmodules.storage.engine import is_sqlite

T = TypeVar("T")


class Runner(Protocol):
    """`run(fn, *args)`: fn's answer, computed inline or in a worker thread."""

    def __call__(self, fn: Callable[..., T], /, *args: Any) -> Awaitable[T]: ...


async def run_inline(fn: Callable[..., T], *args: Any) -> T:
    return fn(*args)


def runner_for(engine: Engine) -> Runner:
    return run_inline if is_sqlite(engine) else asyncio.to_thread
