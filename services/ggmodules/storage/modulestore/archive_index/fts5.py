"""SQLite: the FTS5 table `ms_archive_fts` (title, body), ranked with BM25.

Each thread's entry has the rowid `key << 32 | seq`, where `key` is its store's rowid in
`ms_archive_fts_stores`, so the threads of one segment of a lineage are one rowid range, which FTS5 seeks
to rather than filters. (So a store can index 2^32 threads.)
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Connection

from ggmodules.core.modules.archive_query import ArchiveQuery, Term
from ggmodules.core.modules.archive_search import ELLIPSIS, MARK, ArchiveSearch
from ggmodules.storage.modulestore.archive_index.common import Ranked, Segment

SEQ_BITS = 32
TITLE_WEIGHT = 2.0
SNIPPET_TOKENS = 24


def match_expression(query: ArchiveQuery) -> str:
    """The query in FTS5 syntax. Every term is a quoted string of letters and digits, so nothing typed is
    read as syntax."""

    def term(t: Term) -> str:
        return '"' + " ".join(t.words) + '"' + ("*" if t.prefix else "")

    expr = " AND ".join("(" + " OR ".join(term(t) for t in group) + ")" for group in query.groups)
    if query.excluded:
        expr = f"({expr}) NOT (" + " OR ".join(term(t) for t in query.excluded) + ")"
    return expr


def ranked(conn: Connection, run_id: str, segs: list[Segment], search: ArchiveSearch) -> list[Ranked]:
    keys: dict[str, int] = {
        r.store_id: r.rowid
        for r in conn.execute(
            text(
                "SELECT store_id, rowid FROM ms_archive_fts_stores WHERE run_id = :run_id AND store_id IN ("
                + ", ".join(f":s{i}" for i in range(len(segs)))
                + ")"
            ),
            {"run_id": run_id, **{f"s{i}": s.store_id for i, s in enumerate(segs)}},
        )
    }
    params: dict[str, object] = {
        "q": match_expression(search.query),
        "limit": search.page_size + 1,
        "offset": search.offset,
        "mark": MARK,
        "ellipsis": ELLIPSIS,
    }
    parts = []
    for i, s in enumerate(segs):
        if s.store_id not in keys:
            continue
        base = keys[s.store_id] << SEQ_BITS
        params[f"lo{i}"], params[f"hi{i}"] = base + s.lo, base + s.hi
        parts.append(
            f"SELECT rowid AS id, rowid & {(1 << SEQ_BITS) - 1} AS seq, "
            f"bm25(ms_archive_fts, {TITLE_WEIGHT}, 1.0) AS score FROM ms_archive_fts "
            f"WHERE ms_archive_fts MATCH :q AND rowid > :lo{i} AND rowid <= :hi{i}"
        )
    if not parts:
        return []
    # The page is ranked first; only its rows are then joined to their text and given a snippet (CROSS
    # JOIN keeps that order of the loops).
    sql = f"""
        WITH hits AS ({" UNION ALL ".join(parts)} ORDER BY score, seq DESC LIMIT :limit OFFSET :offset)
        SELECT t.seq, t.title, t.messages, -h.score AS score,
               snippet(ms_archive_fts, -1, :mark, :mark, :ellipsis, {SNIPPET_TOKENS}) AS snippet
        FROM hits AS h
        CROSS JOIN ms_archive_fts_stores AS k
        CROSS JOIN ms_archive_threads AS t
        CROSS JOIN ms_archive_fts
        WHERE k.rowid = h.id >> {SEQ_BITS}
          AND t.run_id = k.run_id AND t.store_id = k.store_id AND t.seq = h.seq
          AND ms_archive_fts.rowid = h.id AND ms_archive_fts MATCH :q
        ORDER BY h.score, h.seq DESC
    """
    return [Ranked(*r) for r in conn.execute(text(sql), params)]
