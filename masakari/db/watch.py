"""The hosts the failure detector watches, read once per poll."""

from __future__ import annotations

import dataclasses
import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.models import Host, Notification, Segment
from masakari.db.statuses import ERROR, NEW, RUNNING


@dataclasses.dataclass(frozen=True)
class Watched:
    """A host in service; ``known``: its failure is already known, it is not reported again.

    ``last_reported``: when its newest failure report (any status, ended ones included) was
    generated, None when it has none: a host that has not heartbeated since is still in that
    failure (:func:`same_failure`).
    """

    name: str
    segment_uuid: str
    known: bool = False
    last_reported: datetime.datetime | None = None


def same_failure(
    last_reported: datetime.datetime | None, last_heartbeat: datetime.datetime | None
) -> bool:
    """Whether a host that looks down now is still in the failure last reported: it has not
    heartbeated since (or never has). Cancelled, held and ended reports included: only a
    heartbeat after the report, then silence again, is a failure of its own."""
    if last_reported is None:
        return False
    return last_heartbeat is None or last_heartbeat <= last_reported


def hosts_in_service(session: orm.Session, reported_since: datetime.datetime) -> list[Watched]:
    """Hosts of enabled segments that are not on maintenance, each saying whether its failure
    is already known, and when its last failure report was generated.

    Known: a COMPUTE_HOST notification of the host that is not over (new, held included;
    running; error, which the retry takes again), or one generated since ``reported_since``
    (the duplicate window: a report now would be refused as the same failure).
    """
    of_host = sa.and_(
        Notification.source_host_uuid == Host.uuid,
        Notification.deleted == 0,
        Notification.type == "COMPUTE_HOST",
    )
    known = sa.exists().where(
        of_host,
        sa.or_(
            Notification.status.in_([NEW, RUNNING, ERROR]),
            Notification.generated_time >= reported_since,
        ),
    )
    last = (
        sa.select(sa.func.max(Notification.generated_time))
        .where(of_host)
        .correlate(Host)
        .scalar_subquery()
    )
    rows = session.execute(
        sa.select(
            Host.name,
            Host.failover_segment_id,
            known.label("known"),
            last.label("last_reported"),
        )
        .join(Segment, sa.and_(Segment.uuid == Host.failover_segment_id, Segment.deleted == 0))
        .where(
            Host.deleted == 0,
            sa.or_(Host.on_maintenance.is_(None), Host.on_maintenance.is_(False)),
            sa.or_(Segment.enabled.is_(None), Segment.enabled.is_(True)),
        )
        .order_by(Host.name)
    )
    return [
        Watched(row.name, row.failover_segment_id, bool(row.known), row.last_reported)
        for row in rows
    ]
