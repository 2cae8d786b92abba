"""Held notifications: put on hold at intake, released or cancelled by an operator.

A hold is a row of ``masakari_notification_holds`` written in the transaction that inserts
the notification, so no engine ever sees the notification without it. The notification
keeps status ``new``; every query of the engine's queue skips held rows (:func:`not_held`),
and the claim's conditional UPDATE checks it again, so a release and a claim cannot cross.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.database import affected_rows
from masakari.db.models import Notification, NotificationHold
from masakari.db.statuses import IGNORED, NEW

# Why a notification is held.
REASON_SEGMENT = "mass failure: segment threshold"
REASON_GLOBAL = "mass failure: global threshold"
REASON_UNKNOWN = "host status UNKNOWN: waiting for confirmation"

CANCEL_MESSAGE = "Cancelled by an operator while held."
SUPERSEDED_MESSAGE = "Superseded by notification %s, which confirms the host's state."


def not_held(notification_uuid: sa.ColumnElement[str] | None = None) -> sa.ColumnElement[bool]:
    """A WHERE criterion: the notification (by default the row of ``Notification``) is not held."""
    column = Notification.notification_uuid if notification_uuid is None else notification_uuid
    return ~sa.exists().where(NotificationHold.notification_uuid == column)


def is_held() -> sa.ColumnElement[bool]:
    return sa.exists().where(NotificationHold.notification_uuid == Notification.notification_uuid)


def hold(session: orm.Session, notification_uuid: str, reason: str) -> None:
    session.add(NotificationHold(notification_uuid=notification_uuid, reason=reason))
    session.flush()


def reason(session: orm.Session, notification_uuid: str) -> str | None:
    """Why the notification is held, or None when it is not."""
    return session.scalar(
        sa.select(NotificationHold.reason).where(
            NotificationHold.notification_uuid == notification_uuid
        )
    )


def reasons(session: orm.Session, notification_uuids: list[str]) -> dict[str, str]:
    """The holds among these notifications: uuid -> reason."""
    if not notification_uuids:
        return {}
    rows = session.execute(
        sa.select(NotificationHold.notification_uuid, NotificationHold.reason).where(
            NotificationHold.notification_uuid.in_(notification_uuids)
        )
    )
    return {row.notification_uuid: row.reason for row in rows}


def release(session: orm.Session, notification_uuid: str) -> bool:
    """Drop the hold: the engine takes the notification like any ``new`` one. False if none.

    A delete, not a read then a delete: two concurrent releases (or a release and a cancel)
    conflict on the row, and exactly one sees it gone.
    """
    dropped = session.execute(
        sa.delete(NotificationHold)
        .where(NotificationHold.notification_uuid == notification_uuid)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(dropped) == 1


def cancel(session: orm.Session, notification_uuid: str, message: str = CANCEL_MESSAGE) -> bool:
    """Drop the hold and end the notification as ``ignored``, untouched. False if not held."""
    if not release(session, notification_uuid):
        return False
    session.execute(
        sa.update(Notification)
        .where(
            Notification.notification_uuid == notification_uuid,
            Notification.status == NEW,
            Notification.deleted == 0,
        )
        .values(status=IGNORED, message=message)
        .execution_options(synchronize_session=False)
    )
    return True


def held_of_host(session: orm.Session, host_uuid: str, reason_: str) -> list[str]:
    """The notifications of a host held for one reason, oldest first."""
    return list(
        session.scalars(
            sa.select(Notification.notification_uuid)
            .join(
                NotificationHold,
                NotificationHold.notification_uuid == Notification.notification_uuid,
            )
            .where(
                Notification.source_host_uuid == host_uuid,
                Notification.deleted == 0,
                NotificationHold.reason == reason_,
            )
            .order_by(Notification.id)
        )
    )
