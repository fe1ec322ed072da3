"""Schema migrations (Alembic), run when a service starts: one history per service under
`migrations/<service>/versions/`, each with its own version table, so services sharing one database migrate
independently.

A new schema change is a new revision in its service's `versions/` folder (`down_revision` = the previous
one); `tests/runtime/test_migrations.py` fails while the models and the migrations disagree. A database made
before migrations existed (tables present, no version table) is stamped at the baseline, not re-created.

A few objects are dialect-specific and cannot be described by the portable models (the archive's search
index: an FTS5 table on SQLite, a tsvector column on PostgreSQL). They are named in `UNMODELLED`, which
comparisons of models and database skip (`described_by_models`), and made by their revision alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import inspect
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


def migrate(engine: Engine, service: str) -> None:
    """Brings `service`'s tables in `engine` to the newest revision, in one transaction."""
    prefix, baseline = SERVICES[service]
    with engine.begin() as conn:
        config = Config()
        config.set_main_option("script_location", str(HERE / service))
        config.attributes.update(connection=conn, version_table=version_table(service))
        if _predates_migrations(conn, service, prefix):
            command.stamp(config, baseline)
        command.upgrade(config, "head")


def _predates_migrations(conn: Connection, service: str, prefix: str) -> bool:
    names = set(inspect(conn).get_table_names())
    return version_table(service) not in names and any(n.startswith(prefix) for n in names)
