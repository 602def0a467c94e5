"""The first schema: links, reservations, bookings, events, tokens.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table("links", sa.Column("id", sa.String(200), primary_key=True),
                    sa.Column("version", sa.BigInteger, nullable=False))  # fmt: skip
    op.create_table(
        "reservations",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("src", sa.String(200), nullable=False),
        sa.Column("dst", sa.String(200), nullable=False),
        sa.Column("path", sa.JSON, nullable=False),
        sa.Column("start_ns", sa.BigInteger, nullable=False),
        sa.Column("end_ns", sa.BigInteger, nullable=False),
        sa.Column("rate_bps", sa.BigInteger, nullable=False),
        sa.Column("profile", sa.JSON, nullable=False),
        sa.Column("policing", sa.String(20), nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=True),
        sa.Column("deadline_ns", sa.BigInteger, nullable=True),
        sa.Column("margin", sa.Float, nullable=True),
        sa.Column("hold_expires_ns", sa.BigInteger, nullable=True),
        sa.Column("description", sa.Text, nullable=True),
        sa.Column("created_ns", sa.BigInteger, nullable=False),
        sa.Column("updated_ns", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_reservations_state_hold", "reservations", ["state", "hold_expires_ns"])
    op.create_index("ix_reservations_owner", "reservations", ["owner"])
    op.create_table(
        "bookings",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("reservation_id", sa.Integer, sa.ForeignKey("reservations.id"), nullable=False),
        sa.Column("link_id", sa.String(200), sa.ForeignKey("links.id"), nullable=False),
        sa.Column("profile", sa.JSON, nullable=False),
        sa.Column("end_ns", sa.BigInteger, nullable=False),
    )
    op.create_index("ix_bookings_reservation_id", "bookings", ["reservation_id"])
    op.create_index("ix_bookings_link_id", "bookings", ["link_id"])
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("reservation_id", sa.Integer, sa.ForeignKey("reservations.id"), nullable=False),
        sa.Column("action", sa.String(20), nullable=False),
        sa.Column("who", sa.String(200), nullable=False),
        sa.Column("at_ns", sa.BigInteger, nullable=False),
        sa.Column("old_state", sa.String(20), nullable=True),
        sa.Column("new_state", sa.String(20), nullable=False),
        sa.Column("old_version", sa.Integer, nullable=True),
        sa.Column("new_version", sa.Integer, nullable=False),
        sa.Column("detail", sa.JSON, nullable=True),
    )
    op.create_index("ix_events_reservation_id", "events", ["reservation_id"])
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("role", sa.String(20), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False, unique=True),
        sa.Column("created_ns", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    for table in ("tokens", "events", "bookings", "reservations", "links"):
        op.drop_table(table)
