"""Fencing of engine writes, cluster-wide per-host guards, instance plans.

- ``masakari_notification_claims.fence``: bumped by every write an engine makes under its
  claim, so that each such write really changes the claim row. A no-op read lock does not
  conflict on Galera; a changed row does, against a concurrent takeover.
- ``masakari_host_guards``: one row per host, bumped by whatever must be serialised per host
  across API and engine processes (a report's duplicate check, a claim), for the same reason.
- ``masakari_instance_plans``: the state an instance was in before a recovery first touched
  it, and the last change the recovery asked Nova for, so that whichever engine finishes the
  recovery restores the same state and does not repeat a restart.

Revision ID: e7a2c9d41f03
Revises: b6e0c1a2f9d4
"""

import sqlalchemy as sa
from alembic import op

revision = "e7a2c9d41f03"
down_revision = "b6e0c1a2f9d4"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "masakari_notification_claims",
        sa.Column("fence", sa.BigInteger(), nullable=False, server_default="0"),
    )
    op.create_table(
        "masakari_host_guards",
        sa.Column("host_uuid", sa.String(36), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("host_uuid"),
    )
    op.create_table(
        "masakari_instance_plans",
        sa.Column("created_at", sa.DateTime(), nullable=True),
        sa.Column("notification_uuid", sa.String(36), nullable=False),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("vm_state", sa.String(255), nullable=True),
        sa.Column("stop_after", sa.Boolean(), nullable=False),
        sa.Column("last_action", sa.String(16), nullable=True),
        sa.PrimaryKeyConstraint("notification_uuid", "instance_uuid"),
    )


def downgrade() -> None:
    op.drop_table("masakari_instance_plans")
    op.drop_table("masakari_host_guards")
    with op.batch_alter_table("masakari_notification_claims") as batch:
        batch.drop_column("fence")
