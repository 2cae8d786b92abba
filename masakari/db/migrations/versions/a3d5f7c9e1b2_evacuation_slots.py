"""Evacuation slots: the cap on evacuations in flight against Nova, across engines.

- ``masakari_evacuation_slots``: one row per slot number below ``max_evacuations_in_flight``
  that an evacuation holds or held. A row counts as held while the claim it names (owner,
  attempt) lives; a dead row is taken over by a conditional update, a missing one inserted.

Revision ID: a3d5f7c9e1b2
Revises: c3d5f7a9b1e2
"""

import sqlalchemy as sa
from alembic import op

revision = "a3d5f7c9e1b2"
down_revision = "c3d5f7a9b1e2"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "masakari_evacuation_slots",
        sa.Column("slot", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("notification_uuid", sa.String(36), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("instance_uuid", sa.String(36), nullable=False),
        sa.Column("taken_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("slot"),
    )


def downgrade() -> None:
    op.drop_table("masakari_evacuation_slots")
