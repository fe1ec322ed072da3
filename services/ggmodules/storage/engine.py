"""Engines built from a URL: a SQLite file by default (WAL), PostgreSQL with a `postgresql+psycopg://` URL.

On PostgreSQL each replica keeps a pool of `pool_size` connections and opens up to `max_overflow` more under
load (`--pool-size`, `--pool-max-overflow`). Every replica of every service sharing one server counts
against its `max_connections`: `pool_capacity` says how many such replicas fit, and past that a pooler
(PgBouncer in transaction mode) belongs in front of the server.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

import psycopg
from sqlalchemy import event, text
from sqlalchemy.engine import Engine, make_url
from sqlmodel import create_engine

# Seconds to wait for a PostgreSQL connection before calling the database unreachable (health, pools).
CONNECT_TIMEOUT_SECONDS = 5
# A transaction left open with nothing sent for this long is ended by the server, its locks released. Every
# transaction of the suite sends its statements back to back (milliseconds); one that waits this long
# belongs to a replica that stopped without closing its connection (a frozen process, a partitioned host),
# and its row locks would stop every other replica's writes to those stores for as long as it stays so:
# ModuleStore's group commit, waiting behind such a lock, holds up all of its replica's writes. Shorter than
# the suite's default 10 s deadline, so the writes waiting behind it still answer in time.
IDLE_IN_TRANSACTION_MS = 5_000
# A statement waiting this long for a lock is refused (SQLSTATE 55P03), its transaction rolled back and run
# again (storage/contention.py): a live replica's write retries until the lock is free. Without it, a frozen
# replica's other sessions queued for the same lock (its group commit and single writes on one store) were
# each granted it in turn and, frozen, held it for another IDLE_IN_TRANSACTION_MS: a store stayed locked
# 10 s and more, and the writes waiting behind it missed their deadlines (operator probe: 3 runs in 22
# lost 5 to 8 calls). Refused instead, they wait no longer than this and hold nothing. Every lock of the
# suite is held for milliseconds; only migrations wait longer, and they lift it for their transaction.
LOCK_TIMEOUT_MS = 2_000
# TCP keepalive on every PostgreSQL connection (libpq's): a server host that vanished is noticed after about
# idle + interval x count seconds rather than the kernel's two hours.
PG_KEEPALIVES: dict[str, Any] = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
                                 "keepalives_count": 3}


def make_engine(url: str, pool_size: int = 10, max_overflow: int = 10, *, listen_url: str = "") -> Engine:
    """`listen_url` (PostgreSQL): where the listeners of storage/commits.py connect instead of `url`."""
    parsed = make_url(url)
    if listen_url and (parsed.get_backend_name() != "postgresql"
                       or make_url(listen_url).get_backend_name() != "postgresql"):
        raise ValueError(
            "--listen-database-url (GGMODULES_LISTEN_DATABASE_URL) is for a PostgreSQL database: give it a "
            "postgresql+psycopg:// URL of the server the --database-url reaches, or leave it unset"
        )
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    connect_args: dict[str, Any] = {}
    on_psycopg = parsed.get_driver_name() == "psycopg"
    if on_psycopg:
        connect_args = {"connect_timeout": CONNECT_TIMEOUT_SECONDS, **PG_KEEPALIVES}
    engine = create_engine(
        url, pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=True, connect_args=connect_args
    )
    if on_psycopg:
        # Set on each new connection rather than as a startup option: PgBouncer refuses startup options
        # (README's "Running several replicas" says to set it on the role there). Both `connect` listeners
        # are added here, before the engine makes any connection: SQLAlchemy runs an engine's listeners
        # while iterating them, and one added as another thread connects fails that thread's connect.
        connections_made(engine)
        if listen_url:
            _LISTEN_URLS[engine] = listen_url

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            autocommit = dbapi_conn.autocommit
            dbapi_conn.autocommit = True
            try:
                dbapi_conn.execute(f"SET idle_in_transaction_session_timeout = {IDLE_IN_TRANSACTION_MS}")
                dbapi_conn.execute(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
                _prefer_lz4(dbapi_conn)
            finally:
                dbapi_conn.autocommit = autocommit

    return engine


def _prefer_lz4(dbapi_conn: Any) -> None:
    """Values this session stores out of line (TOAST: a store's state, a long message, an event's payload)
    are compressed with lz4 rather than PostgreSQL's default pglz, which compresses text about as well and
    many times slower. Measured on this machine, a 1.95 MB store state of made-up text (Zipf words): UPDATE
    with COMMIT 49.3 ms with pglz, 10.7 ms with lz4 (stored 1.25 and 1.19 MB), and read back 7.1 against
    3.4 ms. A server built without lz4 (or older than 14) refuses the setting, and keeps pglz."""
    try:
        dbapi_conn.execute("SET default_toast_compression = 'lz4'")
    except psycopg.Error:  # an unknown value (no lz4) or parameter (before 14): pglz stays
        return


# Per engine made with a `listen_url`: that URL.
_LISTEN_URLS: WeakKeyDictionary[Engine, str] = WeakKeyDictionary()


def listen_url(engine: Engine) -> str:
    """Where a LISTEN for `engine`'s database connects: its `listen_url`, else its own URL. Behind PgBouncer
    in transaction mode a LISTEN made through the pooler is lost as its transaction ends (the server
    connection goes back to the pool), so the listeners connect to the server itself."""
    return _LISTEN_URLS.get(engine) or engine.url.render_as_string(hide_password=False)


# Per engine, the count of the last DBAPI connection it made (a `connect` event listener).
_CONNECTIONS_MADE: WeakKeyDictionary[Engine, list[int]] = WeakKeyDictionary()


def connections_made(engine: Engine) -> int:
    """How many connections `engine` has made since this was first asked of it (0 then): an engine made by
    `make_engine` on PostgreSQL counts from its start; any other, from the first time it is asked."""
    made = _CONNECTIONS_MADE.get(engine)
    if made is None:
        made = _CONNECTIONS_MADE[engine] = [0]
        counter = itertools.count(1)  # next() on it is atomic under the GIL: pool threads connect at once

        def connected(*_: object) -> None:
            made[0] = next(counter)

        event.listen(engine, "connect", connected)
    return made[0]


def pool_capacity(engine: Engine, pool_size: int, max_overflow: int) -> dict[str, int] | None:
    """PostgreSQL: the server's connection limit and how many replicas with this pool it admits at their
    peak (None on SQLite). More replicas than `replicas` need PgBouncer in front of the server."""
    if is_sqlite(engine):
        return None
    with engine.connect() as conn:
        limit = int(conn.execute(text("SHOW max_connections")).scalar_one())
        reserved = int(conn.execute(text("SHOW superuser_reserved_connections")).scalar_one())
    usable = limit - reserved
    per_replica = pool_size + max_overflow
    return {"max_connections": limit, "usable": usable, "per_replica": per_replica,
            "replicas": usable // max(1, per_replica)}


def _sqlite_engine(url: str) -> Engine:
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's `begin` event issue BEGIN IMMEDIATE: a writer takes the lock up front instead
        # of failing to upgrade a read lock under concurrency.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a committed transaction survives a crash of the process (R48).
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute("PRAGMA busy_timeout=30000")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # A transaction begun on the DBAPI connection itself (modulestore/transaction.py) is joined.
        if not conn.connection.dbapi_connection.in_transaction:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"
