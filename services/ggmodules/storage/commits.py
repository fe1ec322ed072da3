"""A commit signal: write paths call `notify()` after a transaction with outbox events commits; stream readers
wait on it instead of polling.

`notify` may be called from any thread (a worker thread on PostgreSQL, the event loop on SQLite) and costs
one counter increment when nobody waits. A reader takes `version` BEFORE it reads the database and then
waits for a version beyond it, so a commit between its read and its wait is never missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url

from ggmodules.storage.engine import CONNECT_TIMEOUT_SECONDS, PG_KEEPALIVES, listen_url


class CommitSignal:
    def __init__(self) -> None:
        self._version = 0
        self._lock = threading.Lock()
        self._waiters: dict[asyncio.Future[bool], asyncio.AbstractEventLoop] = {}

    @property
    def version(self) -> int:
        return self._version

    def notify(self) -> None:
        with self._lock:
            self._version += 1
            if not self._waiters:
                return
            waiters, self._waiters = self._waiters, {}
        # One hand-over per event loop however many wait on it (a hundred subscribers of one Telemetry are
        # woken by one call, not a hundred writes to the loop's self-pipe); the loop's own thread wakes
        # them directly.
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[bool]]] = {}
        for fut, loop in waiters.items():
            by_loop.setdefault(loop, []).append(fut)
        for loop, futures in by_loop.items():
            if _running_loop() is loop:
                _wake_all(futures)
            else:
                loop.call_soon_threadsafe(_wake_all, futures)

    async def wait(self, seen: int, timeout: float) -> bool:
        """True once a commit after `seen` was notified; False when `timeout` seconds pass first. The waiter
        awaits its future itself, with a timer beside it (asyncio.wait_for would put a second future, and so
        a second turn of the loop, between a commit and the reader it wakes)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        with self._lock:
            if self._version != seen:
                return True
            self._waiters[fut] = loop
        timer = loop.call_later(max(timeout, 0.0), _expire, fut)
        try:
            return await fut
        finally:
            timer.cancel()
            with self._lock:
                self._waiters.pop(fut, None)


def _wake_all(futures: list[asyncio.Future[bool]]) -> None:
    for fut in futures:
        if not fut.done():
            fut.set_result(True)


def _expire(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(False)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # a worker thread
        return None


# ---- across processes (PostgreSQL) ------------------------------------------------------------------------
# Another replica's commits reach this process by LISTEN/NOTIFY: a statement trigger on the watched table
# (the migrations named `h9log_*_notify`) sends NOTIFY <table> with the inserting transaction, and PostgreSQL
# delivers it when that transaction commits, to every listening session of the database. One listening
# connection per watched table and process, on a daemon thread, wakes the process's own CommitSignal (or runs
# `on_commit`); a lost connection is re-opened with a bounded backoff and answered by one wake-up, since
# commits made while it was down were not heard.

LISTEN_POLL_SECONDS = 0.5
LISTEN_BACKOFF_MAX = 2.0


class CommitListener:
    """Runs `on_commit()` on its thread for every commit another session (or this process) made on
    `channel`; with `own`, not for those of the sessions whose backend pids it holds. Stopped by `stop()`."""

    def __init__(
        self, url: str, channel: str, on_commit: Callable[[], object], own: OwnSessions | None = None
    ) -> None:
        self._dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
        self._channel = channel
        self._on_commit = on_commit
        self._own = own
        self._stopping = threading.Event()
        self.listening = threading.Event()  # set once LISTEN is in force (tests wait on it)
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"listen-{channel}")
        self._thread.start()

    def _run(self) -> None:
        delay = 0.05
        while not self._stopping.is_set():
            try:
                # TCP keepalive as the engines' connections (storage/engine.py): a server host that vanished
                # is noticed, and LISTEN made again on a fresh connection once it is back.
                with psycopg.connect(self._dsn, autocommit=True, connect_timeout=CONNECT_TIMEOUT_SECONDS,
                                     **PG_KEEPALIVES) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
                    self.listening.set()
                    self._on_commit()  # whatever committed while nobody listened
                    delay = 0.05
                    while not self._stopping.is_set():
                        for note in conn.notifies(timeout=LISTEN_POLL_SECONDS):
                            if self._own is None or note.pid not in self._own.pids:
                                self._on_commit()
            except psycopg.Error:
                self.listening.clear()
                self._stopping.wait(delay)
                delay = min(delay * 2, LISTEN_BACKOFF_MAX)

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(LISTEN_POLL_SECONDS * 4)


class OwnSessions:
    """The backend pids of an engine's open PostgreSQL sessions, noted at each checkout (no round trip) and
    let go when a session closes."""

    def __init__(self, engine: Engine) -> None:
        self.pids: set[int] = set()
        event.listen(engine, "checkout", self._checkout)
        event.listen(engine, "close", self._close)
        event.listen(engine, "close_detached", self._close)
        event.listen(engine, "invalidate", self._close)

    def _checkout(self, dbapi_conn: Any, record: Any, proxy: Any) -> None:
        pid = int(dbapi_conn.info.backend_pid)
        record.info["backend_pid"] = pid
        self.pids.add(pid)

    def _close(self, dbapi_conn: Any, record: Any = None, *_: Any) -> None:
        pid = record.info.get("backend_pid") if record is not None else None
        if pid is None and dbapi_conn is not None:
            with contextlib.suppress(Exception):
                pid = int(dbapi_conn.info.backend_pid)
        self.pids.discard(pid)


def listen_for_commits(
    engine: Engine, table: str, on_commit: Callable[[], object], *, skip_own: bool = False
) -> CommitListener | None:
    """A listener for commits on `table` made by any process, on PostgreSQL; None on SQLite (one process
    writes a SQLite file, and its own CommitSignal already hears every commit). With `skip_own`, commits
    made through `engine` itself are not passed on: for a caller whose every write through it already
    signals its own commits (it would otherwise do the work of each wake-up twice)."""
    if engine.dialect.name != "postgresql":
        return None
    own = OwnSessions(engine) if skip_own else None
    return CommitListener(listen_url(engine), table, on_commit, own)


def notify_trigger_sql(table: str) -> list[str]:
    """The statements (PostgreSQL) that make every INSERT on `table` send NOTIFY <table> at commit. A
    statement-level trigger: one NOTIFY per statement, and PostgreSQL folds equal ones of a transaction."""
    return [
        f"CREATE OR REPLACE FUNCTION {table}_notify() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN PERFORM pg_notify('{table}', ''); RETURN NULL; END $$",
        f"DROP TRIGGER IF EXISTS {table}_notify ON {table}",
        f"CREATE TRIGGER {table}_notify AFTER INSERT ON {table} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {table}_notify()",
    ]


def drop_notify_trigger_sql(table: str) -> list[str]:
    return [f"DROP TRIGGER IF EXISTS {table}_notify ON {table}", f"DROP FUNCTION IF EXISTS {table}_notify()"]
