"""Prepared statements (the write path, every outbox and request log): built with SQLAlchemy Core,
compiled once per dialect, run on the transaction's own DBAPI cursor.

Executing a Core statement costs tens of microseconds of SQLAlchemy bookkeeping per call, several times
what SQLite itself spends; the append latency target leaves no room for that. The statements stay Core
constructs (dialect-correct SQL, one definition for SQLite and PostgreSQL); only execution is direct.
Use explicit `bindparam`s, no expanding IN lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql import Executable

from ggmodules.storage import pg_pipeline


class Tx:
    """An open transaction: its SQLAlchemy connection (`conn`, for Core statements) and one DBAPI cursor
    (for prepared ones).

    Either a SQLAlchemy connection inside `begin()` (`Tx.of(conn)`), or, for SQLite on one pinned
    connection, a transaction the caller began itself on the DBAPI connection (see
    modulestore/transaction.py); Core statements run on it then join that transaction.

    PostgreSQL may defer (`deferring`, storage/pg_pipeline.py): prepared statements that return nothing
    wait, and go to the server together with the next statement whose result is read (`send`), in one
    round trip; so does the transaction's BEGIN. Anything else run in the transaction (`conn`, `cursor`)
    sends what waits first, so statements still run in the order they were given.
    """

    __slots__ = ("_begin", "_conn", "_cursor", "_dbapi", "_sent", "deferred", "dialect")

    def __init__(self, conn: Connection, *, dbapi: Any = None) -> None:
        self._conn = conn
        self.dialect = conn.dialect
        self._dbapi = dbapi
        self._cursor: Any = None
        self.deferred: list[tuple[str, Any]] | None = None  # None: every statement runs at once
        self._begin = False  # deferring: BEGIN is still to be sent
        self._sent = 0  # deferring: how many deferred statements were sent so far

    @classmethod
    def of(cls, conn: Connection | Tx) -> Tx:
        return conn if isinstance(conn, Tx) else cls(conn)

    @property
    def conn(self) -> Connection:
        """The SQLAlchemy connection, for Core statements (what waits is sent first)."""
        if self.deferred or self._begin:
            self.send()
        return self._conn

    def cursor(self) -> Any:
        """One cursor per transaction, reused by every statement (each result is read before the next).
        What waits is sent first."""
        if self.deferred or self._begin:
            self.send()
        return self._own_cursor()

    def _own_cursor(self) -> Any:
        if self._cursor is None:
            self._cursor = self.dbapi().cursor()
        return self._cursor

    def forget_cursor(self) -> None:
        """The transaction's cursor is its caller's now (`Prepared.cursor_of`): the next statement takes a
        new one."""
        self._cursor = None

    def dbapi(self) -> Any:
        return self._conn.connection if self._dbapi is None else self._dbapi

    # ---- deferring (PostgreSQL) -----------------------------------------------------------------------

    def deferring(self, *, begin: bool) -> None:
        """From now on statements that return nothing wait for the next `send`; with `begin`, the
        transaction's BEGIN waits too (the connection is in autocommit: BEGIN is the transaction's own)."""
        self.deferred = []
        self._begin = begin

    def defer(self, sql: str, args: Any = None) -> None:
        assert self.deferred is not None
        self.deferred.append((sql, args))

    def send(self, wanted: Sequence[tuple[str, Any]] = (), *, commit: bool = False) -> list[Any]:
        """Sends what waits, then `wanted` (their rows returned, read like a cursor's), then COMMIT when
        asked: one round trip."""
        waiting = self.deferred or []
        if self.deferred is not None:
            self.deferred = []
            self._sent += len(waiting)
        if self._begin:
            waiting = [("BEGIN", None), *waiting]
            self._begin = False
        return pg_pipeline.send(self.dbapi(), waiting, wanted, commit=commit)

    def commit_then(self, then: Sequence[tuple[str, Any]]) -> list[Any] | None:
        """Sends what waits and COMMIT, then `then` after a Sync of their own, in one round trip
        (`pg_pipeline.send_then`): their rows, or None when they failed (the COMMIT's failure is raised)."""
        waiting = self.deferred or []
        self.deferred = []
        self._sent += len(waiting)
        if self._begin:
            waiting = [("BEGIN", None), *waiting]
            self._begin = False
        return pg_pipeline.send_then(self.dbapi(), waiting, (), then, commit=True)[1]

    def rollback(self) -> None:
        """Deferring: drops what waits and rolls back what was sent, if anything (storage/pg_pipeline.py:
        not through psycopg, which would drop the session's prepared statements)."""
        self.discard()
        if self._begin:  # nothing was sent
            self._begin = False
            return
        pg_pipeline.rollback(self.dbapi())

    def mark(self) -> int:
        """Where the next statement deferred stands among all this transaction deferred (for `discard`)."""
        return self._sent + len(self.deferred or [])

    def discard(self, since: int = 0) -> list[tuple[str, Any]]:
        """Drops the statements deferred since `mark` was `since` that still wait (never BEGIN) and returns
        them: a refused mutation's. Statements deferred before it stay."""
        if not self.deferred:
            return []
        keep = max(0, since - self._sent)
        dropped, self.deferred = self.deferred[keep:], self.deferred[:keep]
        return dropped


class Prepared:
    def __init__(self, statement: Executable) -> None:
        self.statement = statement
        self._compiled: dict[str, tuple[str, Sequence[str] | None, dict[str, Any]]] = {}
        # The last dialect run on and its compiled form, as `_cursor` reads them on every execution.
        self._last: tuple[Dialect | None, str, Sequence[str] | None, dict[str, Any]] = (None, "", None, {})

    def _compile(self, dialect: Dialect) -> tuple[str, Sequence[str] | None, dict[str, Any]]:
        found = self._compiled.get(dialect.name)
        if found is None:
            compiled = self.statement.compile(dialect=dialect)  # type: ignore[attr-defined]
            positional = dialect.paramstyle in ("qmark", "format", "numeric")
            # Literal values in the statement became parameters with defaults.
            defaults = {
                k: b.value for k, b in compiled.binds.items() if not b.required and b.value is not None
            }
            found = (compiled.string, list(compiled.positiontup or ()) if positional else None, defaults)
            self._compiled[dialect.name] = found
        return found

    @staticmethod
    def _args(order: Sequence[str] | None, defaults: dict[str, Any], params: Mapping[str, Any]) -> Any:
        if defaults:
            params = {**defaults, **params}
        return [params[k] for k in order] if order is not None else params

    def bound(self, conn: Connection | Tx, params: Mapping[str, Any]) -> tuple[str, Any]:
        """The statement's SQL for the transaction's dialect and its arguments (for `Tx.send`)."""
        sql, order, defaults = self._compile(Tx.of(conn).dialect)
        return sql, self._args(order, defaults, params)

    def _cursor(self, conn: Connection | Tx, params: Mapping[str, Any]) -> Any:
        tx = conn if type(conn) is Tx else Tx.of(conn)
        dialect, sql, order, defaults = self._last
        if dialect is not tx.dialect:
            sql, order, defaults = self._compile(tx.dialect)
            self._last = (tx.dialect, sql, order, defaults)
        if tx.deferred is not None:  # PostgreSQL: what waits goes with this statement, in one round trip
            return tx.send([(sql, self._args(order, defaults, params))])[0]
        cursor = tx.cursor()
        if order is not None and not defaults:  # positional (SQLite): the common case, without a merge
            cursor.execute(sql, [params[k] for k in order])
        else:
            cursor.execute(sql, self._args(order, defaults, params))
        return cursor

    def execute(self, conn: Connection | Tx, params: Mapping[str, Any]) -> None:
        tx = Tx.of(conn)
        if tx.deferred is not None:
            tx.defer(*self.bound(tx, params))
            return
        self._cursor(tx, params)

    def many(self, conn: Connection | Tx, rows: Sequence[Mapping[str, Any]]) -> None:
        tx = Tx.of(conn)
        sql, order, defaults = self._compile(tx.dialect)
        if tx.deferred is not None:
            for r in rows:
                tx.defer(sql, self._args(order, defaults, r))
            return
        cursor = tx.cursor()
        cursor.executemany(sql, [self._args(order, defaults, r) for r in rows])

    def count(self, conn: Connection | Tx, params: Mapping[str, Any]) -> int:
        """Runs the statement (not on a deferring transaction) and returns how many rows it changed."""
        tx = Tx.of(conn)
        assert tx.deferred is None, "count reads the statement's own rowcount"
        return int(self._cursor(tx, params).rowcount)

    def cursor_of(self, conn: Connection | Tx, params: Mapping[str, Any]) -> Any:
        """The statement run on the transaction's cursor, its rows not fetched yet: the caller steps through
        them and closes it (so the transaction takes a new cursor for its next statement)."""
        tx = Tx.of(conn)
        cursor = self._cursor(tx, params)
        if tx.deferred is None:
            tx.forget_cursor()
        return cursor

    def all(self, conn: Connection | Tx, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        return list(self._cursor(conn, params).fetchall())

    def one(self, conn: Connection | Tx, params: Mapping[str, Any]) -> tuple[Any, ...] | None:
        cursor = self._cursor(conn, params)
        row = cursor.fetchone()
        if row is not None:
            cursor.fetchall()  # finish the statement (RETURNING) before the cursor is reused
        return tuple(row) if row is not None else None

    def scalar(self, conn: Connection | Tx, params: Mapping[str, Any]) -> Any:
        row = self.one(conn, params)
        return row[0] if row is not None else None
