"""An admin's changes: a link's reservable rate set through the API (NULL: the
topology's), and revoked tokens.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("links") as batch:
        batch.add_column(sa.Column("reservable_bps", sa.BigInteger, nullable=True))
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("revoked_ns", sa.BigInteger, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("revoked_ns")
    with op.batch_alter_table("links") as batch:
        batch.drop_column("reservable_bps")
