"""transfer: an exec may leave the FSM (ExecRequest.leave_fsm), journaled with the transfer.

Revision ID: tr_h4_0002
Revises: tr_0001
"""

import sqlalchemy as sa
from alembic import op

revision = "tr_h4_0002"
down_revision = "h1_tr_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tr_transfers") as batch:
        batch.add_column(sa.Column("leave_fsm", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("tr_transfers") as batch:
        batch.drop_column("leave_fsm")
