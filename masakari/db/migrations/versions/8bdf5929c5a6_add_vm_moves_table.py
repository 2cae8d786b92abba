"""The reference's vmoves table.

Revision ID: 8bdf5929c5a6
Revises: 8f848eb45d03
"""

import sqlalchemy as sa
from alembic import op
from oslo_db.sqlalchemy import types as oslo_types

revision = "8bdf5929c5a6"
down_revision = "8f848eb45d03"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "vmoves",
        sa.Column("created_at", sa.DateTime(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.Column("deleted", oslo_types.SoftDeleteInteger(), nullable=True),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("notification_uuid", sa.String(36), nullable=False),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("instance_name", sa.String(255), nullable=False),
        sa.Column("source_host", sa.String(255), nullable=True),
        sa.Column("dest_host", sa.String(255), nullable=True),
        sa.Column("start_time", sa.DateTime(), nullable=True),
        sa.Column("end_time", sa.DateTime(), nullable=True),
        sa.Column("type", sa.String(36), nullable=True),
        sa.Column("status", sa.String(255), nullable=True),
        sa.Column("message", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("uuid", name="uniq_vmove0uuid"),
    )
