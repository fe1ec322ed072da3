"""Transactions that lose to concurrent ones are run again, a bounded number of times, then refused ABORTED.

What counts as losing (nothing of the attempt was applied; the database rolled it back):

| failure | PostgreSQL | SQLite |
|---|---|---|
| deadlock | 40P01 | - |
| serialization failure | 40001 | - |
| lock not available | 55P03 | SQLITE_BUSY, SQLITE_LOCKED ("database is locked") |
| a concurrent insert of the same key won | 23505 | SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY |

The last one is how a racing first attempt meets the winner's row (a request id's journal entry, a named
store minted once): the next attempt finds it. Anything else is not retried.

`Retries` (defaults below) bounds the attempts and the time: a SQLite writer that already waited out its
busy timeout is not made to wait it out again. Every service runs its transactions through `retrying`; the
refusal it ends with (`Contention`, ABORTED / CONTENTION) tells the caller to retry with the same request id.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import psycopg
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from ggmodules.core.errors import Contention
from ggmodules.storage.idempotency import ClaimLost

T = TypeVar("T")

# 26000: a prepared statement the session lost (storage/pg_pipeline.py); the transaction failed whole.
_PG_CONTENTION = frozenset({"40P01", "40001", "55P03", "26000"})
_PG_UNIQUE = "23505"
_SQLITE_BUSY = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
_SQLITE_UNIQUE = frozenset({2067, 1555})  # SQLITE_CONSTRAINT_UNIQUE, SQLITE_CONSTRAINT_PRIMARYKEY
# PostgreSQL's idle_in_transaction_session_timeout ended the session (SQLSTATE 25P03; psycopg raises it as
# an InternalError, SQLAlchemy wraps it so).
IDLE_IN_TRANSACTION_TIMEOUT = "25P03"
# SQLAlchemy's errors for a database that cannot be reached or a connection lost, and the drivers' own,
# which arrive unwrapped where the suite talks to a driver below SQLAlchemy (storage/pg_pipeline.py, a
# write's COMMIT among them).
_UNREACHABLE = (
    OperationalError, InterfaceError,
    psycopg.OperationalError, psycopg.InterfaceError, sqlite3.OperationalError,
)


@dataclass(frozen=True)
class Retries:
    """How a transaction is retried after losing to a concurrent one."""

    # Attempts in all, the first included.
    attempts: int = 6
    # Backoff before the n-th retry: first_delay * 2**(n-1), at most max_delay, less up to half at random
    # (so transactions that collided retry apart).
    first_delay: float = 0.005
    max_delay: float = 0.2
    # No retry starts once this many seconds have passed since the first attempt began.
    budget: float = 5.0

    def delay(self, retry: int, rand: float) -> float:
        base: float = min(self.max_delay, self.first_delay * 2.0 ** (retry - 1))
        return base * (1 - 0.5 * rand)


DEFAULT = Retries()


def database_unreachable(exc: BaseException) -> bool:
    """True when the database could not be reached, refused a connection (down, restarting, `too many
    clients`), lost it (pg_terminate_backend, a failover), or ended this session's transaction left idle
    too long (storage/engine.py IDLE_IN_TRANSACTION_MS: the process had stalled): a condition of the
    database, not a defect; the next attempt, on a fresh connection, may go through."""
    return isinstance(exc, _UNREACHABLE) or (
        isinstance(exc, DBAPIError) and getattr(exc.orig, "sqlstate", None) == IDLE_IN_TRANSACTION_TIMEOUT
    )


def once_more_if_lost(attempt: Callable[[], T]) -> T:
    """`attempt()`, and once more should the database connection it used turn out lost (a session ended by
    pg_terminate_backend or a failover: the pool gives the next attempt a fresh one). For what may run twice
    (a read; a write whose transaction did not commit); a database still unreachable fails the second."""
    try:
        return attempt()
    except Exception as exc:
        if not database_unreachable(exc):
            raise
    return attempt()


def first_line(exc: BaseException) -> str:
    """The driver's first line of a database error (SQLAlchemy's own adds the statement and a link), at most
    300 characters: what a refusal or a log line quotes."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


def lost_to_concurrency(exc: BaseException) -> bool:
    """True when the database refused the attempt because of a concurrent transaction (see the table)."""
    if isinstance(exc, ClaimLost):
        return True
    cause = getattr(exc, "orig", None) or exc  # SQLAlchemy wraps the driver's error
    sqlstate = getattr(cause, "sqlstate", None)  # psycopg
    if sqlstate is not None:
        return sqlstate in _PG_CONTENTION or sqlstate == _PG_UNIQUE
    code = getattr(cause, "sqlite_errorcode", None)
    if isinstance(cause, sqlite3.Error) and code is not None:
        return code & 0xFF in _SQLITE_BUSY or code in _SQLITE_UNIQUE
    return False


def retrying(
    attempt: Callable[[], T],
    retries: Retries = DEFAULT,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    rand: Callable[[], float] = random.random,
) -> T:
    """`attempt()` (one whole transaction), run again while it loses to concurrent ones; `Contention`
    when it still does after the last attempt allowed."""
    started = clock()
    made = 0
    while True:
        made += 1
        try:
            return attempt()
        except Exception as exc:
            if not lost_to_concurrency(exc):
                raise
            if made >= retries.attempts or clock() - started >= retries.budget:
                raise contention(exc, made) from exc
        sleep(retries.delay(made, rand()))


def contention(exc: BaseException, attempts: int) -> Contention:
    cause = getattr(exc, "orig", None) or exc
    what = (str(cause).splitlines() or [type(cause).__name__])[0][:200]
    return Contention(
        f"this call lost to concurrent calls in the database {attempts} times in a row ({what}); nothing was "
        "applied. Retry with the same request id",
        metadata={"attempts": str(attempts)},
    )
