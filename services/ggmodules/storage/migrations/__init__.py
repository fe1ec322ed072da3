"""Schema migrations (Alembic), run when a service starts: one history per service under
`migrations/<service>/versions/`, each with its own version table, so services sharing one database migrate
independently.

A new schema change is a new revision in its service's `versions/` folder (`down_revision` = the previous
one); `tests/runtime/test_migrations.py` fails while the models and the migrations disagree. A database made
before migrations existed (tables present, no version table) is stamped at the baseline, not re-created.

A few objects are dialect-specific and cannot be described by the portable models (the archive's search
index: an FTS5 table on SQLite, a tsvector column on PostgreSQL). They are named in `UNMODELLED`, which
comparisons of models and database skip (`described_by_models`), and made by their revision alone.

Replicas started together on one database migrate one at a time: on PostgreSQL each service's migration
runs under a transaction-scoped advisory lock of its own (`migration_lock_key`), so the first replica
migrates and the others wait, then find the schema at head; on SQLite the transaction's BEGIN IMMEDIATE
serializes them. `ggmodules migrate` runs the same migration without starting a service.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection, Engine

HERE = Path(__file__).resolve().parent
# service -> (table prefix, baseline revision)
SERVICES = {
    "modulestore": ("ms_", "ms_0001"),
    "registry": ("reg_", "reg_0001"),
    "transfer": ("tr_", "tr_0001"),
    "telemetry": ("tel_", "tel_0001"),
}


# Objects made by a revision, not by the models: tables (FTS5's shadow tables start with the same name),
# (table, column) pairs, and indexes.
UNMODELLED_TABLE_PREFIXES = ("ms_archive_fts",)
UNMODELLED_COLUMNS = frozenset({("ms_archive_threads", "search_vector")})
UNMODELLED_INDEXES = frozenset({"ix_ms_archive_threads_search"})


def described_by_models(name: str | None, type_: str, parent_names: Mapping[str, str | None]) -> bool:
    """Alembic's `include_name` hook: False for the objects in UNMODELLED."""
    if name is None:
        return True
    if type_ == "table":
        return not name.startswith(UNMODELLED_TABLE_PREFIXES)
    if type_ == "column":
        return (parent_names.get("table_name"), name) not in UNMODELLED_COLUMNS
    if type_ == "index":
        return name not in UNMODELLED_INDEXES
    return True


def version_table(service: str) -> str:
    return f"{SERVICES[service][0]}alembic_version"


def migration_lock_key(service: str) -> int:
    """The PostgreSQL advisory lock a service's migration holds: a stable signed 64-bit number."""
    digest = hashlib.sha256(f"ggmodules.migrate.{service}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def migrate(engine: Engine, service: str) -> str:
    """Brings `service`'s tables in `engine` to the newest revision, in one transaction, one replica at a
    time; returns the revision it found them at ("" when there were none)."""
    prefix, baseline = SERVICES[service]
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            # Another replica's migration may hold the lock for as long as it takes, and a revision's DDL
            # waits for live replicas' transactions on its tables: no lock_timeout here (storage/engine.py).
            conn.execute(text("SET LOCAL lock_timeout = 0"))
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": migration_lock_key(service)})
            # A revision that rewrites data works between its statements (bytes_tel_0005 compresses a
            # log): this transaction is not ended when it waits on Python (storage/engine.py).
            conn.execute(text("SET LOCAL idle_in_transaction_session_timeout = 0"))
        found = _revision(conn, service)
        config = Config()
        config.set_main_option("script_location", str(HERE / service))
        config.attributes.update(connection=conn, version_table=version_table(service))
        if _predates_migrations(conn, service, prefix):
            command.stamp(config, baseline)
        command.upgrade(config, "head")
    return found


def _predates_migrations(conn: Connection, service: str, prefix: str) -> bool:
    names = set(inspect(conn).get_table_names())
    return version_table(service) not in names and any(n.startswith(prefix) for n in names)


def head_revision(engine: Engine, service: str) -> str:
    """The revision `service`'s tables in `engine` are at ("" before the first migration)."""
    with engine.connect() as conn:
        return _revision(conn, service)


def _revision(conn: Connection, service: str) -> str:
    if version_table(service) not in set(inspect(conn).get_table_names()):
        return ""
    return str(conn.execute(text(f"SELECT version_num FROM {version_table(service)}")).scalar() or "")
