"""Failure detection without agents: the detector's lease and the evidence of each failure.

``masakari_detector_leases``: which engine runs the detector (one row per detector), with a
fencing token and a ``fence`` counter that every report of the detector changes.
``masakari_failure_evidence``: the signals each host failure was judged on (reports, Nova's
service state and heartbeat, host fencing) and the verdict. The reference never reads
either table.

Revision ID: f1c3e5a7b9d2
Revises: f2b4d6e8a0c1
"""

import sqlalchemy as sa
from alembic import op

revision = "f1c3e5a7b9d2"
down_revision = "f2b4d6e8a0c1"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "masakari_detector_leases",
        sa.Column("created_at", sa.DateTime(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("token", sa.Integer(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("fence", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("storm_until", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "masakari_failure_evidence",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("notification_uuid", sa.String(36), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("source", sa.String(255), nullable=False),
        sa.Column("failed", sa.Boolean(), nullable=True),
        sa.Column("value", sa.String(64), nullable=True),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("observed_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "failure_evidence_notification_idx", "masakari_failure_evidence", ["notification_uuid"]
    )


def downgrade() -> None:
    op.drop_index("failure_evidence_notification_idx", table_name="masakari_failure_evidence")
    op.drop_table("masakari_failure_evidence")
    op.drop_table("masakari_detector_leases")
