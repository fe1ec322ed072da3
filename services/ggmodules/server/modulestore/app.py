"""Builds the ModuleStore service: engine from the configured URL, its tables, the servicer.

Database work is synchronous. On PostgreSQL it runs on worker threads (asyncio.to_thread) so the event
loop keeps serving while a transaction waits on the server. On SQLite it runs inline on the loop, on one
pinned connection: SQLite admits one writer at a time anyway, an append transaction costs a few hundred
microseconds, and the hop to a worker thread and back (plus a pool checkout) would add a large share of
that to every call, against an append target of 1.5x a no-op RPC.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import structlog

from ggmodules.internal.v1 import modulestore_internal_service_pb2_grpc as internal_grpc
from ggmodules.modulestore.v1 import modulestore_service_pb2 as svc
from ggmodules.modulestore.v1 import modulestore_service_pb2_grpc as svc_grpc
from ggmodules.runtime.config import ServiceConfig
from ggmodules.runtime.database import open_engine
from ggmodules.runtime.health import database_probe
from ggmodules.runtime.housekeeping import Housekeeper, PruneSettings
from ggmodules.runtime.origin_relay import OriginRelay
from ggmodules.runtime.outbox_service import SERVICE_NAME as OUTBOX_SERVICE
from ggmodules.runtime.outbox_service import OutboxServicer
from ggmodules.runtime.security import security_from
from ggmodules.runtime.server import Service
from ggmodules.semantic import load_embedder
from ggmodules.server.modulestore.internal import SERVICE_NAME as INTERNAL_SERVICE
from ggmodules.server.modulestore.internal import ModuleStoreInternalServicer
from ggmodules.server.modulestore.servicer import ModuleStoreServicer
from ggmodules.server.modulestore.settings import store_limits_from
from ggmodules.storage.commits import listen_for_commits
from ggmodules.storage.engine import is_sqlite
from ggmodules.storage.kept import KeptConnection
from ggmodules.storage.modulestore.repository import ModuleStoreRepository
from ggmodules.storage.modulestore.tables import MsHolder, MsStore, MsStreamHead

T = TypeVar("T")
SERVICE_NAME = svc.DESCRIPTOR.services_by_name["ModuleStoreService"].full_name


async def run_inline(fn: Callable[..., T], *args: Any) -> T:
    return fn(*args)


async def run_in_thread(fn: Callable[..., T], *args: Any) -> T:
    return await asyncio.to_thread(fn, *args)


def build_service(config: ServiceConfig, log: structlog.typing.FilteringBoundLogger) -> Service:
    security = security_from(config, log)
    engine = open_engine(config, log)
    inline = is_sqlite(engine)
    repo = ModuleStoreRepository(engine, pinned=inline, limits=store_limits_from())
    run = run_inline if inline else run_in_thread
    # WatchOutbox numbers the outbox's stream seqs as it reads (storage/outbox_sequencing.py), so its reads
    # are writes: `repo.read` is the transaction for both. SQLite: pruning runs inline too, on the pinned
    # connection, in batches short enough not to be felt.
    # On PostgreSQL they are pipelined on a connection kept out of the pool (storage/outbox_numbering.py).
    kept = None if inline else KeptConnection(engine, autocommit=True)
    ahead = (repo.read_ahead, repo.keep) if inline else None
    outbox = OutboxServicer(
        repo.outbox,
        repo.read,
        repo.committed,
        run,
        repo.positions,
        repo.read,
        kept=kept,
        ahead=ahead,
        commit_reads=repo.commit_reads,
    )
    relay = _origin_relay(config, outbox, repo, run, log)
    # What pruning deletes, and what writes update (a store's state, its holders, stream heads).
    churned = (MsStore.__tablename__, MsHolder.__tablename__, MsStreamHead.__tablename__)
    housekeeper = Housekeeper(
        PruneSettings.from_env(), repo.read, run, log, positions=repo.positions, requests=repo.request_table,
        vacuum=(engine, (repo.outbox.table_name, repo.request_table.name, *churned)),
    )  # fmt: skip
    # Commits of other ModuleStore replicas on the same PostgreSQL database wake WatchOutbox at once. This
    # replica's own commits signal as they commit: their NOTIFY would only make every watcher read again.
    listener = listen_for_commits(engine, repo.outbox.table_name, repo.committed.notify, skip_own=True)
    embedder = load_embedder(config.semantic)
    servicer = ModuleStoreServicer(repo, run_inline if inline else run_in_thread, embedder)
    internal = ModuleStoreInternalServicer(servicer)
    semantic = embedder.name if embedder else "off"
    log.info("modulestore storage ready", backend=engine.dialect.name, semantic=semantic)

    def register(server: Any) -> None:
        svc_grpc.add_ModuleStoreServiceServicer_to_server(servicer, server)
        internal_grpc.add_ModuleStoreInternalServiceServicer_to_server(internal, server)
        outbox.register(server)
        housekeeper.start()

    async def on_start() -> None:
        if relay is not None:
            await relay.start()

    async def on_stop() -> None:
        if relay is not None:
            await relay.stop()
        await housekeeper.stop()
        if listener is not None:
            listener.stop()
        if kept is not None:
            kept.close()
        repo.close()

    return Service(
        name="modulestore",
        register=register,
        service_names=[SERVICE_NAME, INTERNAL_SERVICE, OUTBOX_SERVICE],
        on_start=on_start,
        on_stop=on_stop,
        probe=database_probe(engine),
        extra={"repository": repo, "housekeeper": housekeeper, "commit_listener": listener, "relay": relay},
        security=security,
    )


def _origin_relay(
    config: ServiceConfig,
    outbox: OutboxServicer,
    repo: ModuleStoreRepository,
    run: Callable[..., Any],
    log: structlog.typing.FilteringBoundLogger,
) -> OriginRelay | None:
    """With Telemetry's event log on JetStream (`--event-log nats://...`, the same URL Telemetry has),
    ModuleStore publishes its own events there (runtime/origin_relay.py); else Telemetry relays them."""
    if not config.event_log or config.event_log == "sql":
        return None
    if not config.event_log.startswith(("nats://", "tls://")):
        raise ValueError(
            f"event log {config.event_log!r} is not understood: ModuleStore publishes its events itself only "
            "to NATS JetStream (nats://host:port, the URL Telemetry's --event-log has); leave it empty to "
            "have Telemetry relay them"
        )

    async def writing(fn: Callable[[Any], Any]) -> Any:
        return await run(repo.read, fn)

    relay = OriginRelay(config.event_log, "modulestore", outbox.feed, repo.positions, writing, log)
    outbox.relay = relay
    log.info("publishing own events to the event log", stream=relay.target.stream)
    return relay
