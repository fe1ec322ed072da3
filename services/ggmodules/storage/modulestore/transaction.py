"""The one transaction path of every ModuleStore mutation (`Transactions.mutate`): one transaction per
mutation, its request id (R49) claimed first and answered inside it, the use case run on a unit of work
(unit.py) in between, run again when it loses to a concurrent one (see storage.contention); committed
mutations wake WatchOutbox streams. Reads take `read`."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, TypeVar

from google.protobuf.message import Message
from sqlalchemy.engine import Connection, Engine

from ggmodules.storage.commits import CommitSignal
from ggmodules.storage.contention import DEFAULT, Retries, retrying
from ggmodules.storage.idempotency import RequestKey, RequestLog
from ggmodules.storage.modulestore.unit import ModuleStoreUnit, apply_once
from ggmodules.storage.outbox import Outbox
from ggmodules.storage.prepared import Tx
from ggmodules.storage.sqlite_checkpoints import Checkpointer

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
        # SQLite on one pinned connection: WAL checkpoints on a thread of their own, not inside the COMMITs
        # on the event loop (storage/sqlite_checkpoints.py).
        self._checkpoints = _checkpointer(engine, self._raw)

    @property
    def pinned(self) -> Connection | None:
        return self._pinned

    def bare(self) -> Tx | None:
        """The pinned SQLite connection on no transaction, for a read of one statement (autocommit: its own
        snapshot); None elsewhere."""
        if self._pinned is None or self._raw is None:
            return None
        return Tx(self._pinned, dbapi=self._raw)

    @property
    def pinned_dbapi(self) -> Any:
        """The pinned connection's DBAPI connection (SQLite inline), or None."""
        return self._raw

    @contextmanager
    def begin(self) -> Iterator[Connection]:
        """A transaction for Core statements (reads, WatchOutbox's numbering read), committed when the block
        ends. On the pinned SQLite connection it is begun and ended on the DBAPI connection (`open`): a Core
        statement joins it, and a block of prepared statements only (WatchOutbox's read) skips SQLAlchemy's
        per-transaction bookkeeping, about a fifth of that read's time in a py-spy profile."""
        if self._pinned is None:
            with self.engine.begin() as conn:
                yield conn
            return
        _, end = self.open()
        try:
            yield self._pinned
        except BaseException:
            end(False)
            raise
        try:
            end(True)
        except BaseException:
            with suppress(Exception):  # a COMMIT that failed (SQLite busy) leaves the transaction open
                end(False)
            raise

    def open(self, conn: Connection | None = None) -> tuple[Tx, Callable[[bool], None]]:
        """Begins a mutation's transaction: its Tx and how it ends (True: COMMIT, False: ROLLBACK, which
        does nothing once ended). On `conn` when given (group commit's own per worker), else on the pinned
        connection, else on one from the pool. On the pinned SQLite connection it is begun and ended on the
        DBAPI connection itself, which skips SQLAlchemy's per-transaction bookkeeping when the mutation runs
        only prepared statements (a write); a Core statement joins it (storage/engine.py), and SQLAlchemy
        then ends it."""
        pinned, raw, checkpoints = self._pinned, self._raw, self._checkpoints
        if conn is None and pinned is not None and raw is not None:
            raw.execute("BEGIN IMMEDIATE")

            def end_raw(commit: bool) -> None:
                if commit:
                    if pinned.in_transaction():
                        pinned.commit()
                    else:
                        raw.execute("COMMIT")
                    if checkpoints is not None:
                        checkpoints.committed()
                    return
                if pinned.in_transaction():
                    pinned.rollback()
                if raw.in_transaction:
                    raw.execute("ROLLBACK")

            return Tx(pinned, dbapi=raw), end_raw
        own = conn is None and pinned is None
        on = self.engine.connect() if own else (conn or pinned)
        assert on is not None
        trans = on.begin()

        def end(commit: bool) -> None:
            try:
                if commit:
                    trans.commit()
                elif trans.is_active:
                    trans.rollback()
            finally:
                if own:
                    on.close()

        return Tx(on), end

    @contextmanager
    def begin_tx(self) -> Iterator[Tx]:
        """A mutation's transaction (`open`), committed when the block ends, rolled back when it raises."""
        tx, end = self.open()
        try:
            yield tx
            end(True)
        except BaseException:
            end(False)
            raise

    def apply(
        self,
        tx: Tx,
        key: RequestKey | None,
        apply: Callable[[ModuleStoreUnit], M],
        response_type: type[M],
        store: tuple[str, ...] = (),
    ) -> M:
        """One mutation inside the open transaction `tx` (unit.py, `apply_once`; `store`: the store it
        writes, run id, store id and the writer, or nothing)."""
        return apply_once(tx, self.outbox, self.requests, key, apply, response_type, store)

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
        with self.begin_tx() as tx:
            return self.apply(tx, key, apply, response_type)

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.close()
        if self._pinned is not None:
            self._pinned.close()
        self.engine.dispose()


def _checkpointer(engine: Engine, raw: Any) -> Checkpointer | None:
    """A checkpoint thread for a pinned connection to a SQLite file; None otherwise."""
    database = engine.url.database
    if raw is None or engine.dialect.name != "sqlite" or database in (None, "", ":memory:"):
        return None
    return Checkpointer(database, raw)
