"""One transaction per unit of work, run again when it loses to a concurrent one (storage.contention); on
SQLite, for the thread that built it (the event loop's, whose short transactions run inline), on a
connection pinned to it and begun and ended on the DBAPI connection itself.

Checking a connection out of the pool and SQLAlchemy's per-transaction bookkeeping cost more than SQLite
spends on a short transaction; the pinned connection skips both. Prepared statements (storage.prepared) run
on its cursor; a Core statement on `tx.conn` joins the transaction (storage/engine.py), and SQLAlchemy then
ends it. Any other thread (a worker thread, PostgreSQL always) takes a connection from the pool.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy.engine import Connection, Engine

from ggmodules.storage.contention import DEFAULT, Retries, retrying
from ggmodules.storage.engine import is_sqlite
from ggmodules.storage.prepared import Tx

T = TypeVar("T")


class Transact:
    def __init__(self, engine: Engine, retries: Retries = DEFAULT) -> None:
        self.engine = engine
        self.retries = retries
        self._owner = threading.get_ident()
        self._pinned = engine.connect() if is_sqlite(engine) else None
        self._raw = self._pinned.connection.dbapi_connection if self._pinned is not None else None

    def __call__(self, work: Callable[[Tx], T]) -> T:
        """`work` in one transaction, again when it loses to a concurrent one."""
        if self._pinned is not None and threading.get_ident() == self._owner:
            return retrying(lambda: self._on_pinned(work), self.retries)
        return retrying(lambda: self._on_pool(work), self.retries)

    def _on_pool(self, work: Callable[[Tx], T]) -> T:
        with self.engine.begin() as conn:
            return work(Tx(conn))

    def _on_pinned(self, work: Callable[[Tx], T]) -> T:
        pinned, raw = self._pinned, self._raw
        assert pinned is not None and raw is not None
        with pinned_transaction(pinned, raw):
            return work(Tx(pinned, dbapi=raw))

    def close(self) -> None:
        if self._pinned is not None:
            self._pinned.close()
            self._pinned = self._raw = None


@contextmanager
def pinned_transaction(pinned: Connection, raw: Any) -> Iterator[None]:
    """A transaction on SQLite's pinned connection `pinned` (its DBAPI connection `raw`), begun and ended on
    `raw` itself; a Core statement run inside joins it (storage/engine.py), and SQLAlchemy then ends it."""
    raw.execute("BEGIN IMMEDIATE")
    try:
        yield
        if pinned.in_transaction():  # a Core statement joined: SQLAlchemy ends the transaction
            pinned.commit()
        else:
            raw.execute("COMMIT")
    except BaseException:  # refused, lost to a concurrent one, or the commit failed: nothing applied
        if pinned.in_transaction():
            pinned.rollback()
        if raw.in_transaction:
            raw.execute("ROLLBACK")
        raise
