"""transfer: an index on completed_us, by which the journal's ended transfers are pruned past the retention
window (storage/transfer/repository.py prune_ended) without reading every row.

Revision ID: tr_0004
Revises: h9rep_tr_0003
"""

from alembic import op

revision = "tr_0004"
down_revision = "h9rep_tr_0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(op.f("ix_tr_transfers_completed_us"), "tr_transfers", ["completed_us"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_tr_transfers_completed_us"), table_name="tr_transfers")
