"""Fire drills: the drills operators and the schedule asked for, and each one's phases.

- ``masakari_drills``: one row per drill, the engines' work queue (claimed with a lease and
  a fencing token, as notifications are); ``active_host`` is unique while a drill of the
  host is new or running.
- ``masakari_drill_phases``: each phase's start, end, result and prediction.

The project's own tables: the reference never reads them. Times carry microseconds.

Revision ID: b8d0f2a4c6e9
Revises: a7c9e1b3d5f8
"""

import datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "b8d0f2a4c6e9"
down_revision = "a7c9e1b3d5f8"
branch_labels = None
depends_on = None


def _time() -> sa.types.TypeEngine[datetime.datetime]:
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")


def upgrade() -> None:
    op.create_table(
        "masakari_drills",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("uuid", sa.String(36), nullable=False),
        sa.Column("segment_uuid", sa.String(36), nullable=False),
        sa.Column("host_uuid", sa.String(36), nullable=False),
        sa.Column("host_name", sa.String(255), nullable=False),
        sa.Column("active_host", sa.String(36), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("no_fence", sa.Boolean(), nullable=False),
        sa.Column("allow_untagged", sa.Boolean(), nullable=False),
        sa.Column("move_back", sa.Boolean(), nullable=False),
        sa.Column("requested_by", sa.String(16), nullable=False),
        sa.Column("owner", sa.String(255), nullable=True),
        sa.Column("token", sa.Integer(), nullable=False),
        sa.Column("fence", sa.Integer(), nullable=False),
        sa.Column("lease_expires_at", _time(), nullable=True),
        sa.Column("failure_reason", sa.Text(), nullable=True),
        sa.Column("report", sa.Text(), nullable=True),
        sa.Column("created_at", _time(), nullable=False),
        sa.Column("started_at", _time(), nullable=True),
        sa.Column("ended_at", _time(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("uuid", name="uniq_drill0uuid"),
        sa.UniqueConstraint("active_host", name="uniq_drill0active_host"),
    )
    op.create_index("drills_segment_idx", "masakari_drills", ["segment_uuid", "id"])
    op.create_index("drills_status_idx", "masakari_drills", ["status", "id"])
    op.create_table(
        "masakari_drill_phases",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("drill_uuid", sa.String(36), nullable=False),
        sa.Column("name", sa.String(32), nullable=False),
        sa.Column("result", sa.String(16), nullable=False),
        sa.Column("token", sa.Integer(), nullable=False),
        sa.Column("started_at", _time(), nullable=False),
        sa.Column("ended_at", _time(), nullable=True),
        sa.Column("predicted_seconds", sa.Float(), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("drill_phases_drill_idx", "masakari_drill_phases", ["drill_uuid", "id"])


def downgrade() -> None:
    op.drop_index("drill_phases_drill_idx", table_name="masakari_drill_phases")
    op.drop_table("masakari_drill_phases")
    op.drop_index("drills_status_idx", table_name="masakari_drills")
    op.drop_index("drills_segment_idx", table_name="masakari_drills")
    op.drop_table("masakari_drills")
