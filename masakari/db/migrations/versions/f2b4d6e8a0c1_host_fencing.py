"""Host (power) fencing: the evidence of every fence attempt, kdump messages, driver checks.

- ``masakari_fence_attempts``: one row per call an engine made to prove a failed host dead
  (power off, status reads until off, power on, a kdump wait, an operator's release),
  written before the call and completed after it, so that an engine taking a recovery over
  knows what was sent.
- ``masakari_kdump_messages``: fence_kdump messages the engines' listeners received.
- ``masakari_fence_checks``: the readiness doctor's last check of each host's drivers.

The reference never reads these tables. Times carry microseconds (MariaDB's DATETIME(6)):
a fence is a matter of seconds.

Revision ID: f2b4d6e8a0c1
Revises: d4e6f8a0b2c4
"""

import datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision = "f2b4d6e8a0c1"
down_revision = "d4e6f8a0b2c4"
branch_labels = None
depends_on = None


def _time() -> sa.types.TypeEngine[datetime.datetime]:
    return sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql")


def upgrade() -> None:
    op.create_table(
        "masakari_fence_attempts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("notification_uuid", sa.String(36), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("host_name", sa.String(255), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("driver", sa.String(255), nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("result", sa.String(16), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("started_at", _time(), nullable=False),
        sa.Column("duration", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "fence_attempts_notification_idx", "masakari_fence_attempts", ["notification_uuid"]
    )
    op.create_table(
        "masakari_kdump_messages",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("source_address", sa.String(255), nullable=False),
        sa.Column("received_at", _time(), nullable=False),
        sa.Column("engine", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "kdump_messages_source_idx",
        "masakari_kdump_messages",
        ["source_address", "received_at"],
    )
    op.create_table(
        "masakari_fence_checks",
        sa.Column("host_name", sa.String(255), nullable=False),
        sa.Column("position", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("driver", sa.String(255), nullable=False),
        sa.Column("result", sa.String(16), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("checked_at", _time(), nullable=False),
        sa.Column("duration", sa.Float(), nullable=True),
        sa.Column("engine", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("host_name", "position"),
    )


def downgrade() -> None:
    op.drop_table("masakari_fence_checks")
    op.drop_index("kdump_messages_source_idx", table_name="masakari_kdump_messages")
    op.drop_table("masakari_kdump_messages")
    op.drop_index("fence_attempts_notification_idx", table_name="masakari_fence_attempts")
    op.drop_table("masakari_fence_attempts")
