"""What an agent's stores give it: its prompt contributions (R10), its tool calls (R8), archive searches."""

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
from ggmodules.core.modules.caps import DEFAULT_LIMITS, StoreLimits
from ggmodules.core.modules.contents import ArchiveContents
from ggmodules.core.modules.handover import handed_on
from ggmodules.core.modules.prompt import Contribution, render
from ggmodules.core.modules.tools.dispatch import Result, ToolCall, found, result_of, search_of
from ggmodules.storage.modulestore import archive_index, handovers, read_sets, writing
from ggmodules.storage.modulestore.archive_index import vectors
from ggmodules.storage.modulestore.fast_log import FastOutbox
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


def call_tool(
    conn: Connection,
    outbox: FastOutbox,
    run_id: str,
    agent_id: str,
    call: ToolCall,
    limits: StoreLimits = DEFAULT_LIMITS,
) -> Result:
    stores = held(conn, run_id, agent_id, call.kind)
    if not stores:
        successor = handovers.successor_of(conn, run_id, agent_id)
        if successor is not None:
            raise handed_on(agent_id, successor)
        raise FailedPrecondition(
            f"agent {agent_id!r} holds no {call.kind.word} module: {call.tool.name} is not one of its tools",
            reason=Reason.KIND_NOT_HELD,
            metadata={"kind": call.kind.word, "tool": call.tool.name},
        )
    row, read_set_id = stores[0]
    if call.searches:
        search = search_of(call, row.store_id)
        return found(archive_index.search(conn, run_id, row.store_id, row.head_seq, search))
    written = None
    if call.op:
        written = writing.write(conn, outbox, run_id, agent_id, row.store_id, call.op, limits)
    if not call.needs_contents:
        return result_of(call, ArchiveContents(), written)
    if written is not None:
        row = store_row(conn, run_id, row.store_id)
    return result_of(call, contents_of(conn, row, read_sets.load(conn, read_set_id)), written)


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
