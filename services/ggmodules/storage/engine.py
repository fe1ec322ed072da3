"""Engines built from a URL: a SQLite file by default (WAL), PostgreSQL with a `postgresql+psycopg://` URL.

On PostgreSQL each replica keeps a pool of `pool_size` connections and opens up to `max_overflow` more under
load (`--pool-size`, `--pool-max-overflow`). Every replica of every service sharing one server counts
against its `max_connections`: `pool_capacity` says how many such replicas fit, and past that a pooler
(PgBouncer in transaction mode) belongs in front of the server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Engine, make_url
from sqlmodel import create_engine

# Seconds to wait for a PostgreSQL connection before calling the database unreachable (health, pools).
CONNECT_TIMEOUT_SECONDS = 5


def make_engine(url: str, pool_size: int = 10, max_overflow: int = 10) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    connect_args: dict[str, Any] = {}
    if parsed.get_driver_name() == "psycopg":
        connect_args["connect_timeout"] = CONNECT_TIMEOUT_SECONDS
    return create_engine(
        url, pool_size=pool_size, max_overflow=max_overflow, pool_pre_ping=True, connect_args=connect_args
    )


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
