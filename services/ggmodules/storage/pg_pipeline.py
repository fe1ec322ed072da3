"""PostgreSQL: a transaction's statements sent together, in one round trip (psycopg's pipeline mode).

A transaction that defers (`Tx.deferring`, storage/prepared.py) keeps the statements whose results it
does not read (an INSERT, an UPDATE, SAVEPOINT, and BEGIN itself on a connection in autocommit) until it
needs a result or ends; `send` then sends them, the statements whose results it wants, and COMMIT when
asked, with one Sync: the server runs them in order and one wait covers them all. On a loaded machine each
round trip costs a wake-up of the server process and of the caller's thread, often more than the statement
(issue 10: a history append went from nine round trips to two).

Errors are those of the statements: the first failing one is raised once the pipeline is read, and the
ones after it in the same pipeline do not run (the transaction is then aborted, as after any failed
statement; the caller rolls back).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def send(
    dbapi: Any,
    sink: Any,
    waiting: Sequence[tuple[str, Any]],
    wanted: Sequence[tuple[str, Any]],
    *,
    commit: bool = False,
) -> list[Any]:
    """Runs `waiting` on the cursor `sink` (results dropped), then each of `wanted` on a cursor of its own
    (returned, its result ready to fetch), then COMMIT if asked, in one pipeline."""
    conn = getattr(dbapi, "dbapi_connection", dbapi)  # SQLAlchemy's pool proxy -> psycopg's connection
    cursors = [conn.cursor() for _ in wanted]
    with conn.pipeline():
        for sql, args in waiting:
            sink.execute(sql, args)
        for cursor, (sql, args) in zip(cursors, wanted, strict=True):
            cursor.execute(sql, args)
        if commit:
            sink.execute("COMMIT")
    return cursors
