"""An admin's changes: a link's reservable rate set through the API (NULL: the
topology's), and revoked tokens; the log of booking changes per link version.

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
    op.create_table(
        "booking_log",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("link_id", sa.String(200), nullable=False),
        sa.Column("version", sa.BigInteger, nullable=False),
        sa.Column("sign", sa.Integer, nullable=False),
        sa.Column("profile", sa.JSON, nullable=False),
        sa.Column("end_ns", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_booking_log_link_version", "booking_log", ["link_id", "version"])


def downgrade() -> None:
    op.drop_table("booking_log")
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("revoked_ns")
    with op.batch_alter_table("links") as batch:
        batch.drop_column("reservable_bps")
