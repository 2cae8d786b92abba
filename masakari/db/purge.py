"""Hard deletion of old rows: ``masakari-manage db purge``."""

from __future__ import annotations

import datetime
import logging
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db import detector_shadow, drills, fencing, models, quarantines
from masakari.db.database import Database, affected_rows

LOG = logging.getLogger(__name__)

# A notification is purged once it reached a final status and was last touched before the
# cut-off (notifications are never soft-deleted); the other tables by their deleted_at.
FINAL_STATUSES = ("finished", "failed", "ignored")


def purge(db: Database, age_in_days: int, max_rows: int | None = None) -> dict[str, int]:
    """Delete rows older than ``age_in_days``, at most ``max_rows`` per table (None: all).

    The vmoves, progress rows and fence attempts of a purged notification go with it,
    whatever their number, so that nothing is left pointing at a notification that no
    longer exists.
    """
    cutoff = models.utcnow() - datetime.timedelta(days=age_in_days)
    counts: dict[str, int] = {}
    with db.writer() as session:
        uuids = _old_notifications(session, cutoff, max_rows)
        counts["notifications"] = _delete_notifications(session, uuids)
        counts["vmoves"] = _delete_vmoves(session, uuids, cutoff, max_rows)
        # Hosts before segments: hosts reference segments by uuid.
        counts["hosts"] = _delete_soft_deleted(session, models.Host, cutoff, max_rows)
        _delete_orphan_guards(session)
        _delete_fencing_rows(session, cutoff)
        # Not counted either: the detector's shadow reports are the project's own.
        detector_shadow.delete_before(session, cutoff)
        # Nor ended fire drills and closed quarantines (their hosts back in service).
        drills.delete_ended_before(session, cutoff)
        quarantines.delete_closed_before(session, cutoff)
        counts["failover_segments"] = _delete_segments(session, cutoff, max_rows)
    for table, count in counts.items():
        LOG.info("Purged %d row(s) from %s older than %d day(s)", count, table, age_in_days)
    return counts


def _limited(query: sa.Select[Any], max_rows: int | None) -> sa.Select[Any]:
    return query if max_rows is None else query.limit(max_rows)


def _old_notifications(
    session: orm.Session, cutoff: datetime.datetime, max_rows: int | None
) -> list[str]:
    n = models.Notification
    query = (
        sa.select(n.notification_uuid)
        .where(n.updated_at < cutoff, n.status.in_(FINAL_STATUSES))
        .order_by(n.updated_at, n.id)
    )
    return list(session.scalars(_limited(query, max_rows)))


def _delete_notifications(session: orm.Session, uuids: list[str]) -> int:
    if not uuids:
        return 0
    for model in (
        models.RecoveryTask,
        models.NotificationClaim,
        models.InstanceLock,
        models.InstancePlan,
        models.NotificationHold,
        models.NotificationFailure,
        models.FenceAttempt,
        models.FailureEvidence,
    ):
        session.execute(sa.delete(model).where(model.notification_uuid.in_(uuids)))
    result = session.execute(
        sa.delete(models.Notification).where(models.Notification.notification_uuid.in_(uuids))
    )
    return affected_rows(result)


def _delete_vmoves(
    session: orm.Session, purged: list[str], cutoff: datetime.datetime, max_rows: int | None
) -> int:
    v = models.VMove
    count = 0
    if purged:
        count += affected_rows(session.execute(sa.delete(v).where(v.notification_uuid.in_(purged))))
    # Rows the reference left behind: soft-deleted ones and orphans of notifications it purged.
    orphan = ~sa.exists().where(models.Notification.notification_uuid == v.notification_uuid)
    old_ids = _limited(
        sa.select(v.id).where(sa.or_(v.deleted_at < cutoff, orphan)).order_by(v.id), max_rows
    )
    ids = list(session.scalars(old_ids))
    if ids:
        count += affected_rows(session.execute(sa.delete(v).where(v.id.in_(ids))))
    return count


def _delete_soft_deleted(
    session: orm.Session, model: Any, cutoff: datetime.datetime, max_rows: int | None
) -> int:
    query = sa.select(model.id).where(model.deleted != 0, model.deleted_at < cutoff)
    ids = list(session.scalars(_limited(query.order_by(model.deleted_at, model.id), max_rows)))
    if not ids:
        return 0
    return affected_rows(session.execute(sa.delete(model).where(model.id.in_(ids))))


def _delete_orphan_guards(session: orm.Session) -> None:
    """Per-host guard rows of hosts whose rows are gone (not counted: not a reference table).

    Also the mass-failure guard's segment and global rows: harmless, the next intake that
    needs one inserts it again.
    """
    g = models.HostGuard
    session.execute(sa.delete(g).where(~sa.exists().where(models.Host.uuid == g.host_uuid)))


def _delete_fencing_rows(session: orm.Session, cutoff: datetime.datetime) -> None:
    """kdump messages received before the cut-off, and driver checks last made before it
    (not counted: not reference tables). A fence attempt goes with its notification."""
    fencing.delete_kdump_before(session, cutoff)
    c = models.FenceCheck
    session.execute(sa.delete(c).where(c.checked_at < cutoff))


def _delete_segments(session: orm.Session, cutoff: datetime.datetime, max_rows: int | None) -> int:
    s, h = models.Segment, models.Host
    # A segment some host row still points at would break the foreign key.
    referenced = sa.exists().where(h.failover_segment_id == s.uuid)
    query = (
        sa.select(s.id)
        .where(s.deleted != 0, s.deleted_at < cutoff, ~referenced)
        .order_by(s.deleted_at, s.id)
    )
    ids = list(session.scalars(_limited(query, max_rows)))
    if not ids:
        return 0
    return affected_rows(session.execute(sa.delete(s).where(s.id.in_(ids))))
