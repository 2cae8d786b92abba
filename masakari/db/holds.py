"""Held notifications: put on hold at intake, released or cancelled by an operator.

A hold is a row of ``masakari_notification_holds`` written in the transaction that inserts
the notification, so no engine ever sees the notification without it. The notification
keeps status ``new``; every query of the engine's queue skips held rows (:func:`not_held`),
and the claim's conditional UPDATE checks it again, so a release and a claim cannot cross.

A release stamps ``released_at`` rather than deleting the row: the engine's sweep looks for
released notifications whatever their id (its range scans have long moved past them).
"""

from __future__ import annotations

import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from masakari.db.database import affected_rows
from masakari.db.models import Notification, NotificationHold, utcnow
from masakari.db.statuses import IGNORED, NEW

# Why a notification is held.
REASON_SEGMENT = "mass failure: segment threshold"
REASON_GLOBAL = "mass failure: global threshold"
REASON_UNKNOWN = "host status UNKNOWN: waiting for confirmation"
# The failure detector's gates (masakari.detection).
REASON_BREAKER = "detection breaker: too many hosts look down at once"
REASON_STORM = "detection storm cooldown: hosts looked down en masse recently"
# The engine's verdict ([verdict] rule) did not confirm the failure; the rest says why.
VERDICT_PREFIX = "verdict: "
# A verdict hold ended by a report of the failure that came after it (kept as evidence): the
# engine judges the failure again with it. Not an operator's release (:func:`released_hold`).
REASON_NEW_EVIDENCE = "new evidence: judged again"
# Held by an engine ([fencing]): no driver proved the host dead (the text goes on with why),
# or the fencing file gives the host none and [fencing] unfenced_hosts = hold.
REASON_FENCE_FAILED = "power fencing failed: "
REASON_UNFENCED = "no power fencing configured"
# Held by an engine ([fencing]): the host renews its shared-disk lease, so it runs (a
# partition, not a death): neither fenced nor evacuated (the text goes on with the entry).
REASON_LEASE_RENEWED = "host renews its lease: "
# The reason label of the masakari_notifications_held counter.
METRIC_REASONS = {
    REASON_SEGMENT: "mass_failure_segment",
    REASON_GLOBAL: "mass_failure_global",
    REASON_UNKNOWN: "unknown_host_state",
    REASON_BREAKER: "detection_breaker",
    REASON_STORM: "detection_storm",
    REASON_FENCE_FAILED: "power_fencing_failed",
    REASON_UNFENCED: "no_power_fencing",
    REASON_LEASE_RENEWED: "lease_renewed",
}
MAX_REASON = 255


def metric_reason(reason: str) -> str:
    """The counter's label of a hold reason (a fence failure's and a verdict's text go on
    with why)."""
    if reason.startswith(REASON_FENCE_FAILED):
        return METRIC_REASONS[REASON_FENCE_FAILED]
    if reason.startswith(VERDICT_PREFIX):
        return "verdict"
    if reason.startswith(REASON_LEASE_RENEWED):
        return METRIC_REASONS[REASON_LEASE_RENEWED]
    return METRIC_REASONS.get(reason, "other")


def is_fence_reason(reason: str | None) -> bool:
    """A hold an engine put because the host's death was not proven: releasing it is the
    operator's word that the host is dead."""
    return reason is not None and (
        reason.startswith((REASON_FENCE_FAILED, REASON_LEASE_RENEWED)) or reason == REASON_UNFENCED
    )


CANCEL_MESSAGE = "Cancelled by an operator while held."
SUPERSEDED_MESSAGE = "Superseded by notification %s, which confirms the host's state."


def _hold_of(column: Any, released: bool) -> sa.Exists:
    stamp = NotificationHold.released_at
    return sa.exists().where(
        NotificationHold.notification_uuid == column,
        stamp.is_not(None) if released else stamp.is_(None),
    )


def is_held(notification_uuid: sa.ColumnElement[str] | None = None) -> sa.ColumnElement[bool]:
    """A WHERE criterion: the notification (by default the row of ``Notification``) is held."""
    column = Notification.notification_uuid if notification_uuid is None else notification_uuid
    return _hold_of(column, released=False)


