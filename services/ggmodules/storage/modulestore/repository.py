"""The ModuleStore repository: every read and write of its tables goes through here.

Mutations run in one transaction each (`mutate`, transaction.py), a use case (ggmodules.usecases
.modulestore) on a unit of work (unit.py), together with their outbox events and request-log entry. Reads
that decide nothing are methods here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from sqlalchemy.engine import Connection, Engine

from ggmodules.core.kinds import Kind
from ggmodules.core.modules.archive_search import ArchiveSearch, SearchPage
from ggmodules.core.modules.caps import DEFAULT_LIMITS, StoreLimits
from ggmodules.core.modules.prompt import Contribution
from ggmodules.core.modules.views import StoreInfo, StoreView
from ggmodules.storage.commits import CommitSignal
from ggmodules.storage.idempotency import RequestLog
from ggmodules.storage.migrations import migrate
from ggmodules.storage.modulestore import agent_reads, reading, run_ends
from ggmodules.storage.modulestore.archive_index import vectors
from ggmodules.storage.modulestore.group_commit import GroupCommit
from ggmodules.storage.modulestore.tables import MsOutbox, MsOutboxPosition, MsRequest, MsStreamHead
from ggmodules.storage.modulestore.transaction import Transactions
from ggmodules.storage.outbox import Outbox, OutboxPage
from ggmodules.storage.outbox_ahead import Ahead
from ggmodules.storage.outbox_commit_read import CommitReads
from ggmodules.storage.outbox_pruning import OutboxPositions

T = TypeVar("T")
# The outbox events' `origin`.
ORIGIN = "modulestore"


class ModuleStoreRepository:
    def __init__(self, engine: Engine, *, pinned: bool = False, limits: StoreLimits = DEFAULT_LIMITS) -> None:
        migrate(engine, "modulestore")
        self.limits = limits
        # Stream seqs are numbered when the outbox is read (storage/outbox_sequencing.py), not by each write.
        self.outbox = Outbox(
            ORIGIN, MsOutbox, MsStreamHead, sequenced_in=MsOutboxPosition.__table__  # type: ignore[attr-defined]
        )
        self.requests = RequestLog(MsRequest)
        self.committed = CommitSignal()  # notified after every mutation: wakes WatchOutbox streams
        self.transactions = Transactions(engine, self.outbox, self.requests, self.committed, pinned=pinned)
        # The one transaction path: `mutate(request key, use case on a unit of work, response type)`.
        self.mutate = self.transactions.mutate
        self.positions = OutboxPositions(self.outbox, MsOutboxPosition)
        self.request_table = MsRequest.__table__  # type: ignore[attr-defined]
        # PostgreSQL: a batch's COMMIT carries the read of the outbox's caught-up feeds
        # (storage/outbox_commit_read.py).
        ahead = self.outbox.numbering_ahead
        self.commit_reads = (
            CommitReads(ahead, engine) if ahead is not None and engine.dialect.name == "postgresql" else None
        )
        # Writes from the event loop: concurrent ones share a transaction (group_commit.py).
        self.batched = GroupCommit(self.transactions, reads=self.commit_reads)

    # ---- reads --------------------------------------------------------------------------------------

    def read(self, fn: Callable[[Connection], T]) -> T:
        return self.transactions.read(fn)

    def get_store(
        self, run_id: str, store_id: str, agent_id: str, after_seq: int, page_size: int
    ) -> StoreView:
        return self.read(lambda c: reading.get_store(c, run_id, store_id, agent_id, after_seq, page_size))

    def list_stores(
        self, run_id: str, kind: Kind | None, page_size: int, page_token: str
    ) -> tuple[list[StoreInfo], str]:
        return self.read(lambda c: reading.list_stores(c, run_id, kind, page_size, page_token))

    def render_prompt(self, run_id: str, agent_id: str) -> list[Contribution]:
        return self.read(lambda c: agent_reads.render_prompt(c, run_id, agent_id))

    def search_archive(
        self,
        run_id: str,
        agent_id: str,
        store_id: str,
        search: ArchiveSearch,
        query_vector: Sequence[float] = (),
        model: str = "",
    ) -> SearchPage:
        return self.read(
            lambda c: agent_reads.search_archive(c, run_id, agent_id, store_id, search, query_vector, model)
        )

    def unembedded(
        self, run_id: str, agent_id: str, store_id: str, model: str, limit: int
    ) -> list[tuple[str, int, str]]:
        return self.read(lambda c: agent_reads.unembedded(c, run_id, agent_id, store_id, model, limit))

    def save_vectors(self, run_id: str, model: str, rows: Sequence[tuple[str, int, bytes]]) -> None:
        """Thread embeddings: derived data, written outside any mutation (no event, no request id)."""
        with self.transactions.begin() as conn:
            vectors.save(conn, run_id, model, rows)

    def end_run(self, run_id: str, status: str) -> None:
        """Records that Registry ended the run (idempotent: the first end is kept)."""
        with self.transactions.begin() as conn:
            run_ends.end_run(conn, run_id, status)

    def ended_runs(self) -> dict[str, str]:
        return self.read(run_ends.ended_runs)

    def read_ahead(self, after: int, limit: int) -> tuple[OutboxPage, Ahead] | None:
        """SQLite, a caught-up WatchOutbox: its page numbered in memory, to send before `keep`
        (Outbox.read_ahead); None when it does not apply."""
        tx = self.transactions.bare()
        ahead = None if tx is None else self.outbox.read_ahead(tx, after, limit)
        if ahead is None:
            return None
        page = OutboxPage(ahead.events, max(ahead.newest, ahead.through), ahead.more)
        return self.positions.checked(after, ahead.pruned, page), ahead

    def keep(self, ahead: Ahead) -> None:
        """Stores the numbers of a page `read_ahead` gave, once it was sent."""
        if ahead.params:
            self.read(lambda conn: self.outbox.keep(conn, ahead))

    def read_outbox(self, after: int, limit: int, run_id: str) -> OutboxPage:
        def read(c: Connection) -> OutboxPage:
            page = self.outbox.read(c, after, limit, run_id)  # PostgreSQL: as far as it is final (settled)
            return self.positions.check(c, after, page)  # after the rows: a prune between the two is seen

        return self.read(read)

    def close(self) -> None:
        self.batched.close()
        self.transactions.close()
