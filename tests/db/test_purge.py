"""``db purge``: old rows go, recent ones stay, max_rows bounds each table, no orphans left."""

from __future__ import annotations

import datetime
import uuid

import sqlalchemy as sa

from masakari.db import models, purge
from masakari.db.database import Database
from tests.support import rows

NOW = models.utcnow()
OLD = NOW - datetime.timedelta(days=40)
RECENT = NOW - datetime.timedelta(days=2)


def _uuid() -> str:
    return str(uuid.uuid4())


def _segment(session, deleted_at=None) -> str:
    return rows.segment(session, name=_uuid(), deleted_at=deleted_at)


def _host(session, segment: str, deleted_at=None) -> str:
    return rows.host(session, segment, _uuid(), deleted_at=deleted_at)


def _notification(session, status: str, updated_at, vmoves: int = 0) -> str:
    """A notification last changed at ``updated_at``, with its vmoves and a progress row."""
    nid = rows.notification(session, _uuid(), "COMPUTE_HOST", {}, status, NOW)
    session.execute(
        sa.update(models.Notification)
        .where(models.Notification.notification_uuid == nid)
        .values(updated_at=updated_at)
    )
    for i in range(vmoves):
        session.add(
            models.VMove(
                uuid=_uuid(),
                notification_uuid=nid,
                instance_uuid=_uuid(),
                instance_name=f"vm{i}",
            )
        )
    session.add(
        models.RecoveryTask(
            notification_uuid=nid,
            attempt=1,
            position=0,
            name="T",
            state="SUCCESS",
            details="[]",
        )
    )
    return nid


def _count(db: Database, model, *where) -> int:
    with db.reader() as s:
        return s.scalar(sa.select(sa.func.count()).select_from(model).where(*where))


def test_old_rows_purged_recent_and_live_rows_kept(db: Database) -> None:
    with db.writer() as s:
        live_seg = _segment(s)
        _host(s, live_seg)
        _host(s, live_seg, deleted_at=OLD)
        _host(s, live_seg, deleted_at=RECENT)
        old_seg = _segment(s, deleted_at=OLD)
        _host(s, old_seg, deleted_at=OLD)
        _segment(s, deleted_at=RECENT)
        old_done = _notification(s, "finished", OLD, vmoves=3)
        _notification(s, "ignored", OLD)
        old_error = _notification(s, "error", OLD, vmoves=1)
        recent = _notification(s, "finished", RECENT, vmoves=1)

    counts = purge.purge(db, age_in_days=30)

    assert counts == {"notifications": 2, "vmoves": 3, "hosts": 2, "failover_segments": 1}
    with db.reader() as s:
        left = set(s.scalars(sa.select(models.Notification.notification_uuid)))
        vmove_owners = set(s.scalars(sa.select(models.VMove.notification_uuid)))
        task_owners = set(s.scalars(sa.select(models.RecoveryTask.notification_uuid)))
    # an old notification still in error may be retried: it stays
    assert left == {old_error, recent}
    assert old_done not in vmove_owners and vmove_owners == {old_error, recent}
    assert task_owners == {old_error, recent}
    assert _count(db, models.Host) == 2
    assert _count(db, models.Segment) == 2


def test_max_rows_bounds_each_table(db: Database) -> None:
    with db.writer() as s:
        seg = _segment(s)
        for _ in range(5):
            _host(s, seg, deleted_at=OLD)
        for _ in range(4):
            _notification(s, "finished", OLD, vmoves=2)

    counts = purge.purge(db, age_in_days=30, max_rows=3)

    assert counts["hosts"] == 3 and counts["notifications"] == 3
    # the vmoves of a purged notification go with it, whatever max_rows says
    assert counts["vmoves"] == 6
    assert _count(db, models.Host) == 2  # left for the next run
    assert _count(db, models.Notification) == 1
    assert _count(db, models.VMove) == 2

    counts = purge.purge(db, age_in_days=30, max_rows=3)
    assert counts["hosts"] == 2 and counts["notifications"] == 1


def test_orphan_vmoves_left_by_the_reference_are_purged(db: Database) -> None:
    with db.writer() as s:
        s.add(
            models.VMove(
                uuid=_uuid(),
                notification_uuid=_uuid(),
                instance_uuid=_uuid(),
                instance_name="orphan",
            )
        )
        kept = _notification(s, "running", OLD, vmoves=1)
    counts = purge.purge(db, age_in_days=30)
    assert counts["vmoves"] == 1
    with db.reader() as s:
        assert set(s.scalars(sa.select(models.VMove.notification_uuid))) == {kept}


def test_segment_still_referenced_by_a_host_row_is_kept(db: Database) -> None:
    with db.writer() as s:
        seg = _segment(s, deleted_at=OLD)
        _host(s, seg, deleted_at=RECENT)
    counts = purge.purge(db, age_in_days=30)
    assert counts["failover_segments"] == 0
    assert _count(db, models.Segment) == 1


def _quarantine(session, status: str, updated_at) -> str:
    uuid_ = _uuid()
    session.add(
        models.Quarantine(
            uuid=uuid_,
            host_uuid=_uuid(),
            host_name="h",
            segment_uuid=_uuid(),
            source="operator",
            reason="r",
            status=status,
            created_at=updated_at,
            updated_at=updated_at,
        )
    )
    session.add(
        models.QuarantineMove(
            quarantine_uuid=uuid_, server_id=_uuid(), server_name="vm", status="moved"
        )
    )
    return uuid_


def _drill(session, status: str, ended_at) -> str:
    uuid_ = _uuid()
    session.add(
        models.Drill(
            uuid=uuid_,
            segment_uuid=_uuid(),
            host_uuid=_uuid(),
            host_name="h",
            status=status,
            requested_by="api",
            created_at=OLD,
            ended_at=ended_at,
        )
    )
    session.add(
        models.DrillPhase(
            drill_uuid=uuid_, name="check", result="ok", token=1, started_at=OLD, ended_at=OLD
        )
    )
    return uuid_


def test_closed_quarantines_and_ended_drills_go_open_ones_stay(db: Database) -> None:
    with db.writer() as s:
        released = _quarantine(s, "released", OLD)
        withdrawn = _quarantine(s, "withdrawn", OLD)
        kept = [
            _quarantine(s, "done", OLD),  # its host still out of service
            _quarantine(s, "released", RECENT),
        ]
        ended = _drill(s, "succeeded", OLD)
        kept_drills = [_drill(s, "failed", RECENT), _drill(s, "running", None)]
    purge.purge(db, 30)
    with db.reader() as s:
        left = set(s.scalars(sa.select(models.Quarantine.uuid)))
        moves = set(s.scalars(sa.select(models.QuarantineMove.quarantine_uuid)))
        drills = set(s.scalars(sa.select(models.Drill.uuid)))
        phases = set(s.scalars(sa.select(models.DrillPhase.drill_uuid)))
    assert left == moves == set(kept)
    assert released not in left and withdrawn not in left
    assert drills == phases == set(kept_drills) and ended not in drills