def not_held(notification_uuid: sa.ColumnElement[str] | None = None) -> sa.ColumnElement[bool]:
    return ~is_held(notification_uuid)


def was_released() -> sa.ColumnElement[bool]:
    """The row of ``Notification`` was held, then released."""
    return _hold_of(Notification.notification_uuid, released=True)


def released_since(when: datetime.datetime) -> sa.ColumnElement[bool]:
    """The row of ``Notification`` was released at or after ``when``: its age counts from
    then (docs/operations.md: a released report is taken whatever its age)."""
    return sa.exists().where(
        NotificationHold.notification_uuid == Notification.notification_uuid,
        NotificationHold.released_at >= when,
    )


def hold(session: orm.Session, notification_uuid: str, reason: str) -> None:
    session.add(NotificationHold(notification_uuid=notification_uuid, reason=reason))
    session.flush()


def hold_again(session: orm.Session, notification_uuid: str, reason: str) -> None:
    """Hold a notification an engine was recovering; a hold released earlier (a mass
    failure an operator let through) is replaced: this one waits for a release of its own."""
    session.execute(
        sa.delete(NotificationHold)
        .where(NotificationHold.notification_uuid == notification_uuid)
        .execution_options(synchronize_session=False)
    )
    hold(session, notification_uuid, reason[:MAX_REASON])


def released_hold(session: orm.Session, notification_uuid: str) -> str | None:
    """The reason of the notification's hold if an operator released it, else None (also
    when new evidence ended it: :func:`judge_again`)."""
    return session.scalar(
        sa.select(NotificationHold.reason).where(
            NotificationHold.notification_uuid == notification_uuid,
            NotificationHold.released_at.is_not(None),
            NotificationHold.reason != REASON_NEW_EVIDENCE,
        )
    )


def judge_again(session: orm.Session, notification_uuid: str) -> bool:
    """End the notification's verdict hold, for an engine to judge the failure again with
    the evidence that came since. False when it has none (not held, or held for another
    reason: a guard's, host fencing's, which wait for an operator whatever is reported).

    Stamped released, as a release is: the engine's sweep finds it whatever its id, and its
    age counts from now; the reason says it was no operator's word.
    """
    ended = session.execute(
        sa.update(NotificationHold)
        .where(
            NotificationHold.notification_uuid == notification_uuid,
            NotificationHold.released_at.is_(None),
            NotificationHold.reason.startswith(VERDICT_PREFIX, autoescape=True),
        )
        .values(released_at=utcnow(), reason=REASON_NEW_EVIDENCE)
        .execution_options(synchronize_session=False)
    )
    return affected_rows(ended) == 1


def reasons(session: orm.Session, notification_uuids: list[str]) -> dict[str, str]:
    """The notifications among these that are held: uuid -> why."""
    if not notification_uuids:
        return {}
    rows = session.execute(
        sa.select(NotificationHold.notification_uuid, NotificationHold.reason).where(
            NotificationHold.notification_uuid.in_(notification_uuids),
            NotificationHold.released_at.is_(None),
        )
    )
    return {row.notification_uuid: row.reason for row in rows}


def release(session: orm.Session, notification_uuid: str) -> bool:
    """Let the engine take the notification like any ``new`` one. False when not held.

    A conditional write, not a read then a write: two concurrent releases (or a release and
    a cancel) conflict on the row, and exactly one of them changes it.
    """
    released = session.execute(
        sa.update(NotificationHold)
        .where(
            NotificationHold.notification_uuid == notification_uuid,
            NotificationHold.released_at.is_(None),
        )
        .values(released_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    return affected_rows(released) == 1


def cancel(session: orm.Session, notification_uuid: str, message: str = CANCEL_MESSAGE) -> bool:
    """End a held notification as ``ignored``, nothing recovered. False when not held."""
    dropped = session.execute(
        sa.delete(NotificationHold)
        .where(
            NotificationHold.notification_uuid == notification_uuid,
            NotificationHold.released_at.is_(None),
        )
        .execution_options(synchronize_session=False)
    )
    if affected_rows(dropped) != 1:
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


def held_of_host(session: orm.Session, host_uuid: str, reason: str) -> list[str]:
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
                NotificationHold.reason == reason,
                NotificationHold.released_at.is_(None),
            )
            .order_by(Notification.id)
        )
    )
