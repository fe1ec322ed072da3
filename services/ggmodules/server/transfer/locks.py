"""One driver per transfer inside this process: every call (and the resumer) for one transfer shares this
process's lease on it, so they take turns here. Across processes the lease (server.transfer.leases) decides.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class Locks:
    def __init__(self) -> None:
        # transfer id -> (its lock, how many calls use it); dropped when the last one leaves.
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, transfer_id: str, *, wait: bool = True) -> AsyncIterator[bool]:
        """This process's one driver of the transfer; yields False (without waiting) when `wait` is False
        and another call of this process drives it."""
        lock, users = self._locks.get(transfer_id, (asyncio.Lock(), 0))
        if not wait and lock.locked():
            yield False
            return
        self._locks[transfer_id] = (lock, users + 1)
        try:
            async with lock:
                yield True
        finally:
            lock, users = self._locks[transfer_id]
            if users == 1:
                del self._locks[transfer_id]
            else:
                self._locks[transfer_id] = (lock, users - 1)
