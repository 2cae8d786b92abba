"""The reason of a notification's last failed attempt: ``failure_reason`` from API 1.4."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.database import affected_rows
from masakari.db.models import NotificationFailure, utcnow

# Reasons are exception texts; a Nova fault can carry a page of HTML.
MAX_REASON = 4096


def record(session: orm.Session, notification_uuid: str, reason: str) -> None:
    """Keep ``reason`` as the notification's failure reason, replacing an earlier one.

    Written under the run's claim (the caller fences it): one writer per notification.
    """
    reason = reason[:MAX_REASON]
    updated = session.execute(
        sa.update(NotificationFailure)
        .where(NotificationFailure.notification_uuid == notification_uuid)
        .values(reason=reason, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if affected_rows(updated) == 0:
        session.add(NotificationFailure(notification_uuid=notification_uuid, reason=reason))
        session.flush()


def reasons(session: orm.Session, notification_uuids: list[str]) -> dict[str, str]:
    if not notification_uuids:
        return {}
    rows = session.execute(
        sa.select(NotificationFailure.notification_uuid, NotificationFailure.reason).where(
            NotificationFailure.notification_uuid.in_(notification_uuids)
        )
    )
    return {row.notification_uuid: row.reason for row in rows}


def get(session: orm.Session, notification_uuid: str) -> NotificationFailure | None:
    """The notification's failure reason with when it was recorded, or None."""
    return session.get(NotificationFailure, notification_uuid)
