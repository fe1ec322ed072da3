"""The Alembic environment every service's migrations run in: the connection and version table that
`ggmodules.storage.migrations.migrate` hands over."""

from __future__ import annotations

from alembic import context


def run() -> None:
    attributes = context.config.attributes
    context.configure(connection=attributes["connection"], version_table=attributes["version_table"])
    with context.begin_transaction():
        context.run_migrations()
