"""Quarantine: degraded hosts taken out of service and emptied before they fail.

``masakari_quarantines``: one row per quarantine of a host (asked by an operator, an
Alertmanager alert, the host's Redfish health or its storage-path loss), with its status and
the engine running it. ``masakari_quarantine_moves``: each instance of the host, and what
became of it. The project's own tables: the reference never reads them.

Revision ID: d1f3a5c7e9b2
Revises: c9e1a3b5d7f0
"""

import sqlalchemy as sa
from alembic import op

revision = "d1f3a5c7e9b2"
down_revision = "c9e1a3b5d7f0"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "masakari_quarantines",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("host_uuid", sa.String(36), nullable=False),
        sa.Column("host_name", sa.String(255), nullable=False),
        sa.Column("segment_uuid", sa.String(36), nullable=False),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("signal", sa.String(255), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("hold_reason", sa.Text(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("owner", sa.String(255), nullable=True),
        sa.Column("lease_until", sa.DateTime(), nullable=True),
        sa.Column("signal_ended_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=True),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("uuid"),
    )
    op.create_index("quarantines_host_idx", "masakari_quarantines", ["host_uuid", "status"])
    op.create_table(
        "masakari_quarantine_moves",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("quarantine_uuid", sa.String(36), nullable=False),
        sa.Column("server_id", sa.String(36), nullable=False),
        sa.Column("server_name", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("target", sa.String(255), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("sent_at", sa.DateTime(), nullable=True),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("quarantine_uuid", "server_id", name="uniq_quarantine_move"),
    )


def downgrade() -> None:
    op.drop_table("masakari_quarantine_moves")
    op.drop_index("quarantines_host_idx", table_name="masakari_quarantines")
    op.drop_table("masakari_quarantines")
