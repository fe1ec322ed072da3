"""WatchOutbox's reads of an outbox numbered when read (ModuleStore's, storage/outbox_sequencing.py) on
PostgreSQL: numbering and page in two round trips, on a connection kept out of the pool; for a reader that
is caught up (where the numbering stands: WatchOutbox and ModuleStore's own JetStream relay, between
writes), one round trip on no transaction, the page numbered in memory and its numbers stored after it was
sent (`read_ahead`, `keep`: storage/outbox_ahead.py). Write→subscriber on PostgreSQL with ModuleStore
publishing to JetStream, p50 on a 2-core VM: 3.70 ms before, 2.9-3.3 ms after (the no-op: 0.6 ms). When a
commit of this process woke it, that commit read for it, in its own round trip (`from_commit`,
storage/outbox_commit_read.py): no round trip of its own at all.

`Outbox.read` inside a pool transaction sends each statement on its own: the pool's ping, BEGIN, the
frontier, the numbering position, the rows, the stream heads, the rows' and the position's updates, the
page, the pruning point and COMMIT, ten waits on the server on the way of every event to Telemetry (issue
10: write→subscriber on PostgreSQL was 13x the no-op). Here, with psycopg's pipeline mode
(storage/pg_pipeline.py, `Tx.deferring`):
1. BEGIN, the position row locked (FOR UPDATE: numberers take turns, as in `Sequencer.sequence`), the
   frontier (storage/outbox_frontier.py), the rows after the position and their streams' heads, at once.
   The rows cannot be bounded by the frontier in SQL, which is only known once its answer is back: they
   are read past it and cut here, as PipelinedFeed cuts its page (each statement runs on a snapshot taken
   after the one before, so every number up to the frontier was final before the rows were read; those
   that committed are in). The rows' lower bound is the position read under the lock (a subquery: nobody
   else moves it meanwhile), and so are the heads (only numberers move them, under that lock).
2. The heads set and the rows' and the position's updates, the page (which sees them), the pruning point
   and COMMIT.
A fan-out record's holders' streams are in its payload, not in the rows' columns: a batch with one whose
head was not read reserves its heads in a round trip of its own between the two (`Sequencer.number`).
The numbers are the same as `Sequencer.sequence` gives.

The numbering's COMMIT does not wait for the WAL flush (`synchronous_commit = off` for this transaction
only; it acknowledges nothing to a client): one fsync less on every event's way to Telemetry (issue 10).
Its numbers may then be sent before they are on disk, and a server crash may lose them; the next pass numbers
the same rows again with the same numbers:
- they are a function of the stream heads and the rows after the position, in origin_seq order, and only
  numbering passes move the heads and the position;
- the crash keeps a prefix of the WAL: the lost passes' writes go with everything after them, and a pass is
  lost only with every pass after it (any later synchronous commit on the server flushes them all first);
- every row a lost pass numbered was committed by a write with synchronous commit on, which PostgreSQL
  makes visible only once flushed: after the crash every one of them is there, in the same order; a row
  that was not there (rolled back) stays away. The sequence comes back past every flushed row's number,
  so a number it hands out again (drawn by a transaction that did not commit) is above every row numbered:
  the same rows get the same numbers, new rows come after them, and a watcher's position (the last event
  sent, a committed row) stays below every new row.
The frontier this feed keeps in memory (what it learnt was final) may be ahead of a recovered server's
sequence, which can hand those numbers out again: once the engine has made a new connection (a crashed
server broke every old one) it is learnt afresh (`Frontier.reconnected`, storage/outbox_frontier.py).
tests/modulestore/test_numbering_crash.py kills a server mid-load and checks every served event's stream seq
afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from ggmodules.storage import fan_out
from ggmodules.storage.contention import DEFAULT, retrying
from ggmodules.storage.engine import connections_made
from ggmodules.storage.kept import KeptConnection
from ggmodules.storage.outbox import MAX_BATCH_BYTES, Outbox, OutboxPage, page_statement
from ggmodules.storage.outbox_ahead import Ahead
from ggmodules.storage.outbox_commit_read import CommitReads
from ggmodules.storage.outbox_frontier import DRAWN_THEN_WRITERS, Frontier
from ggmodules.storage.outbox_pipelined import bounds_statement
from ggmodules.storage.outbox_pruning import PRUNED_THROUGH, OutboxPositions
from ggmodules.storage.outbox_sequencing import Sequencer
from ggmodules.storage.prepared import Prepared, Tx

_NO_END = 2**63 - 1
# The numbering's COMMIT does not wait for its WAL to reach disk (see the module doc).
_NO_FLUSH_WAIT = "SET LOCAL synchronous_commit TO off"


@dataclass(frozen=True, slots=True)
class _Numbered:
    page: OutboxPage  # not checked against the pruning point yet
    pruned: int  # the pruning point, read after the page
    # Rows within the frontier were left to number (more than a batch).
    left: bool


class NumberingFeed:
    """One watcher's reads of one numbered-when-read outbox on PostgreSQL (see the module doc)."""

    def __init__(
        self,
        outbox: Outbox,
        positions: OutboxPositions,
        kept: KeptConnection,
        reads: CommitReads | None = None,
    ) -> None:
        """`reads`: the readings this process's commits send for its caught-up feeds
        (storage/outbox_commit_read.py)."""
        sequencer = outbox.sequencer
        assert sequencer is not None, "only an outbox numbered when read"
        self._sequencer: Sequencer = sequencer
        self._kept = kept
        self._frontier = Frontier(outbox.table_name)
        self._positions = positions
        self._drawn = Prepared(DRAWN_THEN_WRITERS)
        self._page = Prepared(page_statement(outbox.rows, postgres=True))
        self._bounds = bounds_statement(outbox, positions)
        self._ahead = outbox.numbering_ahead
        self._reads = reads
        self._done = 0  # when this feed's own last reading came back (CommitReads.tick)

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """While a caught-up feed waits for the next commit: commits send its reading (CommitReads)."""
        if self._reads is None:
            yield
            return
        self._reads.waiting += 1
        try:
            yield
        finally:
            self._reads.waiting -= 1

    def from_commit(
        self, after: int, limit: int, max_bytes: int = MAX_BATCH_BYTES
    ) -> tuple[OutboxPage, Ahead] | None:
        """`read_ahead`'s page from the reading a commit sent for it (storage/outbox_commit_read.py), with no
        round trip; None when there is none it may take (then `read_ahead`)."""
        reads = self._reads
        reading = None if reads is None else reads.since(self._done)
        if reads is None or reading is None or self._ahead is None:
            return None
        self._frontier.reconnected(reads.engine)
        if reading.made != connections_made(reads.engine):  # maybe the first after a crash: not taken
            return None
        self._done = reading.done
        final, held = self._frontier.moved(*reading.drawn)
        if self._ahead.has_fan_out(reading.found):
            return None
        return self._numbered_page(reading.found, after, limit, max_bytes, final, held, None)

    def read_ahead(
        self, after: int, limit: int, max_bytes: int = MAX_BATCH_BYTES
    ) -> tuple[OutboxPage, Ahead | None]:
        """A reader positioned where the numbering stands (caught up): the rows after it up to the frontier,
        numbered in memory, in one round trip on no transaction (storage/outbox_ahead.py), with what `keep`
        stores once they were sent; any other reader: `read` (and None)."""
        got = retrying(
            lambda: self._kept.read(lambda c: self._ahead_once(c, after, limit, max_bytes)), DEFAULT
        )
        return got if got is not None else (self.read(after, limit, max_bytes), None)

    def _ahead_once(
        self, conn: Connection, after: int, limit: int, max_bytes: int
    ) -> tuple[OutboxPage, Ahead] | None:
        if self._ahead is None:
            return None
        self._frontier.reconnected(conn.engine)
        oids = self._learnt(conn)
        tx = Tx(conn)  # no BEGIN: each statement on its own snapshot, the rows' taken after the frontier's
        try:
            drawn, read = tx.send([self._drawn.bound(tx, oids), self._ahead.read_statement(tx, max_bytes)])
            self._came_back()
            found, heads = read.fetchall(), None
            if self._ahead.has_fan_out(found):  # its holders' heads: a round trip of its own
                heads = tx.send([self._ahead.run_heads_statement(tx)])[0].fetchall()
        except BaseException as exc:  # the implicit transaction ended with the pipeline: nothing to roll back
            _let_go_if_broken(conn, exc)
            raise
        last, holding = drawn.fetchone()
        final, held = self._frontier.moved(last, holding)
        return self._numbered_page(found, after, limit, max_bytes, final, held, heads)

    def _numbered_page(
        self,
        found: list[tuple[Any, ...]],
        after: int,
        limit: int,
        max_bytes: int,
        final: int,
        held: bool,
        heads: list[tuple[Any, ...]] | None,
    ) -> tuple[OutboxPage, Ahead] | None:
        assert self._ahead is not None
        ahead = self._ahead.numbered(found, after, limit, max_bytes, final, heads)
        if ahead is None:
            return None
        page = OutboxPage(ahead.events, max(ahead.newest, ahead.through), ahead.more, held)
        return self._positions.checked(after, ahead.pruned, page), ahead

    def _learnt(self, conn: Connection) -> dict[str, int]:
        """The frontier's oids, told to the commits that read for this feed."""
        oids = self._frontier.oids(conn)
        if self._reads is not None and self._reads.oids is None:
            self._reads.oids = oids
        return oids

    def _came_back(self) -> None:
        """This feed's own reading is back: a commit's sent before it is older, never taken after it."""
        if self._reads is not None:
            self._done = self._reads.tick()

    def keep(self, ahead: Ahead) -> None:
        """Stores the numbers of a page `read_ahead` gave, once it was sent, unless another reader stored
        them first (then they are the same)."""
        if ahead.params and self._ahead is not None:
            retrying(lambda: self._kept.read(lambda c: self._keep_once(c, ahead)), DEFAULT)

    def _keep_once(self, conn: Connection, ahead: Ahead) -> None:
        assert self._ahead is not None
        tx = Tx(conn)
        tx.deferring(begin=True)
        tx.defer(_NO_FLUSH_WAIT)  # as the numbering's own COMMIT (module doc)
        try:
            tx.send([self._ahead.keep_statement(tx, ahead)], commit=True)
        except BaseException as exc:
            _roll_back(conn, tx, exc)
            raise

    def read(self, after: int, limit: int, max_bytes: int = MAX_BATCH_BYTES) -> OutboxPage:
        """The events after `after` as far as the outbox is final, numbered first; like OutboxFeed.read over
        `Outbox.read`, checked against the pruning point as OutboxPositions.check does."""
        while True:
            numbered = retrying(
                lambda: self._kept.read(lambda c: self._once(c, after, limit, max_bytes)), DEFAULT
            )
            if numbered.page.events or not numbered.left:
                return self._positions.checked(after, numbered.pruned, numbered.page)

    def _once(self, conn: Connection, after: int, limit: int, max_bytes: int) -> _Numbered:
        self._frontier.reconnected(conn.engine)  # a server crash may have lost numbers (module doc)
        oids = self._learnt(conn)
        tx = Tx(conn)
        tx.deferring(begin=True)  # the kept connection is in autocommit: BEGIN is this transaction's own
        tx.defer(_NO_FLUSH_WAIT)
        try:
            return self._numbered(tx, oids, after, limit, max_bytes)
        except BaseException as exc:
            _roll_back(conn, tx, exc)
            raise

    def _numbered(self, tx: Tx, oids: dict[str, int], after: int, limit: int, max_bytes: int) -> _Numbered:
        seq = self._sequencer
        first = [seq.locked_position(tx), self._drawn.bound(tx, oids), seq.unnumbered(tx)]
        position, drawn, rows, heads = tx.send([*first, seq.unnumbered_heads(tx)])
        self._came_back()
        found = position.fetchone()
        if found is None:  # a database made before any row was written: nothing to number before
            seq.start(tx)
            tx.send(commit=True)
            return _Numbered(OutboxPage([], 0, True), 0, left=True)
        done = int(found[0])
        last, holding = drawn.fetchone()
        final, held = self._frontier.moved(last, holding)
        fetched = rows.fetchall()
        within = [r for r in fetched if int(r[0]) <= final]
        left = len(within) == len(fetched) == seq.batch
        numbered = done
        if final > done:
            numbered = final
            if within:
                taken = seq.number(tx, within, heads.fetchall())  # the updates wait for the page
                if taken < len(within):
                    left = True
                if left:
                    numbered = int(within[taken - 1][0])
            seq.raise_to(tx, numbered)
        params = {"after": after, "through": numbered, "limit": limit, "max_bytes": max_bytes}
        page, bounds = tx.send(
            [self._page.bound(tx, params), self._bounds.bound(tx, {"name": PRUNED_THROUGH})], commit=True
        )
        result = page.fetchall()
        pruned, newest = bounds.fetchone()
        got = [(int(k), bytes(p)) for k, p, _ in result if p is not None]
        more = len(got) < len(result) or len(result) == limit
        events, cut = fan_out.page(got, after, limit, max_bytes)
        head = int(result[0][2]) if result else int(newest or 0)
        return _Numbered(OutboxPage(events, head, more or cut or left, held), int(pruned or 0), left)


def _roll_back(conn: Connection, tx: Tx, exc: BaseException) -> None:
    """Ends the failed transaction. A connection psycopg found broken is invalidated and `exc` marked so: the
    kept connection lets it go and reads once more on a fresh one (numbering again is harmless: the rows
    are numbered under the position's lock, once, whether or not the lost COMMIT took effect)."""
    dbapi: Any = getattr(conn.connection, "dbapi_connection", None)
    if not getattr(dbapi, "broken", False):
        try:
            tx.rollback()
            return
        except Exception:
            if not getattr(dbapi, "broken", False):
                raise
    _let_go_if_broken(conn, exc)


def _let_go_if_broken(conn: Connection, exc: BaseException) -> None:
    """A connection psycopg found broken: invalidated, and `exc` marked so (KeptConnection lets it go)."""
    dbapi: Any = getattr(conn.connection, "dbapi_connection", None)
    if not getattr(dbapi, "broken", False):
        return
    conn.invalidate()
    with contextlib.suppress(AttributeError):
        exc.connection_invalidated = True  # type: ignore[attr-defined]
