"""Queries on failover_segments."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari import exception
from masakari.db import models
from masakari.db.database import flush_unique
from masakari.db.models import Host, Notification, Segment, utcnow
from masakari.db.paging import Row, paginate

# Statuses that make a segment, and every host in it, "in use".
BUSY_STATUSES = ("new", "running", "error")

_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


_ENABLED = {
    1.0: ("enabled", Segment.enabled.is_(True)),
    0.0: ("disabled", Segment.enabled.is_(False)),
    None: ("no enabled value", sa.false()),
}


def enabled_criterion(value: str) -> tuple[str, Any]:
    """The segment ``enabled`` filter compares the raw string with the column, as SQLite does
    in the reference: a numeric string equal to 1 or 0 matches, any other value nothing."""
    number = float(value) if _NUMBER.fullmatch(value) else None
    return _ENABLED.get(number, _ENABLED[None])


def list_(
    session: orm.Session,
    filters: Mapping[str, str],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
) -> list[Row]:
    """Filters: recovery_method, service_type (compared as given), enabled (raw)."""
    criteria: list[tuple[str, Any]] = [
        (name, _FILTERS[name]) for name in _FILTERS if name in filters
    ]
    if "enabled" in filters:
        criteria.append(enabled_criterion(filters["enabled"]))
    params = {name: filters[name] for name in _FILTERS if name in filters}
    return paginate(session, Segment, criteria, params, sort_keys, sort_dirs, limit, marker)


_FILTERS = {
    "recovery_method": Segment.recovery_method == sa.bindparam("recovery_method"),
    "service_type": Segment.service_type == sa.bindparam("service_type"),
}


# Built once: a statement's cache key is computed for each new statement object.
_READ = sa.select(*Segment.__table__.columns).where(
    Segment.uuid == sa.bindparam("uuid"), Segment.deleted == 0
)


def read(session: orm.Session, segment_uuid: str) -> Row:
    """The live segment as a plain row, for a response body."""
    row = session.execute(_READ, {"uuid": segment_uuid}).first()
    if row is None:
        raise exception.SegmentNotFound(id=segment_uuid)
    return row


def get(session: orm.Session, segment_uuid: str) -> Segment:
    row = session.scalar(
        sa.select(Segment).where(Segment.uuid == segment_uuid, Segment.deleted == 0)
    )
    if row is None:
        raise exception.SegmentNotFound(id=segment_uuid)
    return row


def create(session: orm.Session, values: Mapping[str, Any]) -> Segment:
    row = Segment(uuid=str(uuid.uuid4()), **values)
    session.add(row)
    flush_unique(session, exception.SegmentExists(name=values.get("name")))
    session.refresh(row)
    return row


def update(session: orm.Session, row: Segment, values: Mapping[str, Any]) -> Segment:
    for key, value in values.items():
        setattr(row, key, value)
    flush_unique(session, exception.SegmentExists(name=values.get("name")))
    session.refresh(row)
    return row


def soft_delete(session: orm.Session, segment_uuid: str) -> None:
    """Delete the segment and, with it, every host it holds (their names become free)."""
    now = utcnow()
    for model, criterion in (
        (Segment, Segment.uuid == segment_uuid),
        (Host, Host.failover_segment_id == segment_uuid),
    ):
        session.execute(models.soft_delete(model, criterion, now=now))


def is_under_recovery(session: orm.Session, segment_uuid: str) -> bool:
    """Whether a host of the segment has a notification in new, running or error."""
    hosts = sa.select(Host.uuid).where(Host.failover_segment_id == segment_uuid, Host.deleted == 0)
    count = session.scalar(
        sa.select(sa.func.count(Notification.id)).where(
            Notification.deleted == 0,
            Notification.status.in_(BUSY_STATUSES),
            Notification.source_host_uuid.in_(hosts),
        )
    )
    return bool(count)
