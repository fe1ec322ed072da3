"""Builds the Transfer service: its journal database, its stubs to Registry and ModuleStore, its leases,
and the resumer that finishes every transfer left pending (at start-up, after a dependency outage, and
every scan for transfers whose replica died)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import grpc
import structlog
from prometheus_client.core import GaugeMetricFamily

from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.database import open_engine
from ggmodules.runtime.health import database_probe
from ggmodules.runtime.housekeeping import Housekeeper, PruneSettings
from ggmodules.runtime.inline import runner_for
from ggmodules.runtime.security import security_from
from ggmodules.runtime.server import Service
from ggmodules.server.transfer.calls import Calls
from ggmodules.server.transfer.driver import Driver, no_crash
from ggmodules.server.transfer.leases import Leases, LeaseTerms
from ggmodules.server.transfer.resumer import Resumer
from ggmodules.server.transfer.servicer import TransferServicer
from ggmodules.server.transfer.transfers import Transfers
from ggmodules.storage.transfer import TransferRepository
from ggmodules.storage.transfer.repository import prune_ended
from ggmodules.storage.transfer.tables import TrTransferRow
from ggmodules.transfer.v1 import transfer_service_pb2, transfer_service_pb2_grpc


def build_service(
    config: ServiceConfig,
    log: structlog.typing.FilteringBoundLogger,
    *,
    after_step: Callable[[int], None] = no_crash,
) -> Service:
    """`after_step` is told each crash point a transfer reaches (core.transfer.saga): tests pass a hook
    that kills the process there (tests/tools/crashing.py); production leaves it a no-op."""
    engine = open_engine(config, log)
    repo = TransferRepository(engine)
    repo.create_tables()
    run = runner_for(engine)
    security = security_from(config, log)
    calls = Calls(config.registry_address, config.modulestore_address, log, security)
    leases = Leases(repo, LeaseTerms(config.lease_seconds, config.lease_scan_seconds), log, run)
    driver = Driver(repo, calls, leases, log, run, after_step)
    transfers = Transfers(repo, calls, leases, driver, run)
    resumer = Resumer(transfers.pending, transfers.resume, log, scan_seconds=config.lease_scan_seconds)
    log.info("transfer leases", owner=leases.owner, lease_seconds=config.lease_seconds,
             scan_seconds=config.lease_scan_seconds)
    transfers.on_pending = resumer.poke
    servicer = TransferServicer(transfers)
    # The journal is Transfer's request log: its ended transfers are forgotten past the request-log
    # retention window (runtime/housekeeping.py), so it does not grow with every transfer ever made.
    housekeeper = Housekeeper(
        PruneSettings.from_env(),
        lambda prune: repo.transact(lambda unit: prune(unit.conn)),
        run,
        log,
        request_steps=[prune_ended],
        vacuum=(engine, (TrTransferRow.__tablename__,)),
    )

    def register(server: grpc.aio.Server) -> None:
        transfer_service_pb2_grpc.add_TransferServiceServicer_to_server(servicer, server)
        # Registered inside the serving loop: the resumer runs there, starting with every pending transfer.
        resumer.start()
        housekeeper.start()

    async def on_stop() -> None:
        await resumer.stop()
        await housekeeper.stop()
        await calls.close()
        repo.close()

    return Service(
        name="transfer",
        register=register,
        service_names=[transfer_service_pb2.DESCRIPTOR.services_by_name["TransferService"].full_name],
        on_stop=on_stop,
        probe=database_probe(engine),
        extra={"collectors": [JournalPending(repo)], "housekeeper": housekeeper},
        security=security,
    )


class JournalPending:
    """`ggmodules_transfer_journal_pending`: transfers journaled but not yet completed or failed (each is
    driven on by the resumer), counted in the journal when /metrics is scraped."""

    def __init__(self, repo: TransferRepository) -> None:
        self._repo = repo

    def collect(self) -> Iterator[GaugeMetricFamily]:
        pending = self._repo.transact(lambda unit: unit.pending_ids())
        yield GaugeMetricFamily(
            "ggmodules_transfer_journal_pending", "Transfers journaled and not yet finished",
            value=len(pending),
        )
