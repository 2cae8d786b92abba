"""Notifications: intake with the maintenance and duplicate rules, list and show."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from oslo_utils import timeutils, uuidutils

from masakari import exception
from masakari.db import hosts as hosts_db
from masakari.db import notifications as notifications_db
from masakari.db import progress
from masakari.db.database import Database
from masakari.db.models import Notification

MAINTENANCE_MESSAGE = (
    "Notification received from host %(host)s of type '%(type)s' is ignored as the host is "
    "already under maintenance."
)
DUPLICATE_MESSAGE = "Notification received from host %(host)s of type %(type)s is duplicate."


def to_utc(value: str) -> datetime.datetime:
    """An ISO 8601 time as naive UTC; a time without zone is taken as UTC (microseconds kept).

    ValueError when it is not one, or falls outside what datetime holds once in UTC.
    """
    try:
        return timeutils.normalize_time(timeutils.parse_isotime(value))
    except OverflowError as exc:
        raise ValueError(str(exc)) from exc


def window_start(generated_time: datetime.datetime, seconds: int) -> datetime.datetime:
    try:
        return generated_time - datetime.timedelta(seconds=seconds)
    except OverflowError:
        return datetime.datetime.min


def create(db: Database, duplicate_window: int, data: Mapping[str, Any]) -> Notification:
    """Record a notification in status new, or refuse it.

    400 when the host is unknown, 409 when it is on maintenance, 409 when a notification of
    the same type and host with an equal payload (any status) was generated no earlier than
    ``duplicate_window`` seconds before this one. The host row is locked for the check and
    the insert, so N identical concurrent requests give exactly one 202.
    """
    generated_time = to_utc(data["generated_time"])
    with db.writer() as session:
        host = hosts_db.get_by_name_for_update(session, data["hostname"])
        if host.on_maintenance:
            raise exception.HostOnMaintenance(
                message=MAINTENANCE_MESSAGE % {"host": data["hostname"], "type": data["type"]}
            )
        since = window_start(generated_time, duplicate_window)
        if notifications_db.has_duplicate(session, data["type"], host.uuid, data["payload"], since):
            raise exception.DuplicateNotification(
                message=DUPLICATE_MESSAGE % {"host": data["hostname"], "type": data["type"]}
            )
        return notifications_db.create(
            session,
            type_=data["type"],
            generated_time=generated_time,
            source_host_uuid=host.uuid,
            failover_segment_uuid=host.failover_segment_id,
            payload=data["payload"],
        )


def list_(
    db: Database,
    filters: Mapping[str, Any],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
) -> list[Notification]:
    with db.reader() as session:
        return notifications_db.list_(session, filters, sort_keys, sort_dirs, limit, marker)


def get(db: Database, notification_uuid: str) -> Notification:
    if not uuidutils.is_uuid_like(notification_uuid):
        raise exception.NotificationNotFound(id=notification_uuid)
    with db.reader() as session:
        return notifications_db.get(session, notification_uuid)


def get_with_details(
    db: Database, notification_uuid: str
) -> tuple[Notification, list[dict[str, Any]]]:
    """The notification and its recovery_workflow_details, read from the progress table.

    The reference asks the engine, which fails (500) once the source host is deleted; the
    details do not depend on the host here.
    """
    if not uuidutils.is_uuid_like(notification_uuid):
        raise exception.NotificationNotFound(id=notification_uuid)
    with db.reader() as session:
        row = notifications_db.get(session, notification_uuid)
        return row, progress.workflow_details(session, notification_uuid)
