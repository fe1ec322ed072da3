"""What an agent's stores give it to read: the stores it holds, its prompt contributions (R10), archive
searches. (A tool call, which may write, is usecases/modulestore/tool_call.py.)"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from ggmodules.core.errors import FailedPrecondition, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.modules.archive_search import ArchiveSearch, SearchPage
from ggmodules.core.modules.archive_semantic import thread_text
from ggmodules.core.modules.prompt import Contribution, render
from ggmodules.storage.modulestore import archive_index, read_sets
from ggmodules.storage.modulestore.archive_index import vectors
from ggmodules.storage.modulestore.lookup import HOLDERS, STORES, not_a_holder, require_agent, store_row
from ggmodules.storage.modulestore.reading import contents_of


def held(conn: Connection, run_id: str, agent_id: str, kind: Kind | None = None) -> list[tuple[Any, str]]:
    """The stores an agent actively holds, in kind order, each with its read-set id."""
    require_agent(conn, run_id, agent_id)
    q = (
        select(STORES, HOLDERS.c.read_set_id)
        .join(HOLDERS, (HOLDERS.c.run_id == STORES.c.run_id) & (HOLDERS.c.store_id == STORES.c.store_id))
        .where(HOLDERS.c.run_id == run_id, HOLDERS.c.agent_id == agent_id, HOLDERS.c.active)
        .order_by(STORES.c.kind)
    )
    if kind is not None:
        q = q.where(STORES.c.kind == int(kind))
    return [(r, r.read_set_id) for r in conn.execute(q)]


def render_prompt(conn: Connection, run_id: str, agent_id: str) -> list[Contribution]:
    return [
        render(Kind(row.kind), row.store_id, contents_of(conn, row, read_sets.load(conn, read_set_id)))
        for row, read_set_id in held(conn, run_id, agent_id)
    ]


def search_archive(
    conn: Connection,
    run_id: str,
    agent_id: str,
    store_id: str,
    search: ArchiveSearch,
    query_vector: Sequence[float] = (),
    model: str = "",
) -> SearchPage:
    row = _searchable(conn, run_id, agent_id, store_id)
    return archive_index.search(conn, run_id, store_id, row.head_seq, search, query_vector, model)


def unembedded(
    conn: Connection, run_id: str, agent_id: str, store_id: str, model: str, limit: int
) -> list[tuple[str, int, str]]:
    """Up to `limit` threads the store holds with no vector of `model`: (store_id, seq, text to embed)."""
    row = _searchable(conn, run_id, agent_id, store_id)
    segs = archive_index.searched(conn, run_id, store_id, row.head_seq, 0)
    return [
        (r.store_id, r.seq, thread_text(r.title, [content for _, content in json.loads(r.messages)]))
        for r in (vectors.unembedded(conn, run_id, segs, model, limit) if segs else [])
    ]


def _searchable(conn: Connection, run_id: str, agent_id: str, store_id: str) -> Any:
    """The store's row, once the agent is known to hold it and it is an archive."""
    row = store_row(conn, run_id, store_id, agent_id)
    if not any(r.store_id == store_id for r, _ in held(conn, run_id, agent_id)):
        raise not_a_holder(conn, run_id, agent_id, store_id)
    if row.kind != Kind.ARCHIVE:
        raise FailedPrecondition(
            f"{store_id!r} is a {Kind(row.kind).word} store; search_archive reads archives",
            reason=Reason.WRONG_KIND,
            metadata={"store_id": store_id},
        )
    return row
