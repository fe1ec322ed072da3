"""A commit signal: write paths call `notify()` after a transaction with outbox events commits; stream readers
wait on it instead of polling.

`notify` may be called from any thread (a worker thread on PostgreSQL, the event loop on SQLite) and costs
one counter increment when nobody waits. A reader takes `version` BEFORE it reads the database and then
waits for a version beyond it, so a commit between its read and its wait is never missed.
"""

from __future__ import annotations

import asyncio
import threading


class CommitSignal:
    def __init__(self) -> None:
        self._version = 0
        self._lock = threading.Lock()
        self._waiters: dict[asyncio.Future[None], asyncio.AbstractEventLoop] = {}

    @property
    def version(self) -> int:
        return self._version

    def notify(self) -> None:
        with self._lock:
            self._version += 1
            if not self._waiters:
                return
            waiters, self._waiters = self._waiters, {}
        for fut, loop in waiters.items():
            loop.call_soon_threadsafe(_wake, fut)

    async def wait(self, seen: int, timeout: float) -> bool:
        """True once a commit after `seen` was notified; False when `timeout` seconds pass first."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._version != seen:
                return True
            self._waiters[fut] = loop
        try:
            await asyncio.wait_for(fut, timeout)
            return True
        except TimeoutError:
            return False
        finally:
            with self._lock:
                self._waiters.pop(fut, None)


def _wake(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
