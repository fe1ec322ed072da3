"""registry: on PostgreSQL, every INSERT on reg_outbox sends NOTIFY reg_outbox at commit,
so another replica's commit wakes this one's readers at once
(storage/commits.py CommitListener). Nothing on SQLite.

Revision ID: h9log_reg_0003
Revises: h14_reg_0003
"""

from alembic import op

from ggmodules.storage.commits import drop_notify_trigger_sql, notify_trigger_sql

revision = "h9log_reg_0003"
down_revision = "h14_reg_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in notify_trigger_sql("reg_outbox"):
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in drop_notify_trigger_sql("reg_outbox"):
            op.execute(statement)
