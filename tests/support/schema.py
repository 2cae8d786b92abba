"""Facts of the schema the database tests share: the project's own indexes on the reference's
tables, and a database made by masakari 22.0.0."""

from __future__ import annotations

from pathlib import Path

# The project's indexes on the reference's tables (migration d4e6f8a0b2c4): name -> table.
PROJECT_INDEXES = {
    "masakari_notifications_created_idx": "notifications",
    "masakari_notifications_status_idx": "notifications",
    "masakari_notifications_source_host_idx": "notifications",
    "masakari_notifications_generated_idx": "notifications",
    "masakari_vmoves_notification_idx": "vmoves",
}

# A SQLite database masakari 22.0.0 made (tests/db/data).
REFERENCE_DB = str(Path(__file__).resolve().parents[1] / "db" / "data" / "reference-22.0.0.db")
