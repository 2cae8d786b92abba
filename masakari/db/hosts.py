"""Queries on hosts; every host comes with its live segment loaded."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari import exception
from masakari.db import models
from masakari.db.database import flush_unique
from masakari.db.models import Host
from masakari.db.paging import paginate


def list_(
    session: orm.Session,
    segment_uuid: str,
    filters: Mapping[str, Any],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
) -> list[Host]:
    """Hosts of one segment. Filters: type (as given), on_maintenance and reserved (bools)."""
    criteria: list[Any] = [Host.failover_segment_id == segment_uuid]
    if "type" in filters:
        criteria.append(Host.type == filters["type"])
    if "on_maintenance" in filters:
        criteria.append(Host.on_maintenance == filters["on_maintenance"])
    if "reserved" in filters:
        criteria.append(Host.reserved == filters["reserved"])
    return paginate(session, Host, criteria, sort_keys, sort_dirs, limit, marker)


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


def create(session: orm.Session, values: Mapping[str, Any]) -> Host:
    row = Host(uuid=str(uuid.uuid4()), **values)
    session.add(row)
    flush_unique(session, exception.HostExists(name=values.get("name")))
    return reload(session, row)


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
