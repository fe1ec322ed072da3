"""Schema migrations (Alembic), run when a service starts: one history per service under
`migrations/<service>/versions/`, each with its own version table, so services sharing one database migrate
independently.

A new schema change is a new revision in its service's `versions/` folder (`down_revision` = the previous
one); `tests/runtime/test_migrations.py` fails while the models and the migrations disagree. A database made
before migrations existed (tables present, no version table) is stamped at the baseline, not re-created.
"""

from __future__ import annotations

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
