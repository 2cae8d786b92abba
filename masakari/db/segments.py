"""Queries on failover_segments, and the list paging the four API query modules share."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa
from oslo_db import exception as db_exc
from oslo_db.sqlalchemy import utils as oslo_utils
from sqlalchemy import orm

from masakari import exception
from masakari.db.models import Host, Notification, Segment, utcnow

M = TypeVar("M")

DEFAULT_SORT_KEYS = ("created_at", "id")
DEFAULT_SORT_DIR = "desc"
SORT_DIRS = ("asc", "desc")
# Statuses that make a segment, and every host in it, "in use".
BUSY_STATUSES = ("new", "running", "error")

_INTEGER = re.compile(r"[+-]?\d+")
_MAX_ID = 2**63 - 1
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def take_write_lock(session: orm.Session) -> None:
    """On SQLite, take the database's write lock now, waiting for it (busy timeout).

    A transaction that reads first and writes later fails at once ("database is locked")
    when another process committed in between; a write as its first statement waits and
    then sees the latest data, as BEGIN IMMEDIATE would. PostgreSQL and MariaDB lock rows.
    """
    if session.get_bind().dialect.name == "sqlite":
        session.execute(sa.text("UPDATE failover_segments SET id = id WHERE 0 = 1"))


def sort_params(sort_keys: Sequence[str], sort_dirs: Sequence[str]) -> tuple[list[str], list[str]]:
    """Complete the client's keys with created_at and id, directions with the first one given.

    InvalidInput for an unknown direction or more directions than keys (the reference's
    messages).
    """
    default_dir = sort_dirs[0] if sort_dirs else DEFAULT_SORT_DIR
    keys = list(sort_keys)
    for sort_dir in sort_dirs:
        if sort_dir not in SORT_DIRS:
            raise exception.InvalidInput(reason="Unknown sort direction, must be 'asc' or 'desc'")
    dirs = list(sort_dirs) if sort_dirs else [default_dir for _ in keys]
    while len(dirs) < len(keys):
        dirs.append(default_dir)
    if len(dirs) > len(keys):
        raise exception.InvalidInput(reason="Sort direction size exceeds sort key size")
    for key in DEFAULT_SORT_KEYS:
        if key not in keys:
            keys.append(key)
            dirs.append(default_dir)
    return keys, dirs


def paginate(
    session: orm.Session,
    model: type[M],
    criteria: Sequence[Any],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
) -> list[M]:
    """One page of live rows matching ``criteria``, after the row whose id is ``marker``.

    The reference's order of checks: limit 0 answers at once, then the directions, then
    the marker (any live row of the table, whatever the criteria), then the keys, which
    must be columns. Ordering and the marker condition are oslo.db's paginate_query.
    """
    if limit == 0:
        return []
    keys, dirs = sort_params(sort_keys, sort_dirs)
    table: Any = model
    query = session.query(model).filter(table.deleted == 0, *criteria)
    marker_row = None
    if marker is not None:
        marker_row = _marker_row(session, model, marker)
    columns = set(sa.inspect(model).columns.keys())
    for key in keys:
        if key not in columns:
            # The reference also takes relationships here, and then fails with a 500.
            raise exception.InvalidSortKey(
                message="InvalidSortKey({!r})".format(f"Sort key supplied is invalid: {key}")
            )
    query = oslo_utils.paginate_query(query, model, limit, keys, marker=marker_row, sort_dirs=dirs)
    return list(query.all())


def _marker_row(session: orm.Session, model: Any, marker: str) -> Any:
    # An id compared with a string matches nothing on PostgreSQL and the digits on SQLite:
    # only an integer literal can name a row.
    row = None
    if _INTEGER.fullmatch(marker) and abs(int(marker)) <= _MAX_ID:
        row = session.scalar(sa.select(model).where(model.id == int(marker), model.deleted == 0))
    if row is None:
        raise exception.MarkerNotFound(marker=marker)
    return row


def enabled_criterion(value: str) -> Any:
    """The segment ``enabled`` filter compares the raw string with the column, as SQLite does
    in the reference: a numeric string equal to 1 or 0 matches, any other value nothing."""
    number = float(value) if _NUMBER.fullmatch(value) else None
    if number == 1:
        return Segment.enabled.is_(True)
    if number == 0:
        return Segment.enabled.is_(False)
    return sa.false()


def list_(
    session: orm.Session,
    filters: Mapping[str, str],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
) -> list[Segment]:
    """Filters: recovery_method, service_type (compared as given), enabled (raw)."""
    criteria: list[Any] = []
    if "recovery_method" in filters:
        criteria.append(Segment.recovery_method == filters["recovery_method"])
    if "service_type" in filters:
        criteria.append(Segment.service_type == filters["service_type"])
    if "enabled" in filters:
        criteria.append(enabled_criterion(filters["enabled"]))
    return paginate(session, Segment, criteria, sort_keys, sort_dirs, limit, marker)


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
    _flush_unique(session, values.get("name"))
    session.refresh(row)
    return row


def update(session: orm.Session, row: Segment, values: Mapping[str, Any]) -> Segment:
    for key, value in values.items():
        setattr(row, key, value)
    _flush_unique(session, values.get("name"))
    session.refresh(row)
    return row


def _flush_unique(session: orm.Session, name: Any) -> None:
    try:
        session.flush()
    except (db_exc.DBDuplicateEntry, sa.exc.IntegrityError) as exc:
        raise exception.SegmentExists(name=name) from exc


def soft_delete(session: orm.Session, segment_uuid: str) -> None:
    """Delete the segment and, with it, every host it holds (their names become free)."""
    now = utcnow()
    for model, criterion in (
        (Segment, Segment.uuid == segment_uuid),
        (Host, Host.failover_segment_id == segment_uuid),
    ):
        session.execute(
            sa.update(model)
            .where(criterion, model.deleted == 0)
            .values(deleted=model.id, deleted_at=now, updated_at=model.updated_at)
            .execution_options(synchronize_session=False)
        )


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
