"""Queries on hosts; every host comes with its live segment loaded."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari import exception
from masakari.db import models
from masakari.db.database import affected_rows, flush_unique
from masakari.db.models import Host
from masakari.db.paging import Row, paginate


def list_(
    session: orm.Session,
    segment_uuid: str,
    filters: Mapping[str, Any],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
) -> list[Row]:
    """Hosts of one segment. Filters: type (as given), on_maintenance and reserved (bools)."""
    params = {"segment": segment_uuid, **filters}
    criteria = [(name, _FILTERS[name]) for name in _FILTERS if name in params]
    return paginate(session, Host, criteria, params, sort_keys, sort_dirs, limit, marker)


_FILTERS = {
    "segment": Host.failover_segment_id == sa.bindparam("segment"),
    "type": Host.type == sa.bindparam("type"),
    "on_maintenance": Host.on_maintenance == sa.bindparam("on_maintenance"),
    "reserved": Host.reserved == sa.bindparam("reserved"),
}


# Built once: a statement's cache key is computed for each new statement object.
_READ_IN_SEGMENT = sa.select(*Host.__table__.columns).where(
    Host.uuid == sa.bindparam("uuid"),
    Host.failover_segment_id == sa.bindparam("segment"),
    Host.deleted == 0,
)


def read_in_segment(session: orm.Session, host_uuid: str, segment_uuid: str) -> Row:
    """The live host as a plain row (without its segment), for a response body."""
    row = session.execute(_READ_IN_SEGMENT, {"uuid": host_uuid, "segment": segment_uuid}).first()
    if row is None:
        raise exception.HostNotFoundUnderSegment(host_uuid=host_uuid, segment_uuid=segment_uuid)
    return row


def get_in_segment(session: orm.Session, host_uuid: str, segment_uuid: str) -> Host:
    row = session.scalar(
        sa.select(Host).where(
            Host.uuid == host_uuid, Host.failover_segment_id == segment_uuid, Host.deleted == 0
        )
    )
    if row is None:
        raise exception.HostNotFoundUnderSegment(host_uuid=host_uuid, segment_uuid=segment_uuid)
    return row


def get_by_name_for_update(session: orm.Session, name: str) -> Host:
    """The live host called ``name``, its row locked until the transaction ends.

    The lock serialises concurrent notifications from one host across API processes on
    PostgreSQL and MariaDB (SQLite writers are serialised by BEGIN IMMEDIATE). The segment
    is not joined: FOR UPDATE cannot lock the nullable side of an outer join.
    """
    row = session.scalar(
        sa.select(Host)
        .options(orm.lazyload(Host.failover_segment))
        .where(Host.name == name, Host.deleted == 0)
        .with_for_update()
    )
    if row is None:
        raise exception.HostNotFoundByName(host_name=name)
    return row


def create(session: orm.Session, values: Mapping[str, Any], segment: models.Segment) -> Host:
    """Insert a host of ``segment`` (read in this transaction), ready for a response body."""
    # Every column is given, so the inserted row is known without reading it back (the
    # SELECT of a refresh, with its segment joined, was a fifth of POST host's own time).
    row = Host(
        uuid=str(uuid.uuid4()),
        created_at=models.utcnow(),
        updated_at=None,
        deleted_at=None,
        deleted=0,
        **values,
    )
    session.add(row)
    flush_unique(session, exception.HostExists(name=values.get("name")))
    orm.attributes.set_committed_value(row, "failover_segment", segment)
    return row


def update(session: orm.Session, row: Host, values: Mapping[str, Any]) -> Host:
    for key, value in values.items():
        setattr(row, key, value)
    flush_unique(session, exception.HostExists(name=values.get("name")))
    return reload(session, row)


def reload(session: orm.Session, row: Host) -> Host:
    """The row again, with the segment as it is now (for the response body)."""
    session.refresh(row)
    return row


def soft_delete(session: orm.Session, row: Host) -> None:
    session.execute(models.soft_delete(Host, Host.id == row.id))


# --- the engine's ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RecoveryHost:
    """What a recovery reads of its source host and segment, detached from any session."""

    uuid: str
    name: str
    reserved: bool
    on_maintenance: bool
    failover_segment_id: str
    segment_enabled: bool
    recovery_method: str
    # The segment's name: host fencing's segment defaults are written by name.
    segment_name: str | None = None


def get_for_recovery(session: orm.Session, host_uuid: str) -> RecoveryHost | None:
    host = session.scalar(sa.select(Host).where(Host.uuid == host_uuid, Host.deleted == 0))
    if host is None:
        return None
    segment = session.scalar(
        sa.select(models.Segment).where(
            models.Segment.uuid == host.failover_segment_id, models.Segment.deleted == 0
        )
    )
    return RecoveryHost(
        uuid=host.uuid,
        name=host.name,
        reserved=bool(host.reserved),
        on_maintenance=bool(host.on_maintenance),
        failover_segment_id=host.failover_segment_id,
        segment_enabled=bool(segment.enabled) if segment is not None else False,
        recovery_method=segment.recovery_method if segment is not None else "auto",
        segment_name=segment.name if segment is not None else None,
    )


def put_on_maintenance(session: orm.Session, host_uuid: str, unreserve: bool) -> None:
    """A failed host goes on maintenance; a failed reserved host is no longer a spare."""
    values: dict[str, Any] = {"on_maintenance": True}
    if unreserve:
        values["reserved"] = False
    session.execute(
        sa.update(Host)
        .where(Host.uuid == host_uuid, Host.deleted == 0)
        .values(**values)
        .execution_options(synchronize_session=False)
    )


def reserved_host_names(session: orm.Session, segment_uuid: str) -> list[str]:
    """Usable spares of a segment, newest first, as the reference's default host order."""
    rows = session.execute(
        sa.select(Host.name)
        .where(
            Host.failover_segment_id == segment_uuid,
            Host.reserved.is_(True),
            Host.on_maintenance.is_(False),
            Host.deleted == 0,
        )
        .order_by(Host.created_at.desc(), Host.id.desc())
    ).all()
    return [r.name for r in rows]


