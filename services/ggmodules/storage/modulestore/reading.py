"""Reads: a store as a holder sees it, a run's stores page by page, an agent's stores for its prompt."""

from __future__ import annotations

import base64
from typing import Any

from sqlalchemy import select, tuple_
from sqlalchemy.engine import Connection

from ggmodules.core.errors import InvalidArgument, Reason
from ggmodules.core.kinds import Kind
from ggmodules.core.modules import pages, skills
from ggmodules.core.modules.board import BoardState
from ggmodules.core.modules.contents import ArchiveContents, Contents
from ggmodules.core.modules.figures import Figures
from ggmodules.core.modules.history import HistoryState
from ggmodules.core.modules.memories import MemoriesState
from ggmodules.core.modules.states import decode_state
from ggmodules.core.modules.tasks import TasksState
from ggmodules.core.modules.views import HolderInfo, StoreInfo, StoreView
from ggmodules.core.roster import Caps
from ggmodules.core.vocabulary import MemoryStrategy, Origin
from ggmodules.storage.modulestore import read_sets
from ggmodules.storage.modulestore.lineage import read_messages, read_threads
from ggmodules.storage.modulestore.lookup import (
    HOLDERS,
    STORES,
    head_of,
    missing,
    not_a_holder,
    require_agent,
    run_exists,
    store_row,
)


def get_store(
    conn: Connection, run_id: str, store_id: str, agent_id: str = "", after_seq: int = 0, page_size: int = 0
) -> StoreView:
    """`agent_id` empty: an observer's view (no read set); otherwise the reader must hold the store. A
    history's messages and an archive's threads after `after_seq`, at most `page_size` (0: all of them;
    the servicer never asks for that)."""
    row = store_row(conn, run_id, store_id, agent_id)
    holders = _holders(conn, run_id, [store_id]).get(store_id, [])
    read_set: tuple[str, ...] = ()
    if agent_id:
        me = next((h for h in holders if h[0].agent_id == agent_id), None)
        if me is None:
            require_agent(conn, run_id, agent_id)
            raise not_a_holder(conn, run_id, agent_id, store_id)
        read_set = read_sets.load(conn, me[1])
    info = _info(row, [h for h, _ in holders], read_set)
    return StoreView(info, contents_of(conn, row, read_set, after_seq, page_size))


def contents_of(
    conn: Connection, row: Any, read_set: tuple[str, ...] = (), after_seq: int = 0, page_size: int = 0
) -> Contents:
    head = head_of(row)
    state = decode_state(head.kind, row.state)
    if isinstance(state, HistoryState):
        return state.contents(read_messages(conn, row.run_id, row.store_id, after_seq, page_size), head)
    if isinstance(state, MemoriesState | TasksState | BoardState):
        return state.contents()
    if isinstance(state, skills.SkillsState):
        return state.contents(head.directory, read_set)
    return ArchiveContents(tuple(read_threads(conn, row.run_id, row.store_id, after_seq, page_size)))


def list_stores(
    conn: Connection, run_id: str, kind: Kind | None, page_size: int, page_token: str
) -> tuple[list[StoreInfo], str]:
    if not run_exists(conn, run_id):
        raise missing(conn, run_id, "")
    size = pages.STORES.size(page_size)
    q = select(STORES).where(STORES.c.run_id == run_id)
    if kind is not None:
        q = q.where(STORES.c.kind == int(kind))
    if page_token:
        after = _decode_token(page_token)
        q = q.where(tuple_(STORES.c.kind, STORES.c.n) > tuple_(*after))
    rows = conn.execute(q.order_by(STORES.c.kind, STORES.c.n).limit(size + 1)).all()
    page, more = rows[:size], len(rows) > size
    holders = _holders(conn, run_id, [r.store_id for r in page])
    infos = [_info(r, [h for h, _ in holders.get(r.store_id, [])], None) for r in page]
    token = _encode_token(page[-1].kind, page[-1].n) if more else ""
    return infos, token


def _holders(conn: Connection, run_id: str, store_ids: list[str]) -> dict[str, list[tuple[HolderInfo, str]]]:
    if not store_ids:
        return {}
    q = (
        select(HOLDERS)
        .where(HOLDERS.c.run_id == run_id, HOLDERS.c.store_id.in_(store_ids))
        .order_by(HOLDERS.c.store_id, HOLDERS.c.agent_id)
    )
    out: dict[str, list[tuple[HolderInfo, str]]] = {}
    for h in conn.execute(q):
        info = HolderInfo(h.agent_id, Origin(h.origin), h.may_write, h.active)
        out.setdefault(h.store_id, []).append((info, h.read_set_id))
    return out


def _info(row: Any, holders: list[HolderInfo], read_set: tuple[str, ...] | None) -> StoreInfo:
    figures = Figures(row.items, row.bytes, row.writes)
    if row.kind == Kind.SKILLS and read_set is not None:
        figures = skills.holder_figures(figures, read_set)
    return StoreInfo(
        run_id=row.run_id,
        store_id=row.store_id,
        kind=Kind(row.kind),
        caps=Caps(row.max_items, row.max_bytes),
        holders=tuple(holders),
        figures=figures,
        forked_from=row.forked_from,
        strategy=MemoryStrategy(row.strategy),
        skills_directory=row.skills_directory,
    )


def _encode_token(kind: int, n: int) -> str:
    return base64.urlsafe_b64encode(f"ms1:{kind}:{n}".encode()).decode()


def _decode_token(token: str) -> tuple[int, int]:
    try:
        tag, kind, n = base64.urlsafe_b64decode(token.encode()).decode().split(":")
        if tag != "ms1" or not 0 <= int(n) < 2**63:
            raise ValueError(tag)
        return int(Kind(int(kind))), int(n)
    except ValueError:
        raise InvalidArgument(
            "page_token was not handed out by ListStores; pass the next_page_token of the previous page",
            reason=Reason.INVALID_PAGE_TOKEN,
            metadata={"field": "page_token"},
        ) from None
