"""vmoves: readable under the COMPUTE_HOST notifications only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from oslo_utils import uuidutils
from sqlalchemy import orm

from masakari import exception
from masakari.db import notifications as notifications_db
from masakari.db import vmoves as vmoves_db
from masakari.db.database import Database
from masakari.db.paging import Row

COMPUTE_HOST = "COMPUTE_HOST"


def _check_notification(session: orm.Session, notification_uuid: str) -> None:
    """404 for an unknown notification, 400 for one of another type than COMPUTE_HOST."""
    notification = notifications_db.read(session, notification_uuid)
    if notification.type != COMPUTE_HOST:
        raise exception.NotificationWithoutVMoves(id=notification_uuid)


def list_(
    db: Database,
    notification_uuid: str,
    filters: Mapping[str, str],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
) -> list[Row]:
    with db.reader() as session:
        _check_notification(session, notification_uuid)
        return vmoves_db.list_(
            session, notification_uuid, filters, sort_keys, sort_dirs, limit, marker
        )


def get(db: Database, notification_uuid: str, vmove_uuid: str) -> Row:
    """As the reference, a vmove shows under any COMPUTE_HOST notification; an unknown
    notification is 404 here (the reference fails with 500)."""
    with db.reader() as session:
        _check_notification(session, notification_uuid)
        if not uuidutils.is_uuid_like(vmove_uuid):
            raise exception.VMoveNotFound(id=vmove_uuid)
        return vmoves_db.get(session, vmove_uuid)
