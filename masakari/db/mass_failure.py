"""What the mass-failure guard counts, read inside the transaction that records a report.

The rule (which reports are failures, the thresholds) is masakari.ha.intake's; these are its
two reads, made under the guard rows it holds, so that two API processes that accept
reports of two hosts of one segment at once take turns and the second one counts the
first one's report.
"""

from __future__ import annotations

import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.models import Host, Notification


def compute_host_reports(
    session: orm.Session, since: datetime.datetime, segment: str | None
) -> list[tuple[str, str | None]]:
    """(source host uuid, stored payload) of the COMPUTE_HOST reports generated since then,
    of one segment or (None) of every segment, whatever their status."""
    stmt = sa.select(Notification.source_host_uuid, Notification.payload).where(
        Notification.deleted == 0,
        Notification.type == "COMPUTE_HOST",
        Notification.generated_time >= since,
    )
    if segment is not None:
        stmt = stmt.where(Notification.failover_segment_uuid == segment)
    return [(row.source_host_uuid, row.payload) for row in session.execute(stmt)]


def host_count(session: orm.Session, segment: str | None) -> int:
    """The hosts of one segment, or (None) of every segment."""
    stmt = sa.select(sa.func.count()).select_from(Host).where(Host.deleted == 0)
    if segment is not None:
        stmt = stmt.where(Host.failover_segment_id == segment)
    return session.scalar(stmt) or 0
