"""PostgreSQL: group-commit batches run on the event loop (group_commit.py), on a connection of their own.

A batch is the same transaction as on a worker thread (`GroupCommit._attempt`): each mutation in its
SAVEPOINT when there are several, its request id claimed with the load of its store, its statements sent
together (pg_write.py, storage/pg_pipeline.py), COMMIT with the last of them; every caller answered after
it. What differs is where it waits: the round trips are awaited on the loop (the connection's socket
watched by the loop), so a write costs no hop to a worker thread and back, two wake-ups fewer. The use case
itself runs on the loop between them, as its Python would hold the interpreter anyway; a read it makes
beyond the first (a refusal's lookups, a skills store's read sets, another kind's state) waits on the loop
for its one round trip.

Batches run one at a time (WORKERS=1). A batch that loses to a concurrent transaction is rolled back and its
mutations run one transaction each on a worker thread (`alone`), as on the threaded path; a connection
found broken before COMMIT is replaced and the batch run again once; a failed COMMIT is every caller's
answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

from google.protobuf.message import Message
from sqlalchemy.engine import Connection

from ggmodules.storage.contention import lost_to_concurrency
from ggmodules.storage.modulestore import pg_write
from ggmodules.storage.modulestore.transaction import Transactions
from ggmodules.storage.prepared import Tx

_SAVEPOINT = "gc"


class LoopBatches:
    def __init__(
        self,
        transactions: Transactions,
        alone: Callable[[Any], Message | BaseException],
        executor: Callable[[], Executor],
    ) -> None:
        self._transactions = transactions
        self._alone = alone  # one mutation in a transaction of its own (blocking: run on `executor`)
        self._executor = executor
        self._conn: Connection | None = None

    async def run(self, batch: list[Any]) -> list[Message | BaseException]:
        """Each mutation's outcome (its response, or what refused it), once the batch has committed."""
        try:
            try:
                outcomes = await self._attempt(batch)
            except _Committing:
                raise
            except Exception:
                if not self._broken():
                    raise
                self._drop()  # a broken connection, replaced: nothing was committed
                outcomes = await self._attempt(batch)
        except asyncio.CancelledError:
            self._drop()  # stopped part way: the server rolls the transaction back
            raise
        except _Committing as failed:
            cause = failed.__cause__ or failed
            if lost_to_concurrency(cause):  # rolled back by the database: nothing of the batch was applied
                return await self._one_by_one(batch)
            return [cause] * len(batch)
        except Exception as exc:
            if isinstance(exc, _Lost) or lost_to_concurrency(exc):
                return await self._one_by_one(batch)
            return [exc] * len(batch)
        self._transactions.committed.notify()
        return outcomes

    async def _attempt(self, batch: list[Any]) -> list[Message | BaseException]:
        t = self._transactions
        outcomes: list[Message | BaseException] = []
        savepoints = len(batch) > 1
        tx, end = t.open(await self._connection())
        tx.deferring(begin=True)  # the connection is in autocommit: BEGIN goes with the first statements
        try:
            for m in batch:
                if savepoints:
                    tx.defer(f"SAVEPOINT {_SAVEPOINT}")
                try:
                    outcomes.append(
                        await pg_write.apply_once_async(
                            tx, t.outbox, t.requests, m.key, m.apply, m.response_type, m.order
                        )
                    )
                    if savepoints:  # this mutation's statements, before the next's
                        tx.defer(f"RELEASE SAVEPOINT {_SAVEPOINT}")
                        await tx.send_async()
                except Exception as exc:
                    if not savepoints:
                        raise
                    if lost_to_concurrency(exc):
                        raise _Lost() from exc
                    if (f"SAVEPOINT {_SAVEPOINT}", None) not in tx.discard():  # else nothing of it was sent
                        tx.defer(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
                        tx.defer(f"RELEASE SAVEPOINT {_SAVEPOINT}")
                        await tx.send_async()
                    outcomes.append(exc)
        except asyncio.CancelledError:
            self._drop()  # stopped part way (a round trip may be in flight): the server rolls back
            raise
        except BaseException:
            self._roll_back(tx, end)
            raise
        try:
            await tx.send_async(commit=True)  # what waits and COMMIT: one round trip
            end(True)
        except asyncio.CancelledError:
            self._drop()
            raise
        except Exception as exc:
            self._roll_back(tx, end)
            raise _Committing() from exc
        return outcomes

    def _roll_back(self, tx: Tx, end: Callable[[bool], None]) -> None:
        """Rolls back (before psycopg would: storage/pg_pipeline.py); a connection that cannot is dropped,
        so no transaction of it is left open for the next batch to join."""
        try:
            tx.rollback()
            end(False)
        except Exception:
            self._drop()

    async def _one_by_one(self, batch: list[Any]) -> list[Message | BaseException]:
        loop = asyncio.get_running_loop()
        return [await loop.run_in_executor(self._executor(), self._alone, m) for m in batch]

    async def _connection(self) -> Connection:
        if self._conn is None or self._conn.closed:
            engine = self._transactions.engine

            def connect() -> Connection:
                # Autocommit: the transaction's BEGIN is its own, sent with its first statements.
                return engine.connect().execution_options(isolation_level="AUTOCOMMIT")

            self._conn = await asyncio.get_running_loop().run_in_executor(self._executor(), connect)
        return self._conn

    def _broken(self) -> bool:
        conn = self._conn
        if conn is None or conn.closed:
            return True
        dbapi = getattr(conn.connection, "dbapi_connection", None)
        return bool(getattr(dbapi, "broken", False) or getattr(dbapi, "closed", False))

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.invalidate()
            with contextlib.suppress(Exception):
                conn.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class _Lost(Exception):
    """A mutation of a batch lost to a concurrent transaction: the whole batch is rolled back."""


class _Committing(Exception):
    """COMMIT itself failed (the cause): whether it took effect is unknown here; it is not run again."""
