"""Group commit: concurrent mutations share one transaction, each in its own SAVEPOINT.

A mutation handed to `GroupCommit.mutate` waits in a queue; the mutations that arrive while a batch runs
(and commits) make up the next one. A batch is one transaction:
- each mutation claims its request id, applies, appends its events and records its answer exactly as a
  transaction of its own does (`Transactions.apply`, transaction.py), inside `SAVEPOINT`; a refusal (any
  exception) rolls back to it, so a refused mutation changes nothing and the others stand;
- mutations of one store are applied in arrival order (a batch is sorted by the store each locks first,
  stably), so writers of one store keep the order they were accepted in; on PostgreSQL the first write of a
  store in the batch takes the store row's lock, as alone, and batches take those locks in one order;
- every caller is answered only after the batch's COMMIT, refusals included (a refusal may rest on an
  earlier mutation of the batch); a COMMIT that fails is every caller's answer.
A mutation that loses to a concurrent transaction (storage.contention: deadlock, lock or unique races, a
vanished claim) rolls the whole batch back; its mutations are then run one transaction each, retried as
before. A batch of one runs without a savepoint: a lone caller pays nothing for the grouping. On SQLite
a batch first runs without any (SAVEPOINT and RELEASE were two of a batched append's six statements): should
one of its mutations raise, the whole transaction is rolled back, nothing of it committed, and the batch is
run again with a savepoint each, as above, so every outcome is the one it would have had; the next
`GUARDED` batches then take their savepoints from the start (a client sending refusals does not make every
batch run twice).

Where batches run: with SQLite on the event loop (one pinned connection, as every other transaction of
the service), once the loop has nothing else ready; what arrives meanwhile is the next batch. With
PostgreSQL on `WORKERS` thread(s), each with a connection of its own (no pool checkout, no ping per
transaction): a batch starts on an idle worker at once, so a lone caller waits for no one, and under load
each worker takes what queued while it was busy. One worker by default: batches of writes to stores held
in common lock the same rows (the store, every holder's stream head) in different orders, and with four in
flight they waited on each other for seconds (deadlocks found only after deadlock_timeout, each batch then
redone write by write): 16 clients on one run-wide board took 37-65 s and a Handover behind them missed its
10 s deadline, against 9 s with one worker; independent stores lose about 15% of throughput (797 -> 685
appends/s, 32 callers). A connection found broken before COMMIT (a restarted
server) is replaced and the batch run again once: nothing of it was committed. While a watcher of the
outbox waits caught up, a batch's COMMIT carries that watcher's next read (storage/outbox_commit_read.py),
and the commit is signalled on the event loop once its callers are answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import psycopg
from google.protobuf.message import Message
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from ggmodules.storage.contention import lost_to_concurrency
from ggmodules.storage.idempotency import RequestKey
from ggmodules.storage.modulestore import pg_write
from ggmodules.storage.modulestore.transaction import Transactions
from ggmodules.storage.modulestore.unit import ModuleStoreUnit
from ggmodules.storage.outbox_commit_read import CommitReads
from ggmodules.storage.prepared import Tx

M = TypeVar("M", bound=Message)
# The most mutations one transaction takes; more wait for the next.
MAX_BATCH = 64
_SAVEPOINT = "gc"
# How many turns of the event loop a SQLite batch waits at most for the loop to have nothing else ready.
MAX_DEFERRALS = 64
# SQLite: batches run with savepoints from the start after one had to be run again with them.
GUARDED = 16
# PostgreSQL: batches in flight at once, each on its own worker thread and connection (see the docstring).
WORKERS = 1


@dataclass(slots=True)
class _Mutation:
    key: RequestKey | None
    apply: Callable[[ModuleStoreUnit], Message]
    response_type: type[Message]
    order: tuple[str, ...]
    future: asyncio.Future[Message] | None


class GroupCommit:
    def __init__(
        self, transactions: Transactions, *, workers: int = WORKERS, reads: CommitReads | None = None
    ) -> None:
        self._transactions = transactions
        self._reads = reads  # PostgreSQL: what a batch reads after its COMMIT for the outbox's watchers
        self._committed = transactions.committed
        self._inline = transactions.pinned_dbapi is not None
        self._pending: list[_Mutation] = []
        self._scheduled = False  # SQLite: a flush is scheduled on the loop
        self._guarded = 0  # SQLite: batches still to run with savepoints from the start
        # PostgreSQL: each worker keeps a connection of the pool while the pool leaves at least as many
        # again for everything else; a smaller pool gets one worker that takes a connection per batch.
        capacity = _pool_capacity(transactions)
        self._workers = max(1, min(workers, capacity // 2))
        self._keep = capacity >= 2 * self._workers
        self._in_flight = 0  # PostgreSQL: batches running on worker threads
        self._executor: ThreadPoolExecutor | None = None
        self._local = threading.local()  # each worker thread's own connection
        self._connections: list[Connection] = []
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def ahead(self) -> int:
        """How many mutations one caller (a write Session) gains by having in flight at once: a batch's
        worth on PostgreSQL, where they share one durable commit; none on SQLite, where a lone mutation
        commits inline before the caller could send the next (server/modulestore/session.py). None either
        with several workers: two batches in flight at once could lock one store in either order, and a
        session's writes must be applied in the order sent."""
        return 0 if self._inline or self._workers > 1 else MAX_BATCH

    async def mutate(
        self,
        key: RequestKey | None,
        apply: Callable[[ModuleStoreUnit], M],
        response_type: type[M],
        *,
        order: tuple[str, ...] = (),
    ) -> M:
        """The use case `apply` in the next batch's transaction, with `key` claimed first (R49); its
        response once that transaction has committed. `order`: the row it locks first (run id, store id), then
        the writer (for the load that goes with the claim, pg_write.py; not part of the order);
        a batch applies its mutations in that order, arrival order among equals, so concurrent batches take
        those locks in one order."""
        loop = asyncio.get_running_loop()
        if self._inline and not self._scheduled and not _busy(loop):
            # SQLite, nothing else to do: no call is on its way to join a batch; run it now.
            (outcome,) = self._run([_Mutation(key, apply, response_type, order, None)])
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome  # type: ignore[return-value]
        future: asyncio.Future[Message] = loop.create_future()
        self._pending.append(_Mutation(key, apply, response_type, order, future))
        if self._inline:
            if not self._scheduled:
                self._scheduled = True
                loop.call_soon(self._flush_inline, loop, 0)
        else:
            self._start_batches(loop)
        response: M = await future  # type: ignore[assignment]
        return response

    def _next_batch(self) -> list[_Mutation]:
        batch, self._pending = self._pending[:MAX_BATCH], self._pending[MAX_BATCH:]
        batch.sort(key=lambda m: m.order[:2])  # stable: arrival order among mutations of one store
        return batch

    def _flush_inline(self, loop: asyncio.AbstractEventLoop, deferred: int) -> None:
        # Not while the loop has other work ready: calls arriving now (each takes the loop a few turns to
        # reach its handler) join this batch instead of waiting for the next.
        if deferred < MAX_DEFERRALS and _busy(loop):
            loop.call_soon(self._flush_inline, loop, deferred + 1)
            return
        try:
            while self._pending:
                batch = self._next_batch()
                _settle(batch, self._run(batch))
        finally:
            self._scheduled = False

    def _start_batches(self, loop: asyncio.AbstractEventLoop) -> None:
        """PostgreSQL: a batch of what is pending on every idle worker."""
        while self._pending and self._in_flight < self._workers:
            self._in_flight += 1
            task = loop.create_task(self._batch(loop, self._next_batch()))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _batch(self, loop: asyncio.AbstractEventLoop, batch: list[_Mutation]) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self._workers, thread_name_prefix="group-commit")
        try:
            outcomes = await loop.run_in_executor(self._executor, self._run, batch)
        except asyncio.CancelledError:  # the service is stopping: so are its callers
            for m in batch:
                if m.future is not None:
                    m.future.cancel()
            self._committed.notify()  # the batch may have committed all the same
            raise
        except BaseException as exc:  # the executor itself failed (shutting down)
            outcomes = [exc] * len(batch)
        finally:
            self._in_flight -= 1
        _settle(batch, outcomes)
        # Signalled once its callers are answered (their handlers run before the outbox's watchers, which
        # would take the loop first), and with one wake of the loop for both.
        self._committed.notify()
        self._start_batches(loop)

    # ---- one batch (synchronous: on the loop for SQLite, on the worker thread for PostgreSQL) ----------

    def _run(self, batch: list[_Mutation]) -> list[Message | BaseException]:
        try:
            return self._run_kept(batch)
        finally:
            if not self._keep:
                self._release()

    def _run_kept(self, batch: list[_Mutation]) -> list[Message | BaseException]:
        try:
            try:
                outcomes = self._attempt(batch)
            except _Committing:
                raise
            except Exception as exc:
                if not (getattr(exc, "connection_invalidated", False) or self._drop_broken()):
                    raise
                outcomes = self._attempt(batch)  # a broken connection, replaced: nothing was committed
        except _Committing as failed:
            cause = failed.__cause__ or failed
            if lost_to_concurrency(cause):  # rolled back by the database: nothing of the batch was applied
                return [self._alone(m) for m in batch]
            return [cause] * len(batch)
        except Exception as exc:
            if isinstance(exc, _Lost) or lost_to_concurrency(exc):
                return [self._alone(m) for m in batch]
            return [exc] * len(batch)
        if self._inline:  # PostgreSQL: once the callers are answered (`_batch`)
            self._committed.notify()
        return outcomes

    def _attempt(self, batch: list[_Mutation]) -> list[Message | BaseException]:
        """The batch in one transaction. A lone mutation's refusal is raised (its transaction rolled back);
        in a larger batch it is that mutation's outcome. SQLite: without savepoints first (the docstring)."""
        if len(batch) > 1 and self._inline:
            if self._guarded == 0:
                try:
                    return self._attempt_with(batch, savepoints=False)
                except _Guard:  # rolled back: nothing of the batch was applied
                    self._guarded = GUARDED
            else:
                self._guarded -= 1
        return self._attempt_with(batch, savepoints=len(batch) > 1)

    def _attempt_with(self, batch: list[_Mutation], *, savepoints: bool) -> list[Message | BaseException]:
        outcomes: list[Message | BaseException] = []
        unguarded = len(batch) > 1 and not savepoints
        tx, end = self._begin()
        pipelined = tx.deferred is not None  # PostgreSQL: statements sent together (pg_write.py)
        try:
            for m in batch:
                start = tx.mark()
                if savepoints:
                    self._statement(tx, f"SAVEPOINT {_SAVEPOINT}")
                try:
                    outcomes.append(self._apply(tx, m))
                except Exception as exc:
                    if unguarded:
                        raise _Guard() from exc  # the whole transaction is rolled back, below
                    if not savepoints:
                        raise
                    if lost_to_concurrency(exc) or (pipelined and _from_database(exc)):
                        # PostgreSQL: a statement sent with this mutation's may be an earlier one's
                        raise _Lost() from exc
                    if (f"SAVEPOINT {_SAVEPOINT}", None) not in tx.discard(start):  # else none of it was sent
                        self._statement(tx, f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
                        self._statement(tx, f"RELEASE SAVEPOINT {_SAVEPOINT}")
                    outcomes.append(exc)
                    continue
                if savepoints:  # PostgreSQL: sent with the next mutation's first statements, or COMMIT
                    self._statement(tx, f"RELEASE SAVEPOINT {_SAVEPOINT}")
        except BaseException:
            self._roll_back(tx, end)
            raise
        try:
            if pipelined:
                if self._reads is None:
                    tx.send(commit=True)  # what waits and COMMIT: one round trip
                else:  # the same, with the outbox watchers' read after the COMMIT (outbox_commit_read.py)
                    self._reads.commit(tx)
            end(True)
        except Exception as exc:
            with contextlib.suppress(Exception):
                self._roll_back(tx, end)  # the transaction may still be open (SQLite: a busy COMMIT)
            if getattr(exc, "before_commit", False):  # a statement failed, COMMIT did not run: nothing is
                raise _Lost() from exc  # committed; each mutation runs alone, to its own outcome
            raise _Committing() from exc
        return outcomes

    def _apply(self, tx: Tx, m: _Mutation) -> Message:
        if tx.deferred is not None:
            t = self._transactions
            return pg_write.apply_once(tx, t.outbox, t.requests, m.key, m.apply, m.response_type, m.order)
        return self._transactions.apply(tx, m.key, m.apply, m.response_type, m.order)

    @staticmethod
    def _roll_back(tx: Tx, end: Callable[[bool], None]) -> None:
        try:
            if tx.deferred is not None:
                tx.rollback()  # PostgreSQL: before psycopg would (pg_pipeline.py)
        finally:
            end(False)

    @staticmethod
    def _statement(tx: Tx, sql: str) -> None:
        if tx.deferred is not None:
            tx.defer(sql)
        else:
            tx.cursor().execute(sql)

    def _begin(self) -> tuple[Tx, Callable[[bool], None]]:
        """A new transaction (`Transactions.open`): on the pinned SQLite connection, else on this worker
        thread's own connection, where it defers (PostgreSQL, pg_write.py)."""
        t = self._transactions
        if t.pinned is not None:
            return t.open(None)
        return pg_write.open_deferring(self._own_connection())

    def _own_connection(self) -> Connection:
        conn: Connection | None = getattr(self._local, "connection", None)
        if conn is None or conn.closed:
            # Autocommit: the transaction's BEGIN is its own, sent with its first statements. SQLAlchemy
            # sets the isolation level back when the connection returns to the pool.
            conn = self._transactions.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            self._local.connection = conn
            self._connections.append(conn)
        return conn

    def _alone(self, m: _Mutation) -> Message | BaseException:
        """One mutation in a transaction of its own, retried when it loses to a concurrent one."""
        if not self._keep:
            self._release()  # the transaction takes its connection from the pool
        try:
            return self._transactions.mutate(m.key, m.apply, m.response_type)  # notifies its commit
        except Exception as exc:
            return exc

    def _drop_broken(self) -> bool:
        """PostgreSQL: whether this thread's connection is broken (psycopg says so: a restarted server, a
        killed backend); if so it is let go, and the next transaction opens another."""
        conn: Connection | None = getattr(self._local, "connection", None)
        if conn is None or conn.invalidated:
            return False
        dbapi = getattr(conn.connection, "dbapi_connection", None)
        if not getattr(dbapi, "broken", False):
            return False
        conn.invalidate()
        self._release()
        return True

    def _release(self) -> None:
        conn: Connection | None = getattr(self._local, "connection", None)
        if conn is not None:
            self._local.connection = None
            self._connections.remove(conn)
            conn.close()

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        for conn in self._connections:
            conn.close()


class _Lost(Exception):
    """A mutation of a batch lost to a concurrent transaction: the whole batch is rolled back."""


class _Guard(Exception):
    """SQLite: a mutation of a batch run without savepoints raised; the batch runs again with them."""


class _Committing(Exception):
    """COMMIT itself failed (the cause): whether it took effect is unknown here; it is not run again."""


def _pool_capacity(transactions: Transactions) -> int:
    """Connections the engine's pool opens at most (pool size + overflow); large when unbounded."""
    pool = transactions.engine.pool
    size = getattr(pool, "size", None)
    overflow = getattr(pool, "_max_overflow", None)
    if not callable(size) or not isinstance(overflow, int) or overflow < 0:
        return 1_000
    return int(size()) + overflow


def _from_database(exc: BaseException) -> bool:
    """An error of the database (not a refusal the use case decided)."""
    return isinstance(exc, (psycopg.Error, DBAPIError))


def _busy(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether callbacks other than the caller are ready to run (asyncio's own loop; others: False)."""
    ready = getattr(loop, "_ready", None)
    return bool(ready)


def _settle(batch: list[_Mutation], outcomes: list[Message | BaseException]) -> None:
    for m, outcome in zip(batch, outcomes, strict=True):
        # No future: run at once, answered by its caller. Done: the caller left; its write stands anyway.
        if m.future is None or m.future.done():
            continue
        if isinstance(outcome, BaseException):
            m.future.set_exception(outcome)
        else:
            m.future.set_result(outcome)
