"""Queries on notifications: list, get, the duplicate lookup and the insert of a new one."""

from __future__ import annotations

import datetime
import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari import exception
from masakari.db import holds
from masakari.db.models import Notification
from masakari.db.paging import Row, paginate
from masakari.db.statuses import HELD, NEW


def list_(
    session: orm.Session,
    filters: Mapping[str, Any],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
    show_held: bool = False,
) -> list[Row]:
    """Filters: status, source_host_uuid, type (as given), generated-since (naive UTC).

    With ``show_held`` (microversion 1.4) status held selects the held notifications and
    status new the others; without, held ones are the new ones they are in the table.
    """
    if show_held and filters.get("status") == HELD:
        filters = {k: v for k, v in filters.items() if k != "status"}
        filters["held"] = True
    elif show_held and filters.get("status") == NEW:
        filters = {**filters, "not held": True}
    criteria = [(name, _FILTERS[name]) for name in _FILTERS if name in filters]
    params = {
        _PARAMS.get(name, name): filters[name]
        for name in _FILTERS
        if name in filters and name not in _CONSTANT
    }
    return paginate(session, Notification, criteria, params, sort_keys, sort_dirs, limit, marker)


_FILTERS = {
    "source_host_uuid": Notification.source_host_uuid == sa.bindparam("source_host_uuid"),
    "type": Notification.type == sa.bindparam("type"),
    "status": Notification.status == sa.bindparam("status"),
    "generated-since": Notification.generated_time >= sa.bindparam("since"),
}
_PARAMS = {"generated-since": "since"}
# Criteria without a bound value (the 1.4 views of held notifications).
_CONSTANT = {"held": holds.is_held(), "not held": holds.not_held()}
_FILTERS.update(_CONSTANT)


# Built once: a statement's cache key is computed for each new statement object.
_READ = sa.select(*Notification.__table__.columns).where(
    Notification.notification_uuid == sa.bindparam("uuid"), Notification.deleted == 0
)


def read(session: orm.Session, notification_uuid: str) -> Row:
    """The live notification as a plain row, for a response body."""
    row = session.execute(_READ, {"uuid": notification_uuid}).first()
    if row is None:
        raise exception.NotificationNotFound(id=notification_uuid)
    return row


def lock(session: orm.Session, notification_uuid: str) -> None:
    """Lock the notification's row for the rest of the transaction. Taken first by an
    engine's hold and by a report kept as the notification's evidence: the two are written
    one after the other, and the later sees the earlier (the report ends a verdict's hold,
    or the hold sees the report)."""
    session.execute(
        sa.select(Notification.id)
        .where(Notification.notification_uuid == notification_uuid)
        .with_for_update()
    )


def get(session: orm.Session, notification_uuid: str) -> Notification:
    row = session.scalar(
        sa.select(Notification).where(
            Notification.notification_uuid == notification_uuid, Notification.deleted == 0
        )
    )
    if row is None:
        raise exception.NotificationNotFound(id=notification_uuid)
    return row


def find_duplicate(
    session: orm.Session,
    type_: str,
    source_host_uuid: str,
    since: datetime.datetime,
    same: Callable[[Any], bool],
) -> tuple[str, Any] | None:
    """The oldest notification of this type and host, generated at ``since`` or later, whose
    decoded payload ``same`` accepts (any status counts), with that payload; else None."""
    stored = session.execute(
        sa.select(Notification.notification_uuid, Notification.payload)
        .where(
            Notification.deleted == 0,
            Notification.type == type_,
            Notification.source_host_uuid == source_host_uuid,
            Notification.generated_time >= since,
        )
        .order_by(Notification.id)
    )
    for notification_uuid, text in stored:
        decoded = None if text is None else json.loads(text)
        if decoded is not None and same(decoded):
            return str(notification_uuid), decoded
    return None


def payloads_of_host(
    session: orm.Session,
    type_: str,
    source_host_uuid: str,
    since: datetime.datetime,
    until: datetime.datetime,
) -> list[str | None]:
    """The stored payloads of the host's notifications of this type generated from ``since``
    to ``until`` (both included), any status."""
    return list(
        session.scalars(
            sa.select(Notification.payload).where(
                Notification.deleted == 0,
                Notification.type == type_,
                Notification.source_host_uuid == source_host_uuid,
                Notification.generated_time >= since,
                Notification.generated_time <= until,
            )
        )
    )


def create(
    session: orm.Session,
    type_: str,
    generated_time: datetime.datetime,
    source_host_uuid: str,
    failover_segment_uuid: str,
    payload: Mapping[str, Any],
) -> Notification:
    """Insert a notification in status new; the engine takes it from there."""
    row = Notification(
        notification_uuid=str(uuid.uuid4()),
        type=type_,
        generated_time=generated_time,
        source_host_uuid=source_host_uuid,
        failover_segment_uuid=failover_segment_uuid,
        # The reference stores the payload as json.dumps of the request's object, key
        # order kept: sorting by payload depends on this text.
        payload=json.dumps(payload),
        status="new",
    )
    session.add(row)
    session.flush()
    return row
