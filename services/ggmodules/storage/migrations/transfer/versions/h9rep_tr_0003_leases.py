"""transfer: leases. The replica driving a pending transfer (lease_owner) and until when its lease holds
(lease_expires_us, on the database's clock); an expired lease is taken over by another replica's scan.

Revision ID: h9rep_tr_0003
Revises: tr_h4_0002
"""

import sqlalchemy as sa
from alembic import op

revision = "h9rep_tr_0003"
down_revision = "tr_h4_0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tr_transfers") as batch:
        batch.add_column(sa.Column("lease_owner", sa.String(), nullable=False, server_default=""))
        batch.add_column(sa.Column("lease_expires_us", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("tr_transfers") as batch:
        batch.drop_column("lease_expires_us")
        batch.drop_column("lease_owner")
