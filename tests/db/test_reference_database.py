"""A database made by masakari 22.0.0 is taken over unchanged, and can be handed back."""

from __future__ import annotations

import os
import shutil
import sqlite3

import pytest
import sqlalchemy as sa

from masakari.db import migration, models
from masakari.db.database import Database
from tests.support.schema import PROJECT_INDEXES, REFERENCE_DB

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
    after = _snapshot(reference_db)
    schema = after["schema"]
    assert isinstance(schema, dict)
    # The project's indexes on the reference's tables are the only change to them.
    assert {name: schema.pop(name).split(" ON ")[1].split(" ")[0] for name in PROJECT_INDEXES} == (
        PROJECT_INDEXES
    )
    assert after == before


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


# The other direction needs the reference itself: set MASAKARI_REF_PYTHON to the Python of a
# virtualenv with masakari==22.0.0 (docs/database.md says how).
REF_PYTHON = os.environ.get("MASAKARI_REF_PYTHON")

READ_WITH_THE_REFERENCE = """
import json, sys
import masakari.conf
from masakari import context
from masakari.db import api as db
conf = masakari.conf.CONF
conf(["--config-file", sys.argv[1]], project="masakari")
ctx = context.get_admin_context()
print(json.dumps({
    "segments": [s.name for s in db.failover_segment_get_all_by_filters(ctx)],
    "hosts": [h.name for h in db.host_get_all_by_filters(ctx)],
    "notifications": [n.status for n in db.notifications_get_all_by_filters(ctx)],
}))
"""


@pytest.mark.skipif(not REF_PYTHON, reason="MASAKARI_REF_PYTHON (the reference's Python) unset")
def test_the_reference_reads_a_database_made_here(tmp_path) -> None:
    import json
    import subprocess

    path = tmp_path / "ours.db"
    db = Database.from_url(f"sqlite:///{path}")
    try:
        migration.upgrade(db.engine)
        with db.writer() as session:
            session.add(
                models.Segment(
                    uuid="s", name="seg", service_type="compute", recovery_method="rh_priority"
                )
            )
            session.flush()
            session.add(
                models.Host(
                    uuid="h",
                    name="compute-1",
                    type="COMPUTE",
                    control_attributes="SSH",
                    failover_segment_id="s",
                )
            )
            session.add(
                models.Notification(
                    notification_uuid="n",
                    generated_time=models.utcnow(),
                    type="VM",
                    source_host_uuid="h",
                    status="finished",
                    failover_segment_uuid="s",
                    payload="{}",
                )
            )
    finally:
        db.dispose()
    conf = tmp_path / "ref.conf"
    conf.write_text(f"[database]\nconnection = sqlite:///{path}\n")
    done = subprocess.run(
        [REF_PYTHON, "-W", "ignore", "-c", READ_WITH_THE_REFERENCE, str(conf)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # not this checkout: `-c` puts the working directory first on sys.path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert json.loads(out.strip().splitlines()[-1]) == {
        "segments": ["seg"],
        "hosts": ["compute-1"],
        "notifications": ["finished"],
    }
