"""Pruning in the background (issue 14): a service's outbox below what every follower has durably taken
in, and its request log past the retention window (Transfer's: its journal's ended transfers). Passes run
every `interval` seconds, each as short transactions of at most `batch` rows, so a write never waits long
behind one.

| setting | environment | default |
|---|---|---|
| outbox safety margin | GGMODULES_OUTBOX_PRUNE_MARGIN | 1,000 events kept below the slowest follower |
| pass interval | GGMODULES_PRUNE_INTERVAL_SECONDS | 30 seconds |
| rows per transaction | GGMODULES_PRUNE_BATCH | 2,000 |
| request-log retention | GGMODULES_REQUEST_LOG_RETENTION_SECONDS | 86,400 (one day) |
| VACUUM at most this long apart (PostgreSQL) | GGMODULES_VACUUM_INTERVAL_SECONDS | 60 |

On PostgreSQL each pass counts the rows it deleted to the service's `Vacuum` (storage/vacuum.py), which
VACUUMs the tables the service deletes from or updates once 1,024 rows have gone, or a minute after the
last (GGMODULES_VACUUM_INTERVAL_SECONDS), so their space is used again whether or not autovacuum runs.

A retry whose request id was claimed longer ago than the retention window is treated as a new request
(applied again). The SDK never retries that late: no unary call of its has a deadline past
`MAX_RETRY_SPAN_SECONDS` (600) and gRPC retries only within a call's deadline (sdk/config.py), so keep the
window above that; a smaller one is accepted, with a warning.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from sqlalchemy import Table
from sqlalchemy.engine import Connection, Engine

from ggmodules.storage.outbox_pruning import OutboxPositions, prune_requests
from ggmodules.storage.vacuum import Vacuum

# The longest the SDK goes on retrying one call (clients/ggmodules/sdk/config.py keeps to it; services do not
# import the SDK, so the figure is repeated, and a test holds the two equal).
MAX_RETRY_SPAN_SECONDS = 600.0


DEFAULT_MARGIN, DEFAULT_INTERVAL, DEFAULT_BATCH, DEFAULT_REQUEST_WINDOW = 1000, 30.0, 2000, 86_400.0
DEFAULT_VACUUM_INTERVAL = 60.0


@dataclass(frozen=True, slots=True)
class PruneSettings:
    margin: int = DEFAULT_MARGIN
    interval: float = DEFAULT_INTERVAL
    batch: int = DEFAULT_BATCH
    request_window: float = DEFAULT_REQUEST_WINDOW
    vacuum_interval: float = DEFAULT_VACUUM_INTERVAL

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> PruneSettings:
        env = os.environ if env is None else env
        return cls(
            margin=int(_number(env, "GGMODULES_OUTBOX_PRUNE_MARGIN", DEFAULT_MARGIN, 0)),
            interval=_number(env, "GGMODULES_PRUNE_INTERVAL_SECONDS", DEFAULT_INTERVAL, 0.01),
            batch=int(_number(env, "GGMODULES_PRUNE_BATCH", DEFAULT_BATCH, 1)),
            request_window=_number(
                env, "GGMODULES_REQUEST_LOG_RETENTION_SECONDS", DEFAULT_REQUEST_WINDOW, 1
            ),
            vacuum_interval=_number(
                env, "GGMODULES_VACUUM_INTERVAL_SECONDS", DEFAULT_VACUUM_INTERVAL, 0.01
            ),
        )


def _number(env: Mapping[str, str], name: str, default: float, least: float) -> float:
    """`name`'s value (`_` and `,` allowed between digits), `default` when unset; refused, naming the
    variable, when it is not a finite number of at least `least` (float() alone named neither, and took nan
    and inf)."""
    value = env.get(name, "").strip().replace("_", "").replace(",", "")
    try:
        number = float(value) if value else default
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number < least:
        raise ValueError(f"{name} must be a number of at least {least:g}, not {env.get(name)!r}")
    return number


# Runs `fn(conn)` in one transaction of the service's database (committed) and returns its result.
Writing = Callable[[Callable[[Connection], Any]], Any]
Run = Callable[..., Awaitable[Any]]


class Housekeeper:
    """One service's pruning task: its outbox (if it has followers) and its request log."""

    def __init__(
        self,
        settings: PruneSettings,
        writing: Writing,
        run: Run,
        log: structlog.typing.FilteringBoundLogger,
        *,
        positions: OutboxPositions | None = None,
        requests: Table | None = None,
        steps: Sequence[Callable[[Connection, int], int]] = (),
        request_steps: Sequence[Callable[[Connection, float, int], int]] = (),
        vacuum: tuple[Engine, Sequence[str]] | None = None,
    ) -> None:
        """`steps`: more outbox pruning, (conn, batch) -> rows deleted; `request_steps`: request logs of
        another shape (Transfer's journal), (conn, retention window in seconds, batch) -> ids forgotten;
        `vacuum`: the service's engine and the tables those delete from and its writes update, VACUUMed on
        PostgreSQL (storage/vacuum.py) at most `settings.vacuum_interval` apart."""
        self.settings = settings
        self._writing = writing
        self._run = run
        self._log = log
        self._positions = positions
        self._requests = requests
        self._steps = steps
        self._request_steps = request_steps
        self._vacuum = Vacuum.of(*vacuum, seconds=settings.vacuum_interval) if vacuum else None
        self._task: asyncio.Task[None] | None = None
        if settings.request_window < MAX_RETRY_SPAN_SECONDS:
            log.warning(
                "request-log retention is shorter than the SDK's retry span: a late retry may apply twice",
                retention_seconds=settings.request_window,
                sdk_retry_span_seconds=MAX_RETRY_SPAN_SECONDS,
            )

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="housekeeping")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _loop(self) -> None:
        while True:
            try:
                await self.prune_once()
            except Exception:
                self._log.exception("pruning failed; trying again next pass")
            await asyncio.sleep(self.settings.interval)

    async def prune_once(self) -> tuple[int, int]:
        """One pass: (outbox events pruned, request ids forgotten)."""
        s = self.settings
        events = requests = 0
        positions, table = self._positions, self._requests
        if positions is not None:
            events = await self._batches(lambda c: positions.prune_step(c, s.margin, s.batch))
        if table is not None:
            requests = await self._batches(lambda c: prune_requests(c, table, s.request_window, s.batch))
        for step in self._steps:
            events += await self._batches(lambda c, step=step: step(c, s.batch))  # type: ignore[misc]
        for forget in self._request_steps:
            requests += await self._batches(
                lambda c, forget=forget: forget(c, s.request_window, s.batch)  # type: ignore[misc]
            )
        if events or requests:
            self._log.info("pruned", outbox_events=events, request_ids=requests)
        if self._vacuum is not None:
            await asyncio.to_thread(self._vacuum.deleted, events + requests)
        return events, requests

    async def _batches(self, step: Callable[[Connection], int]) -> int:
        total = 0
        while True:
            n = int(await self._run(self._writing, step))
            total += n
            if n < self.settings.batch:
                return total
            await asyncio.sleep(0)  # let calls waiting on the loop in between batches