def take_reserved_host(session: orm.Session, name: str) -> bool:
    """Atomically take a spare: the cross-engine form of the reference's per-host lock."""
    return set_reserved(session, name, False)


def set_reserved(session: orm.Session, name: str, reserved: bool) -> bool:
    """Flip a host's reserved flag to ``reserved`` in one conditional write; false when the
    host changed meanwhile (already flipped, on maintenance, deleted)."""
    result = session.execute(
        sa.update(Host)
        .where(
            Host.name == name,
            Host.reserved.is_(not reserved),
            Host.on_maintenance.is_(False),
            Host.deleted == 0,
        )
        .values(reserved=reserved)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(result) == 1


def give_back_reserved_host(session: orm.Session, name: str) -> None:
    session.execute(
        sa.update(Host)
        .where(Host.name == name, Host.deleted == 0)
        .values(reserved=True)
        .execution_options(synchronize_session=False)
    )


def clear_maintenance(session: orm.Session, host_uuid: str) -> bool:
    """A recovered host is back: off maintenance. False when it was not on it."""
    result = session.execute(
        sa.update(Host)
        .where(Host.uuid == host_uuid, Host.deleted == 0, Host.on_maintenance.is_(True))
        .values(on_maintenance=False)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(result) == 1


def peer_names(session: orm.Session, host_name: str) -> list[str]:
    """The other hosts of the segment(s) holding a host named ``host_name``, oldest first."""
    segments = sa.select(Host.failover_segment_id).where(Host.name == host_name, Host.deleted == 0)
    rows = session.execute(
        sa.select(Host.name)
        .where(
            Host.failover_segment_id.in_(segments),
            Host.name != host_name,
            Host.deleted == 0,
        )
        .order_by(Host.created_at, Host.id)
    ).all()
    return [r.name for r in rows]


def get_by_name(session: orm.Session, name: str) -> Host:
    row = session.scalar(sa.select(Host).where(Host.name == name, Host.deleted == 0))
    if row is None:
        raise exception.HostNotFoundByName(host_name=name)
    return row
