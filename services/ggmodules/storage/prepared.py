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


class Tx:
    """An open transaction: its SQLAlchemy connection (`conn`, for Core statements) and one DBAPI cursor
    (for prepared ones).

    Either a SQLAlchemy connection inside `begin()` (`Tx.of(conn)`), or, for SQLite on one pinned
    connection, a transaction the caller began itself on the DBAPI connection (see
    modulestore/transaction.py); Core statements run on it then join that transaction.
    """

    __slots__ = ("_cursor", "_dbapi", "conn", "dialect")

    def __init__(self, conn: Connection, *, dbapi: Any = None) -> None:
        self.conn = conn
        self.dialect = conn.dialect
        self._dbapi = dbapi
        self._cursor: Any = None

    @classmethod
    def of(cls, conn: Connection | Tx) -> Tx:
        return conn if isinstance(conn, Tx) else cls(conn)

    def cursor(self) -> Any:
        """One cursor per transaction, reused by every statement (each result is read before the next)."""
        if self._cursor is None:
            self._cursor = (self.conn.connection if self._dbapi is None else self._dbapi).cursor()
        return self._cursor


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

    def _cursor(self, conn: Connection | Tx, params: Mapping[str, Any]) -> Any:
        tx = conn if type(conn) is Tx else Tx.of(conn)
        dialect, sql, order, defaults = self._last
        if dialect is not tx.dialect:
            sql, order, defaults = self._compile(tx.dialect)
            self._last = (tx.dialect, sql, order, defaults)
        cursor = tx.cursor()
        if order is not None and not defaults:  # positional (SQLite): the common case, without a merge
            cursor.execute(sql, [params[k] for k in order])
        else:
            cursor.execute(sql, self._args(order, defaults, params))
        return cursor

    def execute(self, conn: Connection | Tx, params: Mapping[str, Any]) -> None:
        self._cursor(conn, params)

    def many(self, conn: Connection | Tx, rows: Sequence[Mapping[str, Any]]) -> None:
        tx = Tx.of(conn)
        sql, order, defaults = self._compile(tx.dialect)
        cursor = tx.cursor()
        cursor.executemany(sql, [self._args(order, defaults, r) for r in rows])

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
