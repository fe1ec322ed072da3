"""The one transaction path of every ModuleStore mutation (`Transactions.mutate`): one transaction per
mutation, its request id (R49) claimed first and answered inside it, the use case run on a unit of work
(unit.py) in between, run again when it loses to a concurrent one (see storage.contention); committed
mutations wake WatchOutbox streams. Reads take `read`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from google.protobuf.message import Message
from sqlalchemy.engine import Connection, Engine

from ggmodules.storage.commits import CommitSignal
from ggmodules.storage.contention import DEFAULT, Retries, retrying
from ggmodules.storage.idempotency import RequestKey, RequestLog
from ggmodules.storage.modulestore.unit import ModuleStoreUnit
from ggmodules.storage.outbox import Outbox
from ggmodules.storage.prepared import Tx

M = TypeVar("M", bound=Message)
T = TypeVar("T")


class Transactions:
    """Where transactions run. `pinned`: one connection, kept open, for a caller that runs all its
    database work on one thread (SQLite inline on the event loop) and so never waits for the pool."""

    def __init__(
        self,
        engine: Engine,
        outbox: Outbox,
        requests: RequestLog,
        committed: CommitSignal,
        *,
        pinned: bool,
        retries: Retries = DEFAULT,
    ) -> None:
        self.engine = engine
        self.outbox = outbox
        self.requests = requests
        self.committed = committed
        self.retries = retries
        self._pinned = engine.connect() if pinned else None
        self._raw = self._pinned.connection.dbapi_connection if self._pinned is not None else None

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        if self._pinned is None:
            with self.engine.begin() as conn:
                yield conn
        else:
            with self._pinned.begin():
                yield self._pinned

    @contextmanager
    def begin_tx(self) -> Iterator[Tx]:
        """A mutation's transaction. On the pinned SQLite connection it is begun and ended on the DBAPI
        connection itself, which skips SQLAlchemy's per-transaction bookkeeping when the mutation runs only
        prepared statements (a write); a Core statement joins it (storage/engine.py), and SQLAlchemy then
        ends it."""
        pinned, raw = self._pinned, self._raw
        if pinned is None or raw is None:
            with self.engine.begin() as conn:
                yield Tx(conn)
            return
        raw.execute("BEGIN IMMEDIATE")
        try:
            yield Tx(pinned, dbapi=raw)
            if pinned.in_transaction():
                pinned.commit()
            else:
                raw.execute("COMMIT")
        except BaseException:
            if pinned.in_transaction():
                pinned.rollback()
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise

    def mutate(
        self, key: RequestKey | None, apply: Callable[[ModuleStoreUnit], M], response_type: type[M]
    ) -> M:
        """Applies once. A concurrent call with the same request id waits at the claim until the first one
        ends, then answers as it did; a transaction that loses to a concurrent one is run again."""
        response = retrying(lambda: self._attempt(key, apply, response_type), self.retries)
        self.committed.notify()
        return response

    def read(self, fn: Callable[[Connection], T]) -> T:
        def attempt() -> T:
            with self.begin() as conn:
                return fn(conn)

        return retrying(attempt, self.retries)

    def _attempt(
        self, key: RequestKey | None, apply: Callable[[ModuleStoreUnit], M], response_type: type[M]
    ) -> M:
        log = self.requests
        with self.begin_tx() as tx:
            if key is not None:
                first = log.claim(tx, key.method, key.request_id, key.request_hash)
                if first is not None:
                    return response_type.FromString(first)
            response = apply(ModuleStoreUnit(tx, self.outbox))
            if key is not None:
                log.answer(tx, key.method, key.request_id, response.SerializeToString(deterministic=True))
            return response

    def close(self) -> None:
        if self._pinned is not None:
            self._pinned.close()
        self.engine.dispose()
