"""Held notifications, and the reason of each notification's last failed attempt.

``masakari_notification_holds``: a row per notification an operator must release or cancel.

A table of its own rather than a new value of ``notifications.status``: that column is the
reference's native enum, and altering it would make the schema differ from the reference's.
A held notification keeps status ``new`` in the reference's table; the engine skips every
notification that has a row here without ``released_at``, and takes a released one at its
next sweep, however old its id.

``masakari_notification_failures``: why the last failed attempt of a notification failed
(shown as ``failure_reason`` from API microversion 1.4).

Revision ID: c3f1d8a7b2e5
Revises: e7a2c9d41f03
"""

import sqlalchemy as sa
from alembic import op

revision = "c3f1d8a7b2e5"
down_revision = "e7a2c9d41f03"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "masakari_notification_holds",
        sa.Column("created_at", sa.DateTime(), nullable=True),
        sa.Column("notification_uuid", sa.String(36), nullable=False),
        sa.Column("reason", sa.String(255), nullable=False),
        sa.Column("released_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("notification_uuid"),
    )
    op.create_table(
        "masakari_notification_failures",
        sa.Column("updated_at", sa.DateTime(), nullable=True),
        sa.Column("notification_uuid", sa.String(36), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("notification_uuid"),
    )


def downgrade() -> None:
    op.drop_table("masakari_notification_failures")
    op.drop_table("masakari_notification_holds")
