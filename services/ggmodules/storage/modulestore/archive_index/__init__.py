"""The archive's full-text index: searching one store's threads, ranked, a page at a time.

The index is kept by the database in the statement that archives a thread (a trigger on SQLite, a
generated column on PostgreSQL; see the revision `h6_ms_0002`), so it commits or rolls back with it. Like
the threads themselves it is copy-on-write across forks: a fork indexes only its own threads and searches
its ancestors' entries up to the fork point (`lineage.segments`), so forking copies none of it.
"""

from __future__ import annotations

from sqlalchemy.engine import Connection

from ggmodules.core.modules.archive_search import ArchiveHit, ArchiveSearch, SearchPage, page_of
from ggmodules.storage.modulestore.archive_index import fts5, tsvector
from ggmodules.storage.modulestore.archive_index.common import Segment
from ggmodules.storage.modulestore.lineage import segments, thread_of

RANKERS = {"sqlite": fts5.ranked, "postgresql": tsvector.ranked}


def search(conn: Connection, run_id: str, store_id: str, head_seq: int, search: ArchiveSearch) -> SearchPage:
    """One page of the store's threads matching `search`, best first; `head_seq` is its newest thread.
    A snippet is one line: its line breaks (between title and messages, or messages) become spaces."""
    upto = min(search.upto, head_seq) if search.upto else head_seq
    segs = [Segment(sid, lo, min(hi, upto)) for sid, lo, hi in segments(conn, run_id, store_id) if lo < upto]
    rows = RANKERS[conn.dialect.name](conn, run_id, segs, search) if segs else []
    hits = [
        ArchiveHit(thread_of(r.seq, r.title, r.messages), float(r.score), " ".join((r.snippet or "").split()))
        for r in rows[: search.page_size]
    ]
    return page_of(search, store_id, upto, hits, more=len(rows) > search.page_size)
