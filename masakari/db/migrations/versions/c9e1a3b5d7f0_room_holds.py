"""Failover room held in Placement: what masakari added to each inventory's reserved amount.

``masakari_room_holds``: one row per Placement inventory (provider, resource class) whose
``reserved`` amount masakari raised to keep failover room (``[capacity] hold_room``), with
the amount it found there, what it added and what it wrote. ``masakari_room_hold_segments``:
one row per segment, the row a holding engine and a releasing recovery both change, and the
recovery the room is released for. The project's own tables: the reference never reads them.

Revision ID: c9e1a3b5d7f0
Revises: b8d0f2a4c6e9
"""

import sqlalchemy as sa
from alembic import op

revision = "c9e1a3b5d7f0"
down_revision = "b8d0f2a4c6e9"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "masakari_room_holds",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("segment_uuid", sa.String(36), nullable=False),
        sa.Column("host_name", sa.String(255), nullable=False),
        sa.Column("provider_uuid", sa.String(36), nullable=False),
        sa.Column("resource_class", sa.String(255), nullable=False),
        sa.Column("base_reserved", sa.Integer(), nullable=False),
        sa.Column("held", sa.Integer(), nullable=False),
        sa.Column("written", sa.Integer(), nullable=True),
        sa.Column("pending", sa.Integer(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("provider_uuid", "resource_class", name="uniq_room_hold"),
    )
    op.create_table(
        "masakari_room_hold_segments",
        sa.Column("segment_uuid", sa.String(36), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("released_for", sa.String(36), nullable=True),
        sa.Column("released_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("segment_uuid"),
    )


def downgrade() -> None:
    op.drop_table("masakari_room_hold_segments")
    op.drop_table("masakari_room_holds")
