"""The failure detector's shadow mode: what it would have reported, and its gates' decision.

``masakari_detector_shadow_reports``: one row per host the detector in shadow mode
(``[detection] mode = shadow``) found down and would have reported, held or deferred, and
again when that decision changes for the same failure. The project's own table: the
reference has no detector and never reads it.

Revision ID: a7c9e1b3d5f8
Revises: f1c3e5a7b9d2
"""

import sqlalchemy as sa
from alembic import op

revision = "a7c9e1b3d5f8"
down_revision = "f1c3e5a7b9d2"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "masakari_detector_shadow_reports",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("detector", sa.String(64), nullable=False),
        sa.Column("engine", sa.String(255), nullable=False),
        sa.Column("host_name", sa.String(255), nullable=False),
        sa.Column("segment_uuid", sa.String(36), nullable=False),
        sa.Column("decision", sa.String(16), nullable=False),
        sa.Column("gate", sa.String(16), nullable=True),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("observed_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "detector_shadow_reports_host_idx",
        "masakari_detector_shadow_reports",
        ["host_name", "id"],
    )


def downgrade() -> None:
    op.drop_index("detector_shadow_reports_host_idx", table_name="masakari_detector_shadow_reports")
    op.drop_table("masakari_detector_shadow_reports")
