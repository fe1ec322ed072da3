"""The archive's full-text index: searching one store's threads, ranked, a page at a time.

The index is kept by the database in the statement that archives a thread (a trigger on SQLite, a
generated column on PostgreSQL; see the revision `h6_ms_0002`), so it commits or rolls back with it. Like
the threads themselves it is copy-on-write across forks: a fork indexes only its own threads and searches
its ancestors' entries up to the fork point (`lineage.segments`), so forking copies none of it.

SEMANTIC and HYBRID searches (see `core.modules.archive_semantic`) read the threads' vectors
(`vectors.py`) beside it, keyed the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy import and_, or_, select
from sqlalchemy.engine import Connection

from ggmodules.core.modules.archive_search import ArchiveHit, ArchiveSearch, SearchMode, SearchPage, page_of
from ggmodules.core.modules.archive_semantic import FUSED_DEPTH, fuse, opening
from ggmodules.core.modules.contents import ArchivedThread
from ggmodules.storage.modulestore.archive_index import fts5, tsvector, vectors
from ggmodules.storage.modulestore.archive_index.common import Ranked, Segment
from ggmodules.storage.modulestore.lineage import THREADS, segments, thread_of

RANKERS = {"sqlite": fts5.ranked, "postgresql": tsvector.ranked}


def searched(conn: Connection, run_id: str, store_id: str, head_seq: int, upto: int) -> list[Segment]:
    """The parts of the store's lineage a search covers: its threads up to `upto` (0: all it holds now)."""
    top = min(upto, head_seq) if upto else head_seq
    return [Segment(sid, lo, min(hi, top)) for sid, lo, hi in segments(conn, run_id, store_id) if lo < top]


def search(
    conn: Connection,
    run_id: str,
    store_id: str,
    head_seq: int,
    search: ArchiveSearch,
    query_vector: Sequence[float] = (),
    model: str = "",
) -> SearchPage:
    """One page of the store's threads matching `search`, best first; `head_seq` is its newest thread.
    SEMANTIC and HYBRID need the query's vector under `model`. A snippet is one line: its line breaks
    (between title and messages, or messages) become spaces."""
    upto = min(search.upto, head_seq) if search.upto else head_seq
    segs = searched(conn, run_id, store_id, head_seq, upto)
    if not segs:
        hits: list[ArchiveHit] = []
    elif search.mode == SearchMode.TEXT:
        hits = [_hit(r) for r in RANKERS[conn.dialect.name](conn, run_id, segs, search)]
    else:
        hits = _by_meaning(conn, run_id, segs, search, query_vector, model)
    page = hits[: search.page_size]
    return page_of(search, store_id, upto, page, more=len(hits) > search.page_size)


def _hit(r: Ranked) -> ArchiveHit:
    snippet = " ".join((r.snippet or "").split())
    return ArchiveHit(thread_of(r.seq, r.title, r.messages), float(r.score), snippet)


def _by_meaning(
    conn: Connection,
    run_id: str,
    segs: list[Segment],
    search: ArchiveSearch,
    query: Sequence[float],
    model: str,
) -> list[ArchiveHit]:
    """The hits from `search.offset` on (one more than a page): nearest by vector, or fused with the text
    ranking."""
    wanted = search.offset + search.page_size + 1
    if search.mode == SearchMode.SEMANTIC:
        near = vectors.nearest(conn, run_id, segs, model, query, wanted)[search.offset :]
        threads = _threads(conn, run_id, [(s, q) for s, q, _ in near])
        return [ArchiveHit(threads[q], score, opening(threads[q])) for _, q, score in near]
    deep = replace(search, page_size=FUSED_DEPTH, offset=0)
    by_text = [_hit(r) for r in RANKERS[conn.dialect.name](conn, run_id, segs, deep)]
    near = vectors.nearest(conn, run_id, segs, model, query, FUSED_DEPTH)
    fused = fuse([[h.thread.id for h in by_text], [q for _, q, _ in near]])[search.offset : wanted]
    text_hits = {h.thread.id: h for h in by_text}
    threads = _threads(conn, run_id, [(s, q) for s, q, _ in near if q not in text_hits])
    out = []
    for seq, score in fused:
        found = text_hits.get(seq)
        thread = found.thread if found else threads[seq]
        out.append(ArchiveHit(thread, score, found.snippet if found else opening(thread)))
    return out


def _threads(conn: Connection, run_id: str, keys: list[tuple[str, int]]) -> dict[int, ArchivedThread]:
    if not keys:
        return {}
    rows = conn.execute(
        select(THREADS.c.seq, THREADS.c.title, THREADS.c.messages).where(
            THREADS.c.run_id == run_id,
            or_(*(and_(THREADS.c.store_id == s, THREADS.c.seq == q) for s, q in keys)),
        )
    )
    return {r.seq: thread_of(r.seq, r.title, r.messages) for r in rows}
