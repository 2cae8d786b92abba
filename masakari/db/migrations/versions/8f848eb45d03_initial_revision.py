"""The reference's initial schema: segments, hosts and notifications.

Revision ID: 8f848eb45d03
Revises:
"""

import sqlalchemy as sa
from alembic import op
from oslo_db.sqlalchemy import types as oslo_types

revision = "8f848eb45d03"
down_revision = None
branch_labels = None
depends_on = None


def _common() -> list[sa.Column]:
    return [
        sa.Column("created_at", sa.DateTime(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.Column("deleted", oslo_types.SoftDeleteInteger(), nullable=True),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "failover_segments",
        *_common(),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("service_type", sa.String(255), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column(
            "recovery_method",
            sa.Enum(
                "auto", "reserved_host", "auto_priority", "rh_priority", name="recovery_methods"
            ),
            nullable=False,
        ),
        sa.Column("enabled", sa.Boolean(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", "deleted", name="uniq_segment0name0deleted"),
        sa.UniqueConstraint("uuid", name="uniq_segments0uuid"),
    )
    op.create_index("segments_service_type_idx", "failover_segments", ["service_type"])
    op.create_table(
        "notifications",
        *_common(),
        sa.Column("notification_uuid", sa.String(36), nullable=False),
        sa.Column("generated_time", sa.DateTime(), nullable=False),
        sa.Column("source_host_uuid", sa.String(36), nullable=False),
        sa.Column("type", sa.String(36), nullable=False),
        sa.Column("payload", sa.Text(), nullable=True),
        sa.Column(
            "status",
            sa.Enum(
                "new",
                "running",
                "error",
                "failed",
                "ignored",
                "finished",
                name="notification_status",
            ),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("notification_uuid", name="uniq_notification0uuid"),
    )
    op.create_table(
        "hosts",
        *_common(),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("reserved", sa.Boolean(), nullable=True),
        sa.Column("type", sa.String(255), nullable=False),
        sa.Column("control_attributes", sa.Text(), nullable=False),
        sa.Column("failover_segment_id", sa.String(36), nullable=False),
        sa.Column("on_maintenance", sa.Boolean(), nullable=True),
        sa.ForeignKeyConstraint(["failover_segment_id"], ["failover_segments.uuid"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", "deleted", name="uniq_host0name0deleted"),
        sa.UniqueConstraint("uuid", name="uniq_host0uuid"),
    )
    op.create_index("hosts_type_idx", "hosts", ["type"])
