"""The database gauges, computed at scrape time from rows of known age."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import sqlalchemy as sa

from masakari.db import engines
from masakari.db.database import Database, transaction
from masakari.db.models import Base
from masakari.metrics.collect import DatabaseCollector
from tests.support import rows
from tests.support.sqlite import migrated_sqlite

NOW = datetime.datetime(2026, 11, 30, 12, 0, 0)


def _notification(
    session: Any,
    status: str,
    created: datetime.datetime,
    updated: datetime.datetime | None,
    deleted: int = 0,
) -> str:
    return rows.notification(
        session,
        str(uuid.uuid4()),
        "VM",
        {},
        status,
        created,
        created_at=created,
        updated_at=updated,
        deleted=deleted,
    )


def _gauges(collector: DatabaseCollector) -> dict[tuple[str, tuple[str, ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.values()))): sample.value
        for family in collector.collect()
        for sample in family.samples
    }


def test_gauges_read_ages_and_counts(tmp_path) -> None:
    db = migrated_sqlite(tmp_path)
    minute = datetime.timedelta(minutes=1)
    with db.writer() as session:
        _notification(session, "new", NOW - 2 * minute, None)
        _notification(session, "new", NOW - minute, None)
        _notification(session, "running", NOW - 30 * minute, NOW - 20 * minute)
        _notification(session, "finished", NOW - 60 * minute, NOW - 50 * minute)
        _notification(session, "finished", NOW - 60 * minute, NOW - 50 * minute)
        _notification(session, "new", NOW - 90 * minute, None, deleted=1)  # gone
    transaction(db, lambda s: engines.beat(s, "e-1", "ctl-1", NOW - datetime.timedelta(seconds=7)))

    gauges = _gauges(DatabaseCollector(lambda: db, now=lambda: NOW))
    assert gauges[("masakari_database_up", ())] == 1
    assert gauges[("masakari_notifications", ("new",))] == 2
    assert gauges[("masakari_notifications", ("running",))] == 1
    assert gauges[("masakari_notifications", ("finished",))] == 2
    assert gauges[("masakari_notifications", ("error",))] == 0
    assert gauges[("masakari_queue_depth", ())] == 2
    assert gauges[("masakari_queue_oldest_new_age_seconds", ())] == 120
    assert gauges[("masakari_recovery_oldest_running_age_seconds", ())] == 1200
    assert gauges[("masakari_engine_heartbeat_age_seconds", ("ctl-1", "e-1"))] == 7
    db.dispose()


def test_an_unreachable_database_says_so_and_the_scrape_goes_on(tmp_path) -> None:
    def broken() -> Database:
        db = Database.from_url(f"sqlite:///{tmp_path}/missing/nowhere.db")
        return db

    gauges = _gauges(DatabaseCollector(broken, now=lambda: NOW))
    assert gauges == {("masakari_database_up", ()): 0}


def test_a_table_missing_is_a_database_error_too(tmp_path) -> None:
    db = Database.from_url(f"sqlite:///{tmp_path}/empty.db")
    with db.engine.begin() as connection:
        connection.execute(sa.text("SELECT 1"))
    gauges = _gauges(DatabaseCollector(lambda: db, now=lambda: NOW))
    assert gauges == {("masakari_database_up", ()): 0}
    db.dispose()


def test_dashboard_and_alert_rules_use_only_metrics_that_exist(tmp_path) -> None:
    import re
    from pathlib import Path

    from masakari import metrics
    from masakari.metrics import capacity, collect, detection, drills, kdump, quarantine

    repo = Path(__file__).resolve().parents[3]
    db = migrated_sqlite(tmp_path)
    transaction(db, lambda s: engines.beat(s, "e-1", "ctl-1", NOW))
    metrics.instruments()  # every instrument exists once first used
    detection.instruments()
    kdump.instruments()
    capacity.instruments()
    quarantine.instruments()
    drills.drill_ended("segment-1", "succeeded")
    drills.phase_ended("fence", "ok", 1.5)
    exposed = collect.exposition(collect.scrape_registry(lambda: db)).decode()
    db.dispose()
    families = set(re.findall(r"^# TYPE (\w+) ", exposed, re.MULTILINE))
    known = set(families)
    for name in families:
        known |= {name + suffix for suffix in ("_total", "_bucket", "_count", "_sum")}
    for path in ("etc/grafana/masakari-dashboard.json", "docs/operations.md"):
        used = set(re.findall(r"\bmasakari_[a-z_]+", (repo / path).read_text()))
        # Table names, the healthcheck backend, the payload keys of versioned notifications
        # and the alert labels quarantine reads are not metrics.
        used -= set(Base.metadata.tables) | {"masakari_database"}
        used -= {"masakari_signal", "masakari_quarantine"}
        used = {u for u in used if not u.startswith("masakari_object")}
        assert used - known == set(), path
