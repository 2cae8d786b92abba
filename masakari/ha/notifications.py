"""Notifications: intake with the maintenance and duplicate rules, list and show."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from oslo_utils import timeutils, uuidutils

from masakari import exception
from masakari.db import guards, progress
from masakari.db import hosts as hosts_db
from masakari.db import notifications as notifications_db
from masakari.db.database import Database
from masakari.db.models import Notification
from masakari.db.paging import Row

MAINTENANCE_MESSAGE = (
    "Notification received from host %(host)s of type '%(type)s' is ignored as the host is "
    "already under maintenance."
)
DUPLICATE_MESSAGE = "Notification received from host %(host)s of type %(type)s is duplicate."

# A lost race is replayed from the start, with a jittered, doubling pause: the replay sees
# the winner's row and ends in a 409 (or wins, when the winner was not a duplicate). Ten
# replays cover a few seconds of contention; past that the report is refused, not failed.
RACE_RETRIES = 10
RACE_RETRY_INTERVAL = 0.02
RACE_RETRY_MAX_INTERVAL = 1.0


class NotificationRaceLost(exception.Conflict):
    msg_fmt = (
        "Notification received from host %(host)s of type %(type)s conflicted with concurrent "
        "notifications of the host; send it again."
    )


def _guard_insert_collided(exc: BaseException) -> bool:
    """Two first uses of a host's guard, in parallel, insert the same key; one loses.

    Only servers race here (SQLite writers take turns), and their unique violations come
    translated by oslo.db: a plain IntegrityError is another fault, not retried.
    """
    return isinstance(exc, db_exc.DBDuplicateEntry)


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
    ``duplicate_window`` seconds before this one. N identical concurrent requests, through
    any number of API processes and database nodes, give exactly one 202.
    """
    generated_time = to_utc(data["generated_time"])
    try:
        return _record(db, duplicate_window, data, generated_time)
    except (db_exc.DBDeadlock, db_exc.DBDuplicateEntry) as exc:
        raise NotificationRaceLost(host=data["hostname"], type=data["type"]) from exc


@oslo_db_api.wrap_db_retry(
    max_retries=RACE_RETRIES,
    retry_interval=RACE_RETRY_INTERVAL,
    inc_retry_interval=True,
    max_retry_interval=RACE_RETRY_MAX_INTERVAL,
    retry_on_deadlock=True,
    exception_checker=_guard_insert_collided,
)
def _record(
    db: Database,
    duplicate_window: int,
    data: Mapping[str, Any],
    generated_time: datetime.datetime,
) -> Notification:
    """One attempt: the checks and the insert in one transaction that holds the host's guard.

    The row lock on the host serialises requests on one server only (a Galera node does
    not share it); the guard is a write, so two attempts on one host conflict on every
    backend: the second waits for the first (PostgreSQL, InnoDB) or fails with a deadlock
    at commit (Galera) and is replayed. The guard is written before the duplicate lookup:
    that read then sees every notification committed before the guard was ours (InnoDB
    takes its snapshot at the first plain read, PostgreSQL at each statement).
    """
    with db.writer() as session:
        host = hosts_db.get_by_name_for_update(session, data["hostname"])
        guards.hold(session, host.uuid)
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
) -> list[Row]:
    with db.reader() as session:
        return notifications_db.list_(session, filters, sort_keys, sort_dirs, limit, marker)


def get(db: Database, notification_uuid: str) -> Row:
    if not uuidutils.is_uuid_like(notification_uuid):
        raise exception.NotificationNotFound(id=notification_uuid)
    with db.reader() as session:
        return notifications_db.read(session, notification_uuid)


def get_with_details(db: Database, notification_uuid: str) -> tuple[Row, list[dict[str, Any]]]:
    """The notification and its recovery_workflow_details, read from the progress table.

    The reference asks the engine, which fails (500) once the source host is deleted; the
    details do not depend on the host here.
    """
    if not uuidutils.is_uuid_like(notification_uuid):
        raise exception.NotificationNotFound(id=notification_uuid)
    with db.reader() as session:
        row = notifications_db.read(session, notification_uuid)
        return row, progress.workflow_details(session, notification_uuid)
