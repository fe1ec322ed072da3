"""A connection of an engine's pool kept out for one kind of repeated short work (WatchOutbox's reads,
Telemetry's log writes on PostgreSQL), used by one thread at a time.

A checkout per use costs a round trip on PostgreSQL (the pool's pre-ping) on the way of every event. A kept
connection skips it; one found broken (the server restarted, the session was killed) is let go and a fresh
one checked out, for a read once more at once (nothing was changed), for a write at the caller's next try.
With `autocommit`, each statement runs and ends on its own (no BEGIN/COMMIT round trips around a read).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy.engine import Connection, Engine

T = TypeVar("T")


class KeptConnection:
    def __init__(self, engine: Engine, *, autocommit: bool = False) -> None:
        self._engine = engine
        self._autocommit = autocommit
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    def _checked_out(self) -> Connection:
        conn = self._conn
        if conn is None or conn.closed or conn.invalidated:
            conn = self._engine.connect()
            if self._autocommit:
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            self._conn = conn
        return conn

    def _let_go(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):  # already broken: nothing to give back
                self._conn.close()
            self._conn = None

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """The kept connection, for this thread alone until the block ends; let go when the block raised on
        a broken connection."""
        with self._lock:
            conn = self._checked_out()
            try:
                yield conn
            except BaseException as exc:
                if conn.invalidated or getattr(exc, "connection_invalidated", False):
                    self._let_go()
                raise

    def read(self, fn: Callable[[Connection], T]) -> T:
        """`fn(connection)`; on a connection found broken, once more on a fresh one."""
        try:
            with self.connection() as conn:
                return self._ended(conn, fn)
        except Exception as exc:
            if not getattr(exc, "connection_invalidated", False):
                raise
        with self.connection() as conn:
            return self._ended(conn, fn)

    def _ended(self, conn: Connection, fn: Callable[[Connection], T]) -> T:
        try:
            return fn(conn)
        finally:
            if conn.in_transaction():  # autocommit: ends SQLAlchemy's own bookkeeping, nothing is sent
                conn.rollback()

    def close(self) -> None:
        with self._lock:
            self._let_go()
