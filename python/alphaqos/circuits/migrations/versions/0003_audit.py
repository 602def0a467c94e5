"""The admin's changes as audit events: a link's reservable share, a token
created or revoked (who, when, old and new value).

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("who", sa.String(200), nullable=False),
        sa.Column("at_ns", sa.BigInteger, nullable=False),
        sa.Column("target", sa.String(200), nullable=False),
        sa.Column("old", sa.JSON, nullable=True),
        sa.Column("new", sa.JSON, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("audit")
