"""The detector's shadow reports on every backend: the migration equals the model, each
host's newest row is read back, purge takes the old ones."""

from __future__ import annotations

import datetime

import sqlalchemy as sa
from alembic import autogenerate
from alembic.migration import MigrationContext

from masakari.db import detector_shadow, models, purge
from masakari.db.database import Database

NOW = models.utcnow()
TABLE = "masakari_detector_shadow_reports"


def _report(host: str, decision: str, at: datetime.datetime) -> detector_shadow.ShadowReport:
    gate = None if decision == detector_shadow.REPORT else "cap"
    return detector_shadow.ShadowReport(
        "nova-services", "ctl-1:detector", host, "seg-uuid", decision, gate, "down", at
    )


def test_migration_creates_what_the_model_says(db: Database) -> None:
    with db.engine.connect() as conn:
        diffs = autogenerate.compare_metadata(
            MigrationContext.configure(conn), models.Base.metadata
        )
    assert [d for d in diffs if TABLE in repr(d)] == []


def test_each_hosts_newest_report_is_read_back_and_purge_takes_the_old_ones(
    db: Database,
) -> None:
    old = NOW - datetime.timedelta(days=40)
    with db.writer() as s:
        detector_shadow.add(s, _report("compute-1", detector_shadow.DEFER, old))
        detector_shadow.add(s, _report("compute-1", detector_shadow.REPORT, NOW))
        detector_shadow.add(s, _report("compute-2", detector_shadow.DEFER, old))
    with db.reader() as s:
        newest = detector_shadow.latest(s, "nova-services")
        assert detector_shadow.latest(s, "another") == {}
    assert {h: (r.decision, r.observed_at) for h, r in newest.items()} == {
        "compute-1": ("report", NOW),
        "compute-2": ("defer", old),
    }
    purge.purge(db, age_in_days=30)
    with db.reader() as s:
        kept = s.scalars(sa.select(models.DetectorShadowReport.host_name)).all()
        assert [r.host_name for r in detector_shadow.listed(s)] == ["compute-1"]
    assert kept == ["compute-1"]
