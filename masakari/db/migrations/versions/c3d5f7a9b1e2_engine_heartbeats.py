"""Engine liveness: one row per running masakari-engine, stamped every claim renewal round.

The reference never reads this table, so it keeps working on the schema.

Revision ID: c3d5f7a9b1e2
Revises: c3f1d8a7b2e5
"""

import sqlalchemy as sa
from alembic import op

revision = "c3d5f7a9b1e2"
down_revision = "c3f1d8a7b2e5"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "masakari_engine_heartbeats",
        sa.Column("engine", sa.String(255), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("engine"),
    )


def downgrade() -> None:
    op.drop_table("masakari_engine_heartbeats")
