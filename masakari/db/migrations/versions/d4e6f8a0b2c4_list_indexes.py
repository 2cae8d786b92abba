"""Indexes for lists and periodic scans on big notification and vmove tables.

The reference's ``notifications`` and ``vmoves`` have no index but their uuids: every list
(live rows, newest first by ``created_at, id``, filtered by status, host or generation
time) read and sorted the whole table, and a notification's vmoves were a full scan. Each
index below leads with a list's equality filters and ends with its order, so a page is a
range of the index read in order and the LIMIT stops it. The reference never names them:
it works on a database that has them, and ``db sync 13adff5efb9a`` drops them.

Revision ID: d4e6f8a0b2c4
Revises: a3d5f7c9e1b2
"""

from alembic import op

revision = "d4e6f8a0b2c4"
down_revision = "a3d5f7c9e1b2"
branch_labels = None
depends_on = None

# name: (table, columns); the same as in masakari.db.models.
INDEXES = {
    # The default order of every list, and of a page after a marker.
    "masakari_notifications_created_idx": ("notifications", ("deleted", "created_at", "id")),
    # The API's status filter and the engines' retry and expiry scans.
    "masakari_notifications_status_idx": (
        "notifications",
        ("status", "deleted", "created_at", "id"),
    ),
    # The API's host filter, the duplicate check of a new notification, and whether a
    # host is busy for the engine's queue.
    "masakari_notifications_source_host_idx": (
        "notifications",
        ("source_host_uuid", "deleted", "created_at", "id"),
    ),
    # generated-since, and lists sorted by generated_time.
    "masakari_notifications_generated_idx": (
        "notifications",
        ("deleted", "generated_time", "created_at", "id"),
    ),
    "masakari_vmoves_notification_idx": ("vmoves", ("notification_uuid",)),
}


def upgrade() -> None:
    for name, (table, columns) in INDEXES.items():
        op.create_index(name, table, list(columns))


def downgrade() -> None:
    for name, (table, _) in INDEXES.items():
        op.drop_index(name, table_name=table)
