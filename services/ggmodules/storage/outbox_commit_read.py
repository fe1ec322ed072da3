"""Issue 9, write→subscriber latency on PostgreSQL: the read a caught-up numbering feed makes once a write
committed (storage/outbox_numbering.py, `NumberingFeed.read_ahead`: the outbox frontier, then the rows after
the numbering position with their streams' heads) is sent by that write's own transaction, in the round
trip of its COMMIT.

Measured (ModuleStore publishing to JetStream, services on PostgreSQL; p50, µs since the client sent the
write), before: the COMMIT's answer was back at 1,519; the feed it woke began at 1,661, its read reached a
worker thread at 1,751, came back from the server at 2,125 and to the event loop at 2,313, and the event was
published at 2,324. After: the COMMIT's answer, with the reading, at 1,769 (the reading's server time is on
the write's way now); the event published at 1,994-2,149. Write→subscriber 3,443 -> 3,109.

A group commit (storage/modulestore/group_commit.py) commits through `commit`: while a feed of this process
waits caught up, `ask` gives the feed's two statements, sent after the COMMIT with a Sync of their own
(`Tx.commit_then`, storage/pg_pipeline.py). They run once the commit is visible, each on a snapshot taken
after the one before, and their rows come back with the COMMIT's answer; a failure of theirs is not the
commit's. `taken` keeps them as the newest `Reading`; the feed woken by the commit numbers them in memory as
if it had read them itself (`NumberingFeed.from_commit`). A feed takes a reading only when
- it was sent after the feed's own last reading came back (`sent` > the feed's `done`; one counter orders
  both): the frontier (storage/outbox_frontier.py) must learn from readings in the order they were taken,
  or an older one would count a barrier's writers gone when they had not yet begun;
- no connection of the engine was made since it was sent (`made`): a connection made since may be the
  first after a server crash, which can hand out again numbers a frontier learnt before it counted final
  (`Frontier.reconnected`);
- the position it read is where the feed stands (`NumberingAhead.numbered`), and no fan-out record is among
  its rows (their holders' heads take a round trip of their own: the feed reads itself).
Any other feed reads itself, as before. Nothing is sent while no feed waits caught up (`waiting`), nor before
a feed learnt the outbox's oids (`oids`): a write pays for the read only when it saves one.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Engine

from ggmodules.storage.engine import connections_made
from ggmodules.storage.outbox import MAX_BATCH_BYTES
from ggmodules.storage.outbox_ahead import NumberingAhead
from ggmodules.storage.outbox_frontier import DRAWN_THEN_WRITERS
from ggmodules.storage.prepared import Prepared, Tx


@dataclass(frozen=True, slots=True)
class Reading:
    """What a commit read for the feeds: the tick before it was sent and once it was back, the engine's
    connections made when it was sent, DRAWN_THEN_WRITERS' row and NumberingAhead.read_statement's rows."""

    sent: int
    done: int
    made: int
    drawn: tuple[Any, ...]
    found: list[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class Asked:
    """What one commit sends after its COMMIT (`statements`), and when (`sent`, `made`)."""

    sent: int
    made: int
    statements: list[tuple[str, Any]]


class CommitReads:
    """One outbox's readings sent by commits, shared by the group commit that sends them and the feeds of
    the same process that take them (module doc)."""

    def __init__(self, ahead: NumberingAhead, engine: Engine) -> None:
        self.engine = engine
        self._ahead = ahead
        self._drawn = Prepared(DRAWN_THEN_WRITERS)
        self._ticks = itertools.count(1)  # next() on it is atomic under the GIL: worker threads and the loop
        self._lock = threading.Lock()
        self._latest: Reading | None = None
        # Feeds waiting caught up for the next commit (changed on the event loop, read by worker threads).
        self.waiting = 0
        # DRAWN_THEN_WRITERS' parameters, as the first feed learnt them (Frontier.oids).
        self.oids: dict[str, int] | None = None

    def tick(self) -> int:
        """The next value of the counter that orders every reading, a commit's or a feed's own."""
        return next(self._ticks)

    def commit(self, tx: Tx) -> None:
        """Sends what waits in `tx` and COMMIT, in one round trip; while a feed waits caught up, with its
        reading after the COMMIT, kept (`ask`, `taken`)."""
        asked = self.ask(tx)
        if asked is None:
            tx.send(commit=True)
            return
        self.taken(asked, tx.commit_then(asked.statements))  # committed: nothing after it raises

    def ask(self, tx: Tx) -> Asked | None:
        """What a commit on `tx` sends after its COMMIT; None while no feed waits caught up."""
        oids = self.oids
        if self.waiting <= 0 or oids is None:
            return None
        made = connections_made(self.engine)
        statements = [self._drawn.bound(tx, oids), self._ahead.read_statement(tx, MAX_BATCH_BYTES)]
        return Asked(self.tick(), made, statements)

    def taken(self, asked: Asked, rows: list[Any] | None) -> None:
        """The rows `asked`'s statements returned (None: they failed, nothing is kept), kept as the newest
        reading unless a later-sent one is kept already."""
        if rows is None:
            return
        drawn, found = rows
        row = drawn.fetchone()
        if row is None:
            return
        reading = Reading(asked.sent, self.tick(), asked.made, tuple(row), found.fetchall())
        with self._lock:
            if self._latest is None or self._latest.sent < reading.sent:
                self._latest = reading

    def since(self, done: int) -> Reading | None:
        """The newest reading, if it was sent after `done` (a feed's own last reading came back)."""
        latest = self._latest
        return latest if latest is not None and latest.sent > done else None
