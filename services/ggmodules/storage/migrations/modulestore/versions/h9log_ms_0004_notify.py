"""modulestore: on PostgreSQL, every INSERT on ms_outbox sends NOTIFY ms_outbox at commit,
so another replica's commit wakes this one's readers at once
(storage/commits.py CommitListener). Nothing on SQLite.

Revision ID: h9log_ms_0004
Revises: h14_ms_0004
"""

from alembic import op

from ggmodules.storage.commits import drop_notify_trigger_sql, notify_trigger_sql

revision = "h9log_ms_0004"
down_revision = "h14_ms_0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in notify_trigger_sql("ms_outbox"):
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in drop_notify_trigger_sql("ms_outbox"):
            op.execute(statement)
