"""Thread embeddings for semantic search, in `ms_archive_vectors`, scored in the service.

Neither backend here can rank vectors in the database (this Python's sqlite3 cannot load sqlite-vec, and
the PostgreSQL server has no pgvector), so a semantic search reads every vector of the store's lineage and
takes the cosine (a dot product: vectors are unit length) with numpy. Its cost grows with the archive:
about 1.5 KB read and one dot product of 384 floats per thread, some tens of milliseconds per 10,000
threads; semantic search suits archives of up to tens of thousands of threads.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from ggmodules.storage.modulestore.archive_index.common import Segment
from ggmodules.storage.modulestore.lineage import THREADS
from ggmodules.storage.modulestore.tables import MsArchiveVector

VECTORS = MsArchiveVector.__table__  # type: ignore[attr-defined]


def pack(vector: Sequence[float]) -> bytes:
    return array("f", vector).tobytes()


def _in(table: Any, run_id: str, segs: list[Segment]) -> Any:
    return and_(
        table.c.run_id == run_id,
        or_(*(and_(table.c.store_id == s.store_id, table.c.seq > s.lo, table.c.seq <= s.hi) for s in segs)),
    )


def unembedded(conn: Connection, run_id: str, segs: list[Segment], model: str, limit: int) -> list[Any]:
    """Up to `limit` threads of the segments without a vector of `model`, newest first."""
    v = VECTORS
    joined = THREADS.outerjoin(
        v,
        and_(v.c.run_id == THREADS.c.run_id, v.c.store_id == THREADS.c.store_id, v.c.seq == THREADS.c.seq,
             v.c.model == model),
    )
    q = (
        select(THREADS.c.store_id, THREADS.c.seq, THREADS.c.title, THREADS.c.messages)
        .select_from(joined)
        .where(_in(THREADS, run_id, segs), v.c.seq.is_(None))
        .order_by(THREADS.c.seq.desc())
        .limit(limit)
    )
    return list(conn.execute(q))


def save(conn: Connection, run_id: str, model: str, rows: Sequence[tuple[str, int, bytes]]) -> None:
    """Vectors of threads; one another search saved meanwhile is kept (the same thread, the same model)."""
    if not rows:
        return
    insert = (postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert)(VECTORS)
    conn.execute(
        insert.on_conflict_do_nothing(),
        [{"run_id": run_id, "store_id": s, "seq": q, "model": model, "vector": b} for s, q, b in rows],
    )


def nearest(
    conn: Connection, run_id: str, segs: list[Segment], model: str, query: Sequence[float], count: int
) -> list[tuple[str, int, float]]:
    """The `count` threads nearest `query`: (store_id, seq, cosine), best first, ties newest first."""
    import numpy as np

    rows = conn.execute(
        select(VECTORS.c.store_id, VECTORS.c.seq, VECTORS.c.vector).where(
            _in(VECTORS, run_id, segs), VECTORS.c.model == model
        )
    ).all()
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(r.vector for r in rows), dtype=np.float32).reshape(len(rows), -1)
    scores = matrix @ np.asarray(query, dtype=np.float32)
    seqs = np.fromiter((r.seq for r in rows), dtype=np.int64, count=len(rows))
    order = np.lexsort((-seqs, -scores))[:count]
    return [(rows[i].store_id, int(seqs[i]), float(scores[i])) for i in order]
