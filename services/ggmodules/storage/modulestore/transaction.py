"""One transaction per mutation, with its request id (R49) claimed first and answered inside it, run again
when it loses to a concurrent one (see storage.contention)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, TypeVar

from google.protobuf.message import Message
from sqlalchemy.engine import Connection, Engine

from ggmodules.storage.contention import DEFAULT, Retries, retrying
from ggmodules.storage.idempotency import RequestKey
from ggmodules.storage.modulestore.fast_log import FastRequestLog
from ggmodules.storage.modulestore.prepared import Tx

M = TypeVar("M", bound=Message)
T = TypeVar("T")
C = TypeVar("C", Connection, Tx)


class Transactions:
    """Where transactions run. `pinned`: one connection, kept open, for a caller that runs all its
    database work on one thread (SQLite inline on the event loop) and so never waits for the pool."""

    def __init__(self, engine: Engine, *, pinned: bool, retries: Retries = DEFAULT) -> None:
        self.engine = engine
        self.retries = retries
        self._pinned = engine.connect() if pinned else None
        self._raw = self._pinned.connection.dbapi_connection if self._pinned is not None else None

    @property
    def pinned(self) -> Connection | None:
        return self._pinned

    @property
    def pinned_dbapi(self) -> Any:
        """The pinned connection's DBAPI connection (SQLite inline), or None."""
        return self._raw

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        if self._pinned is None:
            with self.engine.begin() as conn:
                yield conn
        else:
            with self._pinned.begin():
                yield self._pinned

    @contextmanager
    def begin_prepared(self) -> Iterator[Tx]:
        """A transaction for code that runs only prepared statements (see prepared.py). On the pinned
        SQLite connection it is begun and ended on the DBAPI connection itself, which skips SQLAlchemy's
        per-transaction bookkeeping; the SQLAlchemy connection stays idle meanwhile."""
        raw = self._raw
        if raw is None:
            with self.engine.begin() as conn:
                yield Tx.of(conn)
            return
        raw.execute("BEGIN IMMEDIATE")
        try:
            yield Tx(self.engine.dialect, dbapi=raw)
            raw.execute("COMMIT")
        except BaseException:
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise

    def mutate(
        self,
        log: FastRequestLog,
        key: RequestKey | None,
        apply: Callable[[Connection], M],
        response_type: type[M],
    ) -> M:
        """Applies once. A concurrent call with the same request id waits at the claim until the first one
        ends, then answers as it did; a transaction that loses to a concurrent one is run again."""
        return retrying(lambda: self._attempt(self.begin, log, key, apply, response_type), self.retries)

    def mutate_prepared(
        self, log: FastRequestLog, key: RequestKey | None, apply: Callable[[Tx], M], response_type: type[M]
    ) -> M:
        """`mutate` for code that runs only prepared statements."""
        return retrying(
            lambda: self._attempt(self.begin_prepared, log, key, apply, response_type), self.retries
        )

    def read(self, fn: Callable[[Connection], T]) -> T:
        def attempt() -> T:
            with self.begin() as conn:
                return fn(conn)

        return retrying(attempt, self.retries)

    @staticmethod
    def _attempt(
        begin: Callable[[], AbstractContextManager[C]],
        log: FastRequestLog,
        key: RequestKey | None,
        apply: Callable[[C], M],
        response_type: type[M],
    ) -> M:
        with begin() as conn:
            if key is not None:
                first = log.claim(conn, key.method, key.request_id, key.request_hash)
                if first is not None:
                    return response_type.FromString(first)
            response = apply(conn)
            if key is not None:
                log.answer(conn, key.method, key.request_id, response.SerializeToString(deterministic=True))
            return response

    def close(self) -> None:
        if self._pinned is not None:
            self._pinned.close()
        self.engine.dispose()
