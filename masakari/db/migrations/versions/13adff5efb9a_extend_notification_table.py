"""The reference's notification segment and message columns.

Revision ID: 13adff5efb9a
Revises: 8bdf5929c5a6
"""

import sqlalchemy as sa
from alembic import op

revision = "13adff5efb9a"
down_revision = "8bdf5929c5a6"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("notifications") as batch:
        batch.add_column(sa.Column("failover_segment_uuid", sa.String(36)))
        batch.add_column(sa.Column("message", sa.Text()))
