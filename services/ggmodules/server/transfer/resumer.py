"""Resumes pending transfers in the background: every one journaled before a restart, any a dependency
outage left behind, and, every `scan_seconds`, any whose lease expired (the replica driving it died).
Retries back off from MIN_DELAY to MAX_DELAY seconds while something stays stuck."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

MIN_DELAY = 0.2
MAX_DELAY = 2.0


class Resumer:
    def __init__(
        self,
        pending: Callable[[], Awaitable[list[str]]],
        drive: Callable[[str], Awaitable[Any]],
        log: structlog.typing.FilteringBoundLogger,
        scan_seconds: float = 1.0,
    ) -> None:
        self._scan_seconds = scan_seconds
        self._pending = pending
        self._drive = drive
        self._log = log
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Starts in the running loop; the first pass takes every transfer journaled as pending."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="transfer-resumer")

    def poke(self) -> None:
        """Something was left pending: try again soon."""
        self._wake.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        delay = MIN_DELAY
        while True:
            self._wake.clear()
            if await self._pass():
                delay = MIN_DELAY
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._scan_seconds)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)
            delay = min(delay * 2, MAX_DELAY)

    async def _pass(self) -> bool:
        """Drives every pending transfer once; True when none is left stuck."""
        try:
            pending = await self._pending()
        except Exception as err:  # the database is away: try again later
            self._log.warning("resumer cannot read the journal", error=str(err))
            return False
        done = True
        for transfer_id in pending:
            try:
                await self._drive(transfer_id)
            except Exception as err:
                self._log.info("transfer still pending", transfer_id=transfer_id, error=str(err))
                done = False
        return done
