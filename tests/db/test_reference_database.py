"""A database made by masakari 22.0.0 is taken over unchanged, and can be handed back."""

from __future__ import annotations

import os
import shutil
import sqlite3

import pytest
import sqlalchemy as sa

from masakari.db import migration, models
from masakari.db.database import Database

REFERENCE_DB = os.path.join(os.path.dirname(__file__), "data", "reference-22.0.0.db")
REFERENCE_TABLES = ("failover_segments", "hosts", "notifications", "vmoves")


def _snapshot(path: str) -> dict[str, object]:
    """Schema text and every row of the reference's tables."""
    with sqlite3.connect(path) as conn:
        marks = ",".join("?" * len(REFERENCE_TABLES))
        schema = dict(
            conn.execute(
                f"SELECT name, sql FROM sqlite_master WHERE tbl_name IN ({marks})", REFERENCE_TABLES
            )
        )
        rows = {
            t: conn.execute(f"SELECT * FROM {t} ORDER BY id").fetchall() for t in REFERENCE_TABLES
        }
    return {"schema": schema, "rows": rows}


@pytest.fixture
def reference_db(tmp_path) -> str:
    path = str(tmp_path / "reference.db")
    shutil.copy(REFERENCE_DB, path)
    return path


def test_sync_applies_only_the_projects_migrations(reference_db: str) -> None:
    before = _snapshot(reference_db)
    db = Database.from_url(f"sqlite:///{reference_db}")
    try:
        assert migration.current(db.engine) == migration.REFERENCE_HEAD
        migration.upgrade(db.engine)
        assert migration.current(db.engine) == migration.head()
        tables = set(sa.inspect(db.engine).get_table_names())
    finally:
        db.dispose()
    assert {
        "masakari_recovery_tasks",
        "masakari_notification_claims",
        "masakari_instance_locks",
    } <= tables
    assert _snapshot(reference_db) == before


def test_reference_rows_read_through_the_models(reference_db: str) -> None:
    db = Database.from_url(f"sqlite:///{reference_db}")
    try:
        migration.upgrade(db.engine)
        with db.reader() as session:
            hosts = session.scalars(
                sa.select(models.Host).where(models.Host.deleted == 0).order_by(models.Host.id)
            ).all()
            notification = session.scalars(sa.select(models.Notification)).one()
            vmove = session.scalars(sa.select(models.VMove)).one()
    finally:
        db.dispose()
    assert [(h.name, h.reserved, h.on_maintenance) for h in hosts] == [
        ("compute-1", False, True),
        ("compute-2", True, False),
    ]
    assert hosts[0].failover_segment.name == "seg-1"
    assert notification.generated_time.microsecond == 123456
    assert notification.status == "finished"
    assert vmove.notification_uuid == notification.notification_uuid


def test_sync_back_to_reference_head_drops_only_project_tables(reference_db: str) -> None:
    before = _snapshot(reference_db)
    db = Database.from_url(f"sqlite:///{reference_db}")
    try:
        migration.upgrade(db.engine)
        migration.upgrade(db.engine, migration.REFERENCE_HEAD)
        assert migration.current(db.engine) == migration.REFERENCE_HEAD
        tables = set(sa.inspect(db.engine).get_table_names())
    finally:
        db.dispose()
    assert tables == set(REFERENCE_TABLES) | {"masakari_alembic_version"}
    assert _snapshot(reference_db) == before


def test_going_back_past_the_reference_head_is_refused(reference_db: str) -> None:
    from masakari import exception

    db = Database.from_url(f"sqlite:///{reference_db}")
    try:
        with pytest.raises(exception.InvalidInput):
            migration.upgrade(db.engine, "8bdf5929c5a6")
        assert migration.current(db.engine) == migration.REFERENCE_HEAD
    finally:
        db.dispose()
