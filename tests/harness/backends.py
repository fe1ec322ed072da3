"""The databases tests run over: `BACKENDS` (SQLite always, PostgreSQL when a URL is given) and a fresh
database per service and test session, dropped when done."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

POSTGRES_URL = os.environ.get("GGMODULES_TEST_POSTGRES_URL", "")
NO_POSTGRES = "GGMODULES_TEST_POSTGRES_URL not set: the PostgreSQL case is not run"
BACKENDS = [
    pytest.param("sqlite", id="sqlite"),
    pytest.param(
        "postgres", id="postgres", marks=pytest.mark.skipif(not POSTGRES_URL, reason=NO_POSTGRES)
    ),
]
# For what only PostgreSQL has (concurrent writers, its visibility rules): reported as skipped without a URL.
POSTGRES_ONLY = BACKENDS[1:]
needs_postgres = pytest.mark.skipif(not POSTGRES_URL, reason=NO_POSTGRES)


def new_database_url(backend: str, service: str, directory: Path, postgres_url: str = "") -> str:
    """A database no other test session uses: a new SQLite file, or a new PostgreSQL database created
    through `postgres_url` (default: GGMODULES_TEST_POSTGRES_URL)."""
    if backend == "sqlite":
        return f"sqlite:///{directory / f'{service}-{uuid.uuid4().hex[:8]}.db'}"
    server_url = postgres_url or POSTGRES_URL
    name = f"ggm_test_{service}_{uuid.uuid4().hex[:10]}"
    _admin(server_url, f'CREATE DATABASE "{name}"')
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_database(url: str) -> None:
    parsed = make_url(url)
    if parsed.get_backend_name() == "postgresql":
        _admin(
            parsed.set(database="postgres").render_as_string(hide_password=False),
            f'DROP DATABASE IF EXISTS "{parsed.database}" WITH (FORCE)',
        )


def _admin(server_url: str, statement: str) -> None:
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(statement))
    finally:
        admin.dispose()


def psycopg_dsn(url: str, database: str = "") -> str:
    """A SQLAlchemy PostgreSQL URL as psycopg connects to it (another `database` on the same server if
    given): for what a test does on the server beside the services."""
    parsed = make_url(url).set(drivername="postgresql")
    return (parsed.set(database=database) if database else parsed).render_as_string(hide_password=False)


def end_sessions(url: str) -> int:
    """pg_terminate_backend for every session on `url`'s database, as a failover or an operator ends them:
    how many were ended."""
    import psycopg  # only the PostgreSQL tests need it

    with psycopg.connect(psycopg_dsn(url, "postgres"), autocommit=True) as admin:
        ended = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s",
            (make_url(url).database,),
        ).fetchone()
    return int(ended[0]) if ended is not None else 0
