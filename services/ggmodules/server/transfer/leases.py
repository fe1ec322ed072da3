"""Transfer leases: which replica drives a pending transfer.

A replica drives a transfer only while it holds the transfer's lease, a row-level claim in the journal
(`lease_owner`, `lease_expires_us`, on the database's clock) taken with a conditional update, so two
replicas never apply steps of one transfer at the same time. The holder renews it every third of
`seconds` while it drives, journals each step only while it still holds it (storage.transfer `save` with
`owner`), and releases it when it stops with the transfer still pending. A replica that dies stops
renewing: once the lease expires, any replica's scan (server.transfer.resumer, every `scan_seconds`) takes
the transfer over and finishes it, so it completes within about `seconds + scan_seconds` of the death
without any client retry. A call for a transfer another replica holds waits for that replica's outcome
(looking at the journal every WAIT_SECONDS) and answers the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass

import structlog

from ggmodules.runtime.inline import Runner
from ggmodules.storage.contention import first_line
from ggmodules.storage.transfer import TransferRepository

# How often a call waiting on another replica's lease looks at the journal again.
WAIT_SECONDS = 0.05


@dataclass(frozen=True)
class LeaseTerms:
    """`--lease-seconds` and `--lease-scan-seconds` (runtime/config.py)."""

    seconds: float = 10.0
    scan_seconds: float = 1.0


class LeaseLost(Exception):
    """Another replica took the transfer over (this one's lease expired): stop driving it."""


def replica_id() -> str:
    """This process's name as a lease owner: unique per process, readable in the journal."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


@dataclass
class Holding:
    """A lease being held; `lost` once a renewal found another owner, `ended` once the transfer ended (its
    last journal write gave the lease up)."""

    transfer_id: str
    lost: bool = False
    ended: bool = False


class Leases:
    def __init__(
        self, repo: TransferRepository, terms: LeaseTerms, log: structlog.typing.FilteringBoundLogger,
        run: Runner = asyncio.to_thread,
    ) -> None:
        self.repo = repo
        self._run = run
        self.terms = terms
        self.owner = replica_id()
        self._log = log

    async def take(self, transfer_id: str) -> bool:
        """True when this replica holds the lease now (taken, or renewed)."""
        taken: bool = await self._run(
            self.repo.transact, lambda unit: unit.lease(transfer_id, self.owner, self.terms.seconds)
        )
        return taken

    async def release(self, transfer_id: str) -> None:
        await self._run(self.repo.transact, lambda unit: unit.release(transfer_id, self.owner))

    @contextlib.asynccontextmanager
    async def held(self, transfer_id: str) -> AsyncIterator[Holding]:
        """Renews the lease while the body drives the transfer; releases it afterwards unless the transfer
        ended (a no-op when another replica holds it). The renewing starts a third of the lease in: a
        transfer that ends sooner (nearly all of them) leaves only a timer to cancel."""
        holding = Holding(transfer_id)
        loop = asyncio.get_running_loop()
        renewing: list[asyncio.Task[None]] = []

        def start() -> None:
            renewing.append(loop.create_task(self._renew(holding), name=f"lease-{transfer_id}"))

        timer = loop.call_later(self.terms.seconds / 3, start)
        try:
            yield holding
        finally:
            timer.cancel()
            for task in renewing:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if not holding.ended:
                with contextlib.suppress(Exception):  # unreachable database: the lease simply expires
                    await self.release(transfer_id)

    async def _renew(self, holding: Holding) -> None:
        """Renews now, then every third of the lease, until the lease is lost (or the task cancelled)."""
        while not holding.lost:
            try:
                if not await self.take(holding.transfer_id):
                    holding.lost = True
                    return
            except Exception as err:  # the database is away: try again; the save fences a stale holder
                self._log.warning("cannot renew a transfer lease", transfer_id=holding.transfer_id,
                                  error=first_line(err))
            await asyncio.sleep(self.terms.seconds / 3)
