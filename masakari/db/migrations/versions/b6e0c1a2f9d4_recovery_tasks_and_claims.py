"""The project's own tables: recovery progress, engine claims, instance locks.

Added after the reference's head so that the reference's code still runs on the result
(it ignores tables it does not know): a rollback path for operators.

Revision ID: b6e0c1a2f9d4
Revises: 13adff5efb9a
"""

import sqlalchemy as sa
from alembic import op

revision = "b6e0c1a2f9d4"
down_revision = "13adff5efb9a"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "masakari_recovery_tasks",
        sa.Column("created_at", sa.DateTime(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("notification_uuid", sa.String(36), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("progress", sa.Float(), nullable=False),
        sa.Column("details", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "notification_uuid",
            "attempt",
            "position",
            name="uniq_recovery_task0attempt0position",
        ),
    )
    op.create_index(
        "recovery_tasks_notification_idx", "masakari_recovery_tasks", ["notification_uuid"]
    )
    op.create_table(
        "masakari_notification_claims",
        sa.Column("created_at", sa.DateTime(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("notification_uuid", sa.String(36), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("notification_uuid"),
    )
    op.create_table(
        "masakari_instance_locks",
        sa.Column("created_at", sa.DateTime(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("notification_uuid", sa.String(36), nullable=False),
        sa.PrimaryKeyConstraint("instance_uuid"),
    )
    op.create_index(
        "instance_locks_notification_idx", "masakari_instance_locks", ["notification_uuid"]
    )


def downgrade() -> None:
    # The way back to the reference's head, for an operator who rolls back to the reference:
    # its tables are untouched, so dropping ours is all it takes.
    op.drop_index("instance_locks_notification_idx", table_name="masakari_instance_locks")
    op.drop_table("masakari_instance_locks")
    op.drop_table("masakari_notification_claims")
    op.drop_index("recovery_tasks_notification_idx", table_name="masakari_recovery_tasks")
    op.drop_table("masakari_recovery_tasks")
