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
    """A host in service; ``known``: its failure is already known, it is not reported again."""

    name: str
    segment_uuid: str
    known: bool = False


def hosts_in_service(session: orm.Session, reported_since: datetime.datetime) -> list[Watched]:
    """Hosts of enabled segments that are not on maintenance, each saying whether its failure
    is already known.

    Known: a COMPUTE_HOST notification of the host that is not over (new, held included;
    running; error, which the retry takes again), or one generated since ``reported_since``
    (the duplicate window: a report now would be refused as the same failure).
    """
    known = sa.exists().where(
        Notification.source_host_uuid == Host.uuid,
        Notification.deleted == 0,
        Notification.type == "COMPUTE_HOST",
        sa.or_(
            Notification.status.in_([NEW, RUNNING, ERROR]),
            Notification.generated_time >= reported_since,
        ),
    )
    rows = session.execute(
        sa.select(Host.name, Host.failover_segment_id, known.label("known"))
        .join(Segment, sa.and_(Segment.uuid == Host.failover_segment_id, Segment.deleted == 0))
        .where(
            Host.deleted == 0,
            sa.or_(Host.on_maintenance.is_(None), Host.on_maintenance.is_(False)),
            sa.or_(Segment.enabled.is_(None), Segment.enabled.is_(True)),
        )
        .order_by(Host.name)
    )
    return [Watched(row.name, row.failover_segment_id, bool(row.known)) for row in rows]
