"""Reading an append-only log through a store's fork lineage.

A fork records its parent and the parent's head at fork time (`parent_limit`); the fork's own rows start
after it. So the log of a store is its own rows plus, walking up, each ancestor's rows in
(ancestor.parent_limit, child.parent_limit]. Writes after the fork on either side never cross (R11).
"""

from __future__ import annotations

import json

from sqlalchemy import Table, and_, or_, select
from sqlalchemy.engine import Connection

from ggmodules.core.modules.contents import ArchivedThread, Message
from ggmodules.storage.modulestore.lookup import STORES
from ggmodules.storage.modulestore.tables import MsArchivedThread, MsMessage

MESSAGES: Table = MsMessage.__table__  # type: ignore[attr-defined]
THREADS: Table = MsArchivedThread.__table__  # type: ignore[attr-defined]


def segments(conn: Connection, run_id: str, store_id: str) -> list[tuple[str, int, int]]:
    """(store_id, after, upto) per store of the lineage whose rows make up this store's log."""
    out: list[tuple[str, int, int]] = []
    current, upto = store_id, None
    while current:
        row = conn.execute(
            select(STORES.c.parent_store_id, STORES.c.parent_limit, STORES.c.head_seq).where(
                STORES.c.run_id == run_id, STORES.c.store_id == current
            )
        ).one()
        top = row.head_seq if upto is None else upto
        if top > row.parent_limit:
            out.append((current, row.parent_limit, top))
        current, upto = row.parent_store_id, row.parent_limit
    return out


def _where(table: Table, run_id: str, segs: list[tuple[str, int, int]], after_seq: int):  # type: ignore[no-untyped-def]
    return and_(
        table.c.run_id == run_id,
        table.c.seq > after_seq,
        or_(*(and_(table.c.store_id == sid, table.c.seq > lo, table.c.seq <= hi) for sid, lo, hi in segs)),
    )


def read_messages(
    conn: Connection, run_id: str, store_id: str, after_seq: int = 0, limit: int = 0
) -> tuple[Message, ...]:
    segs = segments(conn, run_id, store_id)
    if not segs:
        return ()
    q = (
        select(MESSAGES.c.seq, MESSAGES.c.role, MESSAGES.c.content, MESSAGES.c.turn)
        .where(_where(MESSAGES, run_id, segs, after_seq))
        .order_by(MESSAGES.c.seq)
    )
    if limit > 0:
        q = q.limit(limit)
    return tuple(Message(r.seq, r.role, r.content, r.turn) for r in conn.execute(q))


def read_threads(
    conn: Connection, run_id: str, store_id: str, after_seq: int = 0, limit: int = 0
) -> list[ArchivedThread]:
    segs = segments(conn, run_id, store_id)
    if not segs:
        return []
    q = (
        select(THREADS.c.seq, THREADS.c.title, THREADS.c.messages)
        .where(_where(THREADS, run_id, segs, after_seq))
        .order_by(THREADS.c.seq)
    )
    if limit > 0:
        q = q.limit(limit)
    return [thread_of(r.seq, r.title, r.messages) for r in conn.execute(q)]


def thread_of(seq: int, title: str, messages_json: str) -> ArchivedThread:
    messages = tuple(
        Message(i, role, content, 0) for i, (role, content) in enumerate(json.loads(messages_json), start=1)
    )
    return ArchivedThread(seq, title, messages)


def thread_json(thread: ArchivedThread) -> str:
    return json.dumps(
        [[m.role, m.content] for m in thread.messages], separators=(",", ":"), ensure_ascii=False
    )
